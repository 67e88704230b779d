//! Tracepoints: call sites that cost a branch until a probe is attached.
//!
//! # Concept
//! The kernel's tracepoints, after Steven Rostedt's out-of-line RFC: a
//! site `trace_sched_switch(prev, next)` is an inlined test of the tracepoint's key; everything
//! else (the probe list, the loop, the argument passing) lives in a `#[cold] #[inline(never)]`
//! hook, so the hot function carries only the test. Probes are closures registered and
//! removed at run time while the site keeps firing.
//!
//! ```
//! pub struct Task { pub id: u32 }
//! profpoint::tracepoint!(pub fn sched_switch(prev: &Task, next: &Task));
//!
//! let seen = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
//! let s = seen.clone();
//! let handle = register_trace_sched_switch(move |_prev, next| {
//!     s.fetch_add(next.id, std::sync::atomic::Ordering::Relaxed);
//! })
//! .expect("the system lets profpoint switch the site on");
//! trace_sched_switch(&Task { id: 1 }, &Task { id: 2 });
//! drop(handle); // unregisters
//! trace_sched_switch(&Task { id: 1 }, &Task { id: 3 });
//! assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 2);
//! ```
//!
//! # Mechanism
//! - [`crate::tracepoint!`] emits a [`Tracepoint`] static in the linker-gathered `TRACEPOINTS`
//!   slice, the inline site function, the cold hook, `..._enabled()` and `register_...`.
//! - The key ([`key`]): the site tests it; it is on while the tracepoint has probes or its
//!   built-in counting probe is on.
//! - Probe lists are immutable arrays swapped by writers under one lock and read under RCU
//!   (`rcu.rs`): firing never blocks; after `unregister` returns no new call of the removed
//!   probe starts (a grace period passed, and a per-probe `removed` flag covers the writer's
//!   own thread); after [`synchronize_unregister`] none is running; a probe's closure is
//!   dropped only after a grace period (or at a later one, if retired from inside a probe).
//! - Hits are counted per thread in the shards (no atomic read-modify-write on the path).
//!
//! # Extending
//! New per-tracepoint statistics go in `Tracepoint` (shared state) or `Shard::tp_hits`
//! (per-thread counters); `info()` reports them.

mod handle;
pub mod key;
mod panics;
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "tracepoint-atomic")
))]
pub(crate) mod patch;
pub(crate) mod rcu;

use crate::glob;
pub use handle::ProbeHandle;
#[doc(hidden)]
pub use panics::probe_panicked;
use panics::{filter_probe_panics, panics_of};
pub use profpoint_report::TracepointInfo;
use std::any::Any;
// The tracepoint's words and the writers' lock come from `crate::sync`: std's, or loom's in the
// model-checking build (the `loom_tests` below).
use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use crate::sync::{MutexGuard, const_fn_unless_loom, sync_static};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// The linker-gathered section of every tracepoint: what `tracepoint!`'s expansion places its
/// static in (hence public); read the tracepoints with [`all`].
#[cfg(not(feature = "off"))]
#[doc(hidden)]
#[linkme::distributed_slice]
pub static TRACEPOINTS: [Tracepoint];

/// The `off` feature: no tracepoint exists and no linker section is declared (see `POINTS`).
#[cfg(feature = "off")]
#[doc(hidden)]
pub static TRACEPOINTS: [Tracepoint; 0] = [];

/// A shard counts hits of every tracepoint compiled into the program (see `shard::Sizes`).
#[cfg(not(feature = "off"))]
#[linkme::distributed_slice(crate::shard::SIZES)]
static SHARD_HITS: fn(&mut crate::shard::Sizes) = |s| s.hits = TRACEPOINTS.len();

/// A probe: the registered closure, type-erased (the generated hook downcasts it back to the
/// tracepoint's `dyn Fn(args)`).
struct Probe {
    id: u64,
    /// Set by `unregister` before its grace period: the writer's own thread (a probe removing
    /// itself or another probe) skips it from then on.
    removed: AtomicBool,
    /// `TypeId` of `*func`, taken once at registration: the hook compares it with a constant
    /// instead of asking the `dyn Any` (a virtual call per probe per firing).
    type_id: std::any::TypeId,
    func: Box<dyn Any + Send + Sync>,
}

/// A registered probe as the generated hook sees it.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ProbeRef<'a> {
    type_id: std::any::TypeId,
    func: &'a (dyn Any + Send + Sync),
}

impl std::fmt::Debug for ProbeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeRef")
            .field("type_id", &self.type_id)
            .finish()
    }
}

impl<'a> ProbeRef<'a> {
    /// The probe's closure, if it is a `T` (the tracepoint's boxed `dyn Fn`).
    #[doc(hidden)]
    #[inline(always)]
    pub fn downcast<T: Any>(self) -> Option<&'a T> {
        if self.type_id == std::any::TypeId::of::<T>() {
            // SAFETY: `type_id` is the `TypeId` of the value behind `func` (taken from it at
            // registration, and `func` is never replaced), so that value is a `T`; casting
            // the fat pointer to a thin `*const T` keeps its data address.
            Some(unsafe { &*(self.func as *const (dyn Any + Send + Sync) as *const T) })
        } else {
            None
        }
    }
}

/// An immutable probe list; the tracepoint points at the current one.
type ProbeArray = Box<[Arc<Probe>]>;

/// A tracepoint. Declared with [`crate::tracepoint!`]; listed by [`crate::tracepoints`].
#[derive(Debug)]
pub struct Tracepoint {
    name: &'static str,
    file: &'static str,
    line: u32,
    key: key::Key,
    /// Current probe list (`Box<ProbeArray>` leaked into a pointer), or null.
    probes: AtomicPtr<ProbeArray>,
    /// Number of probes in the current list.
    nprobes: AtomicU32,
    /// The built-in counting probe is on.
    counting: AtomicBool,
    /// Dense index in `TRACEPOINTS`, `u32::MAX` until first use.
    index: AtomicU32,
    /// The last refused switch of the key, on or off (static keys can be refused by the
    /// system), in words; cleared by a successful switch.
    error: Mutex<Option<String>>,
}

sync_static! {
    /// Writers (register, unregister, counting) of every tracepoint take this lock.
    static WRITERS: crate::sync::Mutex<Retired> = crate::sync::Mutex::new(Retired(Vec::new()));
}
/// Probe ids (a std atomic in every build: ids need only be distinct).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Unpublished probe arrays and the epoch at which each was unpublished, waiting for a grace
/// period past that epoch.
struct Retired(Vec<(usize, u64)>);

#[cfg(unix)]
thread_local! {
    /// The writers' lock, held by the forking thread across a `fork` (see `crate::runtime::fork`).
    static FORK_HELD: std::cell::RefCell<Option<MutexGuard<'static, Retired>>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(unix)]
/// Takes the grace-period and the writers' locks, in that order, before a `fork`. The
/// grace-period lock first: its holder waits for read sections, in which probes may take the
/// writers' lock, so a thread holding the writers' lock must never wait for it. Inside a read
/// section (`in_read`) the grace-period lock is only tried: its holder may be waiting for us.
/// The writers' holders never wait for anything, so that lock is always waited for.
pub(crate) fn fork_hold(in_read: bool) {
    rcu::fork_hold(!in_read);
    let g = writers();
    // A thread past its thread-local destructors cannot stash the guard: it then forks without
    // the lock (the child could inherit it held; rare enough to accept).
    if let Err(g) = stash(g) {
        drop(g);
    }
}

#[cfg(unix)]
/// Keeps the writers' guard in this thread's slot, or gives it back if the slot is gone.
fn stash(g: MutexGuard<'static, Retired>) -> Result<(), MutexGuard<'static, Retired>> {
    let mut g = Some(g);
    match FORK_HELD.try_with(|h| *h.borrow_mut() = g.take()) {
        Ok(()) => Ok(()),
        Err(_) => Err(g.take().expect("not moved when the slot is gone")),
    }
}

#[cfg(unix)]
/// Releases what [`fork_hold`] took, in reverse order (`child`: in the forked child).
pub(crate) fn fork_release(child: bool) {
    let held = FORK_HELD.try_with(|h| h.borrow_mut().take()).ok().flatten();
    drop(held);
    rcu::fork_release(child);
}

#[cfg(unix)]
/// Whether the calling thread is inside a tracepoint read section (a probe is running).
pub(crate) fn in_read_section() -> bool {
    rcu::in_read_section()
}

fn writers() -> MutexGuard<'static, Retired> {
    // The retired list is only pushed to or drained: a poisoned lock holds a valid list.
    WRITERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a probe could not be registered: the tracepoint's key had to be switched on and the
/// system refused (static keys need to patch code: a W^X policy or a seccomp filter can forbid
/// it). The probe was not registered and the program goes on; the tracepoint's report row
/// carries the same reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterError {
    /// The tracepoint's name.
    pub tracepoint: &'static str,
    /// What was refused and why, with the likely cause and the fix.
    pub reason: String,
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "probe not registered: tracepoint {} {}",
            self.tracepoint, self.reason
        )
    }
}

impl std::error::Error for RegisterError {}

impl Tracepoint {
    const_fn_unless_loom! {
        #[doc(hidden)]
        pub fn new(name: &'static str, file: &'static str, line: u32) -> Tracepoint {
            Tracepoint {
                name,
                file,
                line,
                key: key::Key::new(),
                probes: AtomicPtr::new(std::ptr::null_mut()),
                nprobes: AtomicU32::new(0),
                counting: AtomicBool::new(false),
                index: AtomicU32::new(u32::MAX),
                error: Mutex::new(None),
            }
        }
    }

    /// The tracepoint's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the site calls its hook right now.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.key.is_enabled()
    }

    #[inline]
    fn index(&self) -> usize {
        // Relaxed: a pure function of the address; racing initialisers store the same value.
        let i = self.index.load(Ordering::Relaxed);
        if i != u32::MAX {
            return i as usize;
        }
        self.index_slow()
    }

    #[cold]
    #[inline(never)]
    fn index_slow(&self) -> usize {
        let base = TRACEPOINTS.as_ptr() as usize;
        let i = (self as *const Tracepoint as usize - base) / std::mem::size_of::<Tracepoint>();
        assert!(
            std::ptr::eq(&TRACEPOINTS[i], self),
            "tracepoint {} is not in the linker-gathered slice",
            self.name
        );
        self.index.store(i as u32, Ordering::Relaxed);
        i
    }

    /// The sites of this tracepoint in the code, as (site address, enabled-block address), for
    /// tests and tools that inspect the patched code (static-key builds; empty otherwise).
    #[doc(hidden)]
    pub fn __sites(&'static self) -> Vec<(usize, usize)> {
        #[cfg(all(
            target_arch = "x86_64",
            target_os = "linux",
            not(feature = "tracepoint-atomic")
        ))]
        return patch::sites_of(self as *const Tracepoint as usize);
        #[cfg(not(all(
            target_arch = "x86_64",
            target_os = "linux",
            not(feature = "tracepoint-atomic")
        )))]
        Vec::new()
    }

    /// Runs the probes (the generated hook's body): `call` gets each live probe's closure.
    #[doc(hidden)]
    #[inline]
    pub fn __fire(&self, mut call: impl FnMut(ProbeRef<'_>)) {
        let index = self.index();
        let guard = rcu::read();
        if let Some(hits) = guard.shard().tp_hits.get(index) {
            crate::slot::bump(hits, 1);
        }
        // Acquire: pairs with the Release publication in `swap_probes`.
        let p = self.probes.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from `Box::into_raw` in `swap_probes`, and the array
        // is freed only after a grace period that waits for this read section to end.
        if let Some(probes) = unsafe { p.as_ref() } {
            for probe in probes.iter() {
                // Relaxed: see `Probe::removed`; program order covers the same-thread case,
                // the grace period the others.
                if !probe.removed.load(Ordering::Relaxed) {
                    // A probe's panic must not unwind into the traced program (and cannot
                    // cross the static-key trampoline): it is reported and the others run.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        call(ProbeRef {
                            type_id: probe.type_id,
                            func: &*probe.func,
                        })
                    }));
                    if r.is_err() {
                        probe_panicked(self.name);
                    }
                }
            }
        }
        drop(guard);
    }

    /// Registers a probe (already boxed as the tracepoint's `dyn Fn`). Used by the generated
    /// `register_trace_*` functions, which fix the type. Fails when the tracepoint's key had
    /// to be switched on and the system refused (static keys under W^X or seccomp): the probe
    /// is then not registered, since it would never be called.
    #[doc(hidden)]
    pub fn __register(
        &'static self,
        func: Box<dyn Any + Send + Sync>,
    ) -> Result<ProbeHandle, RegisterError> {
        filter_probe_panics();
        let probe = Arc::new(Probe {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            removed: AtomicBool::new(false),
            type_id: (*func).type_id(),
            func,
        });
        let id = probe.id;
        // Adding needs no grace period: nothing becomes unreachable but the old array, which
        // waits on the retired list for the next one.
        let r = self.update(false, |old| {
            old.iter().cloned().chain([probe.clone()]).collect()
        });
        match r {
            Ok(()) => Ok(ProbeHandle {
                tracepoint: Some(self),
                id: Some(id),
            }),
            Err(reason) => {
                // Never published: the probe (and what its closure owns) drops here, outside
                // the writers' lock.
                drop(probe);
                Err(RegisterError {
                    tracepoint: self.name,
                    reason,
                })
            }
        }
    }

    fn unregister(&'static self, id: u64) {
        let mut found = false;
        // Removing a probe never fails: if its key cannot be switched off, the site still calls
        // the hook, which no longer finds it (the error is printed and reported).
        let _ = self.update(true, |old| {
            old.iter()
                .filter(|p| {
                    if p.id == id {
                        // Relaxed: read in the same thread's later hook runs (program order)
                        // or by others after the grace period `update` waits for.
                        p.removed.store(true, Ordering::Relaxed);
                        found = true;
                        false
                    } else {
                        true
                    }
                })
                .cloned()
                .collect()
        });
        debug_assert!(found, "probe {id} was registered");
    }

    /// Turns the built-in counting probe on or off. A key the system refuses to switch is one
    /// line on stderr and the tracepoint's `error` in reports (see [`TracepointInfo::error`]).
    pub fn set_counting(&'static self, on: bool) {
        let _w = writers();
        // Relaxed: under the writers' lock; the key below is what sites read.
        self.counting.store(on, Ordering::Relaxed);
        let want = self.wanted();
        if self.switch_key(want).is_err() && want {
            // The counting probe cannot run: it is not on.
            self.counting.store(false, Ordering::Relaxed);
        }
    }

    /// Whether the key should be on: probes or counting (writers' lock held).
    fn wanted(&self) -> bool {
        // Relaxed: both are only written under the writers' lock, which the caller holds.
        self.nprobes.load(Ordering::Relaxed) > 0 || self.counting.load(Ordering::Relaxed)
    }

    /// Switches the key to `on` (writers' lock held). A failure is one line on stderr per
    /// distinct failure, saying which way the switch failed, and is kept for reports: the
    /// program keeps running. A success clears the kept error.
    fn switch_key(&'static self, on: bool) -> Result<(), String> {
        let mut err = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if self.key.is_enabled() == on && err.is_none() {
            return Ok(());
        }
        let r = self.key.set(self as *const Tracepoint as usize, on);
        match r {
            Ok(()) => {
                *err = None;
                Ok(())
            }
            Err(e) => {
                let what = if on {
                    format!("cannot be enabled (its probes would never run): {e}")
                } else {
                    format!(
                        "cannot be switched off (its site keeps calling the hook, which calls \
                         no removed probe): {e}"
                    )
                };
                if err.as_deref() != Some(what.as_str()) {
                    crate::diag::warn_line!("profpoint: tracepoint {} {what}", self.name);
                }
                *err = Some(what.clone());
                Err(what)
            }
        }
    }

    /// Publishes `f(current list)` as the new list, waits a grace period, frees the old one.
    /// When the new list needs the key on and the system refuses to switch it, nothing is
    /// published and the reason is returned. A refusal to switch the key off is returned too,
    /// after the (shorter) list was published.
    ///
    /// The writers' lock is not held during the grace period: a probe running on another
    /// thread may itself register or unregister, and must not wait for us while we wait for it.
    fn update(
        &'static self,
        wait: bool,
        f: impl FnOnce(&[Arc<Probe>]) -> Vec<Arc<Probe>>,
    ) -> Result<(), String> {
        let mut result = Ok(());
        {
            let mut w = writers();
            let old = self.probes.load(Ordering::Acquire);
            // SAFETY: writers hold the lock, so `old` is the live array; nobody frees it now.
            let current: &[Arc<Probe>] = unsafe { old.as_ref() }.map_or(&[], |b| &b[..]);
            let next = f(current);
            let n = next.len() as u32;
            // Relaxed: under the writers' lock.
            let counting = self.counting.load(Ordering::Relaxed);
            if n > 0 || counting {
                // Switched on before the list is published: a refusal publishes nothing.
                if let Err(e) = self.switch_key(true) {
                    drop(w);
                    // Dropped outside the lock: a closure may own handles whose drop
                    // unregisters.
                    drop(next);
                    return Err(e);
                }
            }
            let new = if next.is_empty() {
                std::ptr::null_mut()
            } else {
                Box::into_raw(Box::new(next.into_boxed_slice()))
            };
            // Release: readers that see the pointer see the array's contents.
            self.probes.store(new, Ordering::Release);
            // Relaxed: under the writers' lock.
            self.nprobes.store(n, Ordering::Relaxed);
            if n == 0 && !counting {
                result = self.switch_key(false);
            }
            if !old.is_null() {
                // SeqCst fence: the unpublication above (a Release store) must be ordered
                // before the epoch read, or a concurrent grace period could end before a
                // reader sees the new pointer (store-load order needs a full fence).
                std::sync::atomic::fence(Ordering::SeqCst);
                w.0.push((old as usize, rcu::epoch()));
            }
        }
        if wait {
            reclaim();
        }
        result
    }

    /// What the report says of this tracepoint.
    pub fn info(&'static self) -> TracepointInfo {
        let index = self.index();
        let hits = crate::shard::all_shards()
            .iter()
            // Relaxed: a counter read for a report; it is exact once the threads are quiet.
            .map(|s| {
                s.tp_hits
                    .get(index)
                    .map_or(0, |h| h.load(Ordering::Relaxed))
            })
            .sum();
        let mut info = TracepointInfo::default();
        info.name = self.name.to_string();
        info.enabled = self.is_enabled();
        // Relaxed: a snapshot for a report.
        info.probes = self.nprobes.load(Ordering::Relaxed);
        info.counting = self.counting.load(Ordering::Relaxed);
        info.hits = hits;
        info.error = self.error.lock().unwrap_or_else(|e| e.into_inner()).clone();
        info.probe_panics = panics_of(self.name);
        info.file = self.file.to_string();
        info.line = self.line;
        info
    }
}

/// Waits until no probe call that started before this call is still running (the kernel's
/// `tracepoint_synchronize_unregister`), and frees what earlier unregistrations retired.
/// Call it outside probes.
pub fn synchronize_unregister() {
    reclaim();
}

/// Runs a grace period, then frees the arrays it made safe. A writer inside a read section of
/// its own (a probe unregistering) frees nothing: its thread may still be walking one of
/// them; a later grace period taken outside probes frees them.
fn reclaim() {
    let done = rcu::synchronize();
    if rcu::in_read_section() {
        return;
    }
    let free: Vec<usize> = {
        let mut w = writers();
        let (safe, keep): (Vec<_>, Vec<_>) = w.0.drain(..).partition(|&(_, e)| e < done);
        w.0 = keep;
        safe.into_iter().map(|(p, _)| p).collect()
    };
    // Dropped outside the lock: a probe's closure may own handles whose drop unregisters.
    for p in free {
        // SAFETY: `p` came from `Box::into_raw` and was unpublished while the epoch was
        // below `done`; the grace period up to `done` waited for every read section that
        // could have loaded it, and no section of this thread is open.
        drop(unsafe { Box::from_raw(p as *mut ProbeArray) });
    }
}

/// Every tracepoint compiled into the program.
pub fn all() -> &'static [Tracepoint] {
    &TRACEPOINTS
}

/// Turns the counting probe on for every tracepoint matching `glob`; returns how many.
pub fn count_matching(glob_pattern: &str, on: bool) -> usize {
    all()
        .iter()
        .filter(|t| glob::matches(glob_pattern, t.name))
        .map(|t| t.set_counting(on))
        .count()
}

/// Report rows of every tracepoint, by name.
pub(crate) fn infos() -> Vec<TracepointInfo> {
    let mut v: Vec<TracepointInfo> = all().iter().map(|t| t.info()).collect();
    v.sort_by(|a, b| b.hits.cmp(&a.hits).then(a.name.cmp(&b.name)));
    v
}

/// Model checking of the key toggling (`RUSTFLAGS="--cfg loom"`, docs/loom.md; the file says
/// what is real and what stands in).
#[cfg(all(
    test,
    loom,
    not(all(
        target_arch = "x86_64",
        target_os = "linux",
        not(feature = "tracepoint-atomic")
    ))
))]
mod loom_tests;
