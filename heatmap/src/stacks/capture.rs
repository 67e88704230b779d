//! The stack sampler's live state ([`Stacks`]) and the handler's part, [`Stacks::record`].
//!
//! # The handler's steps (docs/stacks.md section 3)
//!
//! Inside the heatmap handler's one `enter` bracket, after `buckets.hit(pc)`:
//! 1. read `rip`, `rsp`, `rbp` from the `ucontext_t`;
//! 2. `gettid`, then this thread's context from the [`ThreadMap`](super::thread::ThreadMap)
//!    and its tag from the tag table (`tag.rs`); no context yet: the pc alone is stored
//!    (cut "thread not set up yet");
//! 3. the read window: the known stack range holding `rsp`, else `rsp` is left for the
//!    watcher and the pc alone is stored (cut "stack bounds pending");
//! 4. load the published [`ModuleSet`] (Acquire), switch to the thread's unwind stack and let
//!    framehop walk at most `depth` frames ([`unwind`]): every stack read 8-byte aligned and
//!    inside the window, every frame inside published code, else the chain ends there and
//!    the reason is counted;
//! 5. insert the frames and the tag into the [`StackTable`] (a full table counts a drop).
//!
//! # Async-signal safety
//!
//! Beyond the heatmap handler's own, the stack path touches: the `ucontext_t` (read), one
//! `gettid` system call (no errno change: it cannot fail), the thread map and the tag table
//! (atomic loads), the thread's context (its cache, frame buffer and unwind stack: written
//! only by this thread's handler), the module set (read only: a `Vec` of framehop modules
//! over mapped, pinned, prefaulted unwind tables), stack memory inside the window (read),
//! and the table and counters (atomics, plain stores into a claimed slot). framehop with our
//! [`SmallStore`](super::policy::SmallStore) policy allocates nothing and takes no lock
//! (docs/stacks.md section 1.2). No page fault on our side: contexts, the table and unwind
//! tables are written or read in advance. `tests/async_signal_safety.rs` counts allocations
//! and checks errno with stacks on at 10 kHz; `tests/stacks_stress.rs` runs the hostile cases.
//!
//! A panic in framehop or gimli (which return errors on malformed CFI rather than panicking,
//! by design) would abort the process: the handler is `extern "C"`. Our own code indexes with
//! `get` or masks.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use framehop::Unwinder as _;
use framehop::x86_64::UnwindRegsX86_64;

use super::modules::{self, ModuleSet, Pins};
use super::switch::call_on_stack;
use super::table::StackTable;
use super::thread::{self, Cache, ThreadCtx, ThreadMap};
use super::{RawStack, RawStacks, tag};
use crate::sys;

/// Why a chain ended before the root (or why a sample has only its pc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// framehop found the root (`_start`, `clone3`): not a cut.
    Root,
    /// `depth` frames taken: counted as truncated, not as a cut.
    Depth,
    /// The interrupted pc is in no published object (JIT code, or a library loaded since the
    /// watcher's last look).
    LeafNotCode,
    /// A return address is in no published object.
    ReturnNotCode,
    /// framehop needed a stack word outside the window (or misaligned).
    StackRead,
    /// A CFI rule that did not evaluate, or a frame that would not advance.
    Rule,
    /// No context for the thread yet (found by the watcher's next look).
    NoContext,
    /// The thread's stack bounds are not known yet.
    BoundsPending,
}

const CUTS: [(End, &str); 6] = [
    (
        End::LeafNotCode,
        "pc not in mapped code (JIT code, or a library loaded since the watcher's last look)",
    ),
    (End::ReturnNotCode, "return address not in mapped code"),
    (End::StackRead, "stack read outside the thread's stack"),
    (End::Rule, "unwind rule did not evaluate or did not advance"),
    (End::NoContext, "thread not set up yet (its first samples)"),
    (
        End::BoundsPending,
        "stack bounds pending (its first samples)",
    ),
];

fn cut_index(e: End) -> Option<usize> {
    CUTS.iter().position(|&(c, _)| c == e)
}

/// Unwinds from `(pc, sp, bp)` into `out` (leaf first) reading only stack words inside
/// `[lo, hi)`, every frame inside `set`'s code. Returns the frames written and why it ended.
/// Async-signal-safe with `SmallStore` (no allocation, no lock); never reads outside the window.
pub(crate) fn unwind(
    set: &ModuleSet,
    cache: &mut Cache,
    (pc, sp, bp): (u64, u64, u64),
    (lo, hi): (u64, u64),
    out: &mut [u64],
) -> (usize, End) {
    if out.is_empty() {
        return (0, End::Depth);
    }
    out[0] = pc;
    if !set.is_code(pc) {
        return (1, End::LeafNotCode);
    }
    let mut read = |a: u64| -> Result<u64, ()> {
        if a & 7 == 0 && a >= lo && a.checked_add(8).is_some_and(|e| e <= hi) {
            // SAFETY: `[lo, hi)` is (part of) a readable mapping that holds the interrupted
            // thread's stack, mapped while the thread lives (it is the thread being sampled,
            // or a blocked one whose stack the watcher reads); the read is aligned and inside.
            Ok(unsafe { std::ptr::read_volatile(a as *const u64) })
        } else {
            Err(())
        }
    };
    let mut it = set
        .unwinder
        .iter_frames(pc, UnwindRegsX86_64::new(pc, sp, bp), cache, &mut read);
    let mut n = 0;
    loop {
        if n == out.len() {
            return (n, End::Depth);
        }
        match it.next() {
            Ok(Some(f)) => {
                let a = f.address();
                if n > 0 {
                    if !set.is_code(a.wrapping_sub(1)) {
                        return (n, End::ReturnNotCode);
                    }
                    out[n] = a;
                }
                n += 1;
            }
            Ok(None) => return (n.max(1), End::Root),
            Err(framehop::Error::CouldNotReadStack(_)) => return (n.max(1), End::StackRead),
            Err(_) => return (n.max(1), End::Rule),
        }
    }
}

/// The unwind, as run on the thread's unwind stack.
struct Job<'a> {
    set: &'a ModuleSet,
    cache: &'a mut Cache,
    regs: (u64, u64, u64),
    window: (u64, u64),
    out: &'a mut [u64],
    result: (usize, End),
}

extern "C" fn run_job(job: *mut Job<'_>) {
    // SAFETY: `record` passes a pointer to its live `Job`, used by nothing else meanwhile.
    let job = unsafe { &mut *job };
    job.result = unwind(job.set, job.cache, job.regs, job.window, job.out);
}

/// What only the watcher and stop touch.
#[derive(Debug, Default)]
struct Owned {
    /// Every context created, owned here until stop. Boxed: the handler holds their
    /// addresses (through the thread map), which must not move when the vector grows.
    #[allow(clippy::vec_box)]
    contexts: Vec<Box<ThreadCtx>>,
    by_tid: HashMap<i32, usize>,
    /// Contexts of threads gone, waiting for a moment with no handler active.
    limbo: Vec<usize>,
    /// Contexts ready for reuse.
    free: Vec<usize>,
    /// Every module set published (the current one last), kept until stop. Boxed for the
    /// same reason: the handler holds the current one's address.
    #[allow(clippy::vec_box)]
    sets: Vec<Box<ModuleSet>>,
    pins: Pins,
    /// Threads the map had no room for.
    unmapped: u64,
}

/// The stack sampler of one run: see the module docs.
#[derive(Debug)]
pub(crate) struct Stacks {
    depth: usize,
    modules: AtomicPtr<ModuleSet>,
    threads: ThreadMap,
    table: StackTable,
    cuts: [AtomicU64; CUTS.len()],
    truncated: AtomicU64,
    owned: Mutex<Owned>,
}

impl Stacks {
    /// Everything the handler will need, prepared now: modules, table. Allocates.
    pub(crate) fn new(depth: u32, slots: u32) -> Stacks {
        let depth = (depth as usize).clamp(1, super::MAX_DEPTH as usize);
        let s = Stacks {
            depth,
            modules: AtomicPtr::new(std::ptr::null_mut()),
            threads: ThreadMap::new(),
            table: StackTable::new(slots as usize, depth),
            cuts: Default::default(),
            truncated: AtomicU64::new(0),
            owned: Mutex::default(),
        };
        s.refresh_modules();
        s
    }

    fn owned(&self) -> std::sync::MutexGuard<'_, Owned> {
        self.owned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handler's part: see the module docs. `uc` is the handler's third argument.
    #[inline(always)]
    pub(crate) fn record(&self, uc: *mut libc::c_void) {
        let uc = uc as *const libc::ucontext_t;
        // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO handler (the caller
        // checked it is not null).
        let g = unsafe { &(*uc).uc_mcontext.gregs };
        let (pc, sp, bp) = (
            g[libc::REG_RIP as usize] as u64,
            g[libc::REG_RSP as usize] as u64,
            g[libc::REG_RBP as usize] as u64,
        );
        let tid = sys::gettid();
        let tag = tag::current(tid);
        let Some(ctx) = self.threads.find(tid) else {
            self.count(End::NoContext);
            self.table.insert(&[pc], tag);
            return;
        };
        let Some(window) = ctx.window(sp) else {
            // Relaxed: read by the watcher at its next look; any recent value will do.
            ctx.pending_sp.store(sp, Ordering::Relaxed);
            self.count(End::BoundsPending);
            self.table.insert(&[pc], tag);
            return;
        };
        // Acquire: pairs with the Release swap in `refresh_modules` (the set's contents).
        let set = self.modules.load(Ordering::Acquire);
        if set.is_null() {
            self.count(End::LeafNotCode);
            self.table.insert(&[pc], tag);
            return;
        }
        // SAFETY: published sets are freed only at stop, after the drain.
        let set = unsafe { &*set };
        // SAFETY: we are the handler on the thread `ctx` is registered for, once per sample.
        let (cache, frames) = unsafe { ctx.parts() };
        let mut job = Job {
            set,
            cache,
            regs: (pc, sp, bp),
            window,
            out: &mut frames[..self.depth],
            result: (0, End::Root),
        };
        // SAFETY: the context's unwind stack is this thread's alone (see `ThreadCtx`), 32 KiB
        // for a measured 3.4 KiB; `run_job` only touches `job`.
        unsafe { call_on_stack(ctx.stack_top(), run_job, &mut job) };
        let (n, end) = job.result;
        self.count(end);
        self.table.insert(&job.out[..n], tag);
    }

    #[inline(always)]
    fn count(&self, end: End) {
        if end == End::Depth {
            // Relaxed: a tally.
            self.truncated.fetch_add(1, Ordering::Relaxed);
        } else if let Some(c) = cut_index(end).and_then(|i| self.cuts.get(i)) {
            // Relaxed: a tally.
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Builds a module set over the objects loaded now and publishes it (watcher and start
    /// only). The previous one stays allocated until stop: a handler may be walking it.
    pub(crate) fn refresh_modules(&self) {
        let mut o = self.owned();
        let set = Box::new(modules::build(&mut o.pins));
        let p = &*set as *const ModuleSet as *mut ModuleSet;
        o.sets.push(set);
        // Release: publishes the set's contents to the handler's Acquire load.
        self.modules.store(p, Ordering::Release);
    }

    /// The watcher found thread `tid`: gives it a context.
    pub(crate) fn thread_started(&self, tid: i32) {
        let mut o = self.owned();
        if o.by_tid.contains_key(&tid) {
            return;
        }
        let i = match o.free.pop() {
            Some(i) => {
                o.contexts[i].reset();
                i
            }
            None => {
                o.contexts.push(ThreadCtx::new());
                o.contexts.len() - 1
            }
        };
        if self.threads.insert(tid, &*o.contexts[i]) {
            o.by_tid.insert(tid, i);
        } else {
            o.free.push(i);
            o.unmapped += 1;
        }
    }

    /// The watcher found thread `tid` gone.
    pub(crate) fn thread_exited(&self, tid: i32) {
        let mut o = self.owned();
        if let Some(i) = o.by_tid.remove(&tid) {
            self.threads.remove(tid);
            o.limbo.push(i);
        }
    }

    /// The watcher's periodic work: resolves pending stack bounds from `/proc/self/maps`, and
    /// frees contexts in limbo for reuse when `idle` (no handler was active after they were
    /// unmapped: see `thread.rs`).
    pub(crate) fn maintain(&self, idle: impl FnOnce() -> bool) {
        let mut o = self.owned();
        if !o.limbo.is_empty() && idle() {
            let limbo = std::mem::take(&mut o.limbo);
            o.free.extend(limbo);
        }
        let pending: Vec<(usize, u64)> = o
            .by_tid
            .values()
            // Relaxed: a hint; a stale value resolves a range the thread used recently.
            .map(|&i| (i, o.contexts[i].pending_sp.load(Ordering::Relaxed)))
            .filter(|&(_, sp)| sp != 0)
            .collect();
        if pending.is_empty() {
            return;
        }
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        for (i, sp) in pending {
            let ctx = &o.contexts[i];
            if let Some((lo, hi)) = thread::mapping_holding(&maps, sp) {
                // The first range into slot 0, later ones (alternate stack, grown main stack)
                // into slot 1.
                let slot = usize::from(ctx.bounds[0].read().is_some());
                ctx.bounds[slot].write(lo, hi);
            }
            // Relaxed: only clears the hint if the handler did not set a newer one.
            let _ = ctx
                .pending_sp
                .compare_exchange(sp, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Everything recorded so far. Exact after the drain (stop); a snapshot while handlers
    /// run may miss a sample in flight.
    pub(crate) fn read(&self) -> RawStacks {
        let o = self.owned();
        let mut cuts: Vec<(String, u64)> = CUTS
            .iter()
            .zip(&self.cuts)
            // Relaxed: tallies.
            .map(|((_, name), c)| ((*name).to_owned(), c.load(Ordering::Relaxed)))
            .filter(|&(_, c)| c > 0)
            .collect();
        if o.unmapped > 0 {
            cuts.push((
                format!(
                    "{} thread(s) found no slot in the thread map ({} slots)",
                    o.unmapped,
                    thread::MAP_SLOTS
                ),
                0,
            ));
        }
        cuts.sort_by_key(|c| std::cmp::Reverse(c.1));
        RawStacks {
            depth: self.depth as u32,
            stacks: self
                .table
                .read()
                .into_iter()
                .map(|(frames, count, tag)| RawStack { frames, count, tag })
                .collect(),
            // Relaxed: tallies.
            dropped: self.table.dropped.load(Ordering::Relaxed),
            // Relaxed: a tally.
            truncated: self.truncated.load(Ordering::Relaxed),
            cuts,
        }
    }
}

impl Drop for Stacks {
    /// Runs when the last reference is gone: after the drain (the sampler's teardown), so no
    /// handler can reach the module sets or the pinned objects.
    fn drop(&mut self) {
        self.owned().pins.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set() -> &'static ModuleSet {
        static SET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let p = *SET.get_or_init(|| {
            let mut pins = Pins::default();
            let s = Box::leak(Box::new(modules::build(&mut pins)));
            std::mem::forget(pins);
            s as *const ModuleSet as usize
        });
        // SAFETY: leaked above, never freed.
        unsafe { &*(p as *const ModuleSet) }
    }

    #[inline(never)]
    fn code_address() -> u64 {
        code_address as *const () as u64 + 4
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        /// Random registers and stack words: no fault, at most `depth` frames, the first the pc.
        #[test]
        fn garbage_stacks_end_within_depth(
            words in proptest::collection::vec(any::<u64>(), 1..512),
            code_words in proptest::collection::vec(0u64..4096, 0..64),
            sp_slot in 0usize..512,
            bp in any::<u64>(),
            pc_is_code in any::<bool>(),
            pc_random in any::<u64>(),
            depth in 1usize..=128,
        ) {
            // Stack words: random, with some made to look like return addresses into our code.
            let mut stack = words.clone();
            let base = code_address();
            for (i, w) in code_words.iter().enumerate() {
                let j = (i * 7) % stack.len();
                stack[j] = base.wrapping_add(*w);
            }
            let lo = stack.as_ptr() as u64;
            let hi = lo + 8 * stack.len() as u64;
            let sp = lo + 8 * (sp_slot % stack.len()) as u64;
            let pc = if pc_is_code { base } else { pc_random };
            let mut cache = Cache::new_in();
            let mut out = vec![0u64; depth];
            let (n, _end) = unwind(set(), &mut cache, (pc, sp, bp), (lo, hi), &mut out);
            prop_assert!(n >= 1 && n <= depth);
            prop_assert_eq!(out[0], pc);
        }
    }
}
