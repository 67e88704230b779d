//! Call stacks in the sampler: the capture, and the report types it fills.
//!
//! The report types ([`StackReport`] and its parts) are the contract between the sampler and
//! its consumers (profpoint's renderers: folded stacks, flame graphs, pprof with stacks), so
//! they are plain data, defined by the report model (`profpoint_report::heatmap`) and
//! re-exported here. `docs/stacks.md` is the design; the capture is turned on with
//! [`Config::stacks`](crate::Config::stacks).
//!
//! | file | concept |
//! | --- | --- |
//! | `capture.rs` | `Stacks`: the live state, the handler's `record`, the unwind loop and its cut reasons |
//! | `modules.rs` | loaded objects as framehop modules over their mapped unwind tables; pinning against `dlclose` |
//! | `policy.rs` | the allocation-free gimli storage given to framehop |
//! | `switch.rs` | running the unwind on the thread's own unwind stack (`asm!`) |
//! | `thread.rs` | per-thread contexts, the tid map the handler looks them up in, stack bounds |
//! | `table.rs` | the fixed-size lock-free table of stacks |
//! | `tag.rs` | [`set_thread_tag`]: the per-thread tag the handler stores with each stack |
//! | `report/fold.rs` | after the run: addresses to frames (inline frames expanded), the [`StackReport`] |
//!
//! Available on x86_64 Linux. Elsewhere the capture is compiled out: a sampler asked for
//! stacks runs without them and its profile says "stacks are not available on this platform".

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod capture;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod modules;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod policy;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod switch;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod table;
#[cfg(target_os = "linux")]
mod tag;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod thread;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) use capture::Stacks;

/// Whether this build can capture stacks (x86_64 Linux).
pub const AVAILABLE: bool = cfg!(all(target_os = "linux", target_arch = "x86_64"));
/// Default maximum frames per stack.
pub const DEFAULT_DEPTH: u32 = 64;
/// Largest accepted depth.
pub const MAX_DEPTH: u32 = 128;
/// Default number of slots of the stack table (distinct stacks it can hold).
pub const DEFAULT_SLOTS: u32 = 8192;
/// Accepted table sizes (rounded up to a power of two).
pub const MIN_SLOTS: u32 = 64;
/// Largest accepted table size.
pub const MAX_SLOTS: u32 = 1 << 20;

/// The line a profile carries when stacks were asked for on a platform without them.
#[cfg(all(target_os = "linux", not(target_arch = "x86_64")))]
pub(crate) const UNAVAILABLE: &str = "stacks are not available on this platform (x86_64 Linux \
     only): the profile has flat samples only";

/// The stack sampler on platforms without one: a type with no value, so the handler's
/// `Option<Stacks>` is always `None`.
#[cfg(all(target_os = "linux", not(target_arch = "x86_64")))]
#[derive(Debug)]
pub(crate) enum Stacks {}

#[cfg(all(target_os = "linux", not(target_arch = "x86_64")))]
impl Stacks {
    pub(crate) fn record(&self, _uc: *mut libc::c_void) {
        match *self {}
    }
    pub(crate) fn refresh_modules(&self) {
        match *self {}
    }
    pub(crate) fn thread_started(&self, _tid: i32) {
        match *self {}
    }
    pub(crate) fn thread_exited(&self, _tid: i32) {
        match *self {}
    }
    pub(crate) fn maintain(&self, _idle: impl FnOnce() -> bool) {
        match *self {}
    }
    pub(crate) fn read(&self) -> RawStacks {
        match *self {}
    }
}

/// The stack sampler for a run asking for `depth` frames and `slots` table slots, or the
/// line saying why there is none.
#[cfg(target_os = "linux")]
pub(crate) fn create(depth: u32, slots: u32) -> Result<Stacks, String> {
    #[cfg(target_arch = "x86_64")]
    {
        Ok(Stacks::new(depth, slots))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (depth, slots);
        Err(UNAVAILABLE.to_owned())
    }
}

/// Sets (or with `None` clears) the calling thread's tag: the handler reads `word` (Relaxed)
/// at each sample of this thread and stores its value with the stack
/// ([`SampledStack::tag`]; 0 means none). Call it from the thread itself, before or during a
/// run; it lasts until cleared or replaced. Allocation-free and lock-free; safe to call from
/// any thread at any time. profpoint sets it to the word holding the thread's active profile
/// point, so that code LLVM inlined into its caller can still be attributed to the annotated
/// function after the run (docs/stacks.md section 11). Does nothing where stacks are not
/// available. A thread that exits without clearing its tag leaves it to the next thread the
/// kernel gives the same tid, until that one sets its own (see `tag.rs`).
pub fn set_thread_tag(word: Option<&'static std::sync::atomic::AtomicU32>) {
    #[cfg(target_os = "linux")]
    {
        tag::set(crate::sys::gettid(), word);
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = word;
    }
}

/// The stacks of a run as captured, before symbolisation (a [`Profile`](crate::Profile)'s part).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawStacks {
    pub(crate) depth: u32,
    pub(crate) stacks: Vec<RawStack>,
    pub(crate) dropped: u64,
    pub(crate) truncated: u64,
    /// (reason, samples), most frequent first.
    pub(crate) cuts: Vec<(String, u64)>,
}

/// One distinct stack as captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawStack {
    /// Leaf first: the pc, then return addresses.
    pub(crate) frames: Vec<u64>,
    pub(crate) count: u64,
    pub(crate) tag: u32,
}

pub use profpoint_report::heatmap::{Frame, SampledStack, StackCut, StackReport};
