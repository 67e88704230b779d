//! Read-copy-update for probe lists: readers never block, writers wait for a grace period.
//!
//! # Concept
//! A tracepoint's probe list is an immutable array behind an atomic pointer. Firing a
//! tracepoint reads the pointer inside a *read section*; changing the list publishes a new
//! array and then waits until every read section that might still see the old one has ended
//! (a *grace period*) before the old array, and the probes only it holds, are freed. Readers
//! take no lock and write no shared line: the kernel's RCU idea, in user space.
//!
//! # Mechanism (epochs + `membarrier`)
//! - A global epoch counter. A reader entering its outermost section stores the current epoch
//!   in its thread's shard (`rcu_epoch`) and leaves by storing 0.
//! - A writer bumps the epoch to `E` and waits until every other thread's `rcu_epoch` is 0 or
//!   at least `E`: each section that began before the bump has ended.
//! - Ordering: the reader's store of its epoch must be visible before its load of the probe
//!   pointer. A full fence per read section would cost every probe call tens of cycles
//!   (BENCHMARKS.md, "Figures behind design choices"), so readers use only a compiler
//!   barrier and the writer runs `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes
//!   every running thread of the process execute a full barrier: a reader that loaded the old
//!   pointer has, by then, made its epoch store visible. Where `membarrier` is unavailable
//!   (old kernels, seccomp, and every system other than Linux: macOS and Windows), readers
//!   fall back to a `SeqCst` fence, paired with the writer's own `SeqCst` fence after its
//!   epoch bump: either the reader's epoch store is seen by the writer's scan, or the reader's
//!   later pointer load sees the new array (the store-buffering case `SeqCst` fences forbid).
//!   Windows' `FlushProcessWriteBuffers` would play `membarrier`'s part there; it would need a
//!   Windows bindings dependency for a few cycles per probe call, so it is not used.
//! - A writer inside a read section (a probe that unregisters itself or another probe) does
//!   not wait at all: two such writers on two threads would wait for each other forever.
//!   What it retires is freed by a later grace period taken outside any section.
//! - The read section and the grace period are model-checked under loom, membarrier standing
//!   in as a `SeqCst` fence on each side (`loom_tests` below, `docs/loom.md`).
//!
//! # Extending
//! Anything else that needs readers without locks (a dynamic point table, say) can use
//! [`read`] and [`synchronize`] as they are.

use crate::shard::{self, Lease, Shard};
// The epoch, the grace-period flag and the fences come from `crate::sync`: std's, or loom's in
// the model-checking build (the `loom_tests` below).
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use crate::sync::sync_static;

/// Constants of `include/uapi/linux/membarrier.h`, missing from the libc crate.
#[cfg(target_os = "linux")]
mod sys {
    pub(super) const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
    pub(super) const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    pub(super) const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
}

sync_static! {
    /// The grace-period epoch; starts at 1 so that 0 can mean "not in a read section".
    static EPOCH: AtomicU64 = AtomicU64::new(1);
}
/// Whether `membarrier` private expedited is registered (readers may skip their fence).
/// A std atomic in every build: written once before any writer runs, then only read.
static MEMBARRIER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
sync_static! {
    /// Serialises writers' grace periods. A flag rather than a `Mutex` (it guards no data): a
    /// `fork`ed child can reset it when the thread that held it was not copied (`crate::runtime::fork`).
    static GP_BUSY: AtomicBool = AtomicBool::new(false);
}

/// Holds the grace-period lock until dropped.
struct GpGuard;

impl Drop for GpGuard {
    fn drop(&mut self) {
        // Release: the holder's work happens before the next holder's.
        GP_BUSY.store(false, Ordering::Release);
    }
}

/// Takes the grace-period lock once, or says it is taken.
fn gp_try() -> Option<GpGuard> {
    // Acquire: pairs with the previous holder's release.
    GP_BUSY
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .ok()
        .map(|_| GpGuard)
}

/// Takes the grace-period lock, waiting for the holder (grace periods are rare and short
/// unless a reader is slow, so a polite spin is enough).
fn gp_lock() -> GpGuard {
    let mut spins = 0u32;
    loop {
        if let Some(g) = gp_try() {
            return g;
        }
        back_off(&mut spins);
    }
}

/// One step of a polite wait: spin a little, then yield, then sleep 50 us at a time.
fn back_off(spins: &mut u32) {
    *spins += 1;
    if *spins < 100 {
        crate::sync::spin_loop();
    } else if *spins < 1_000 {
        crate::sync::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

#[cfg(unix)]
thread_local! {
    /// Whether this thread took the grace-period lock for a `fork` (`const`, no destructor:
    /// usable even while the thread's other thread-locals are being torn down).
    static FORK_HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(unix)]
/// Takes the grace-period lock before a `fork`; only tries when `block` is false (the forking
/// thread is inside a read section, which the holder may be waiting for).
pub(crate) fn fork_hold(block: bool) {
    let g = if block { Some(gp_lock()) } else { gp_try() };
    let held = g.is_some();
    // The flag stays set across the fork; `fork_release` clears it.
    std::mem::forget(g);
    let _ = FORK_HELD.try_with(|h| h.set(held));
}

#[cfg(unix)]
/// Releases the grace-period lock after a `fork`. In the child (`child`) it is released even
/// when another thread held it at the fork: that thread was not copied.
pub(crate) fn fork_release(child: bool) {
    let held = FORK_HELD.try_with(|h| h.replace(false)).unwrap_or(false);
    if held || child {
        // Release: see `GpGuard`.
        GP_BUSY.store(false, Ordering::Release);
    }
}

/// Registers this process for `membarrier` (once); returns whether it can be used. Other
/// systems than Linux have no `membarrier`: `false`, and readers fence themselves (see
/// `heavy_barrier`).
#[cfg(not(target_os = "linux"))]
pub(crate) fn init() -> bool {
    false
}

/// Registers this process for `membarrier` (once); returns whether it can be used.
#[cfg(target_os = "linux")]
pub(crate) fn init() -> bool {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DONE.get_or_init(|| {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) integers and touches no memory of ours.
        let mask = unsafe { libc::syscall(libc::SYS_membarrier, sys::MEMBARRIER_CMD_QUERY, 0, 0) };
        let ok = mask > 0
            && (mask & libc::c_long::from(sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED)) != 0
            // SAFETY: as above.
            && unsafe {
                libc::syscall(
                    libc::SYS_membarrier,
                    sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                    0,
                    0,
                )
            } == 0;
        // Release: a reader that sees `true` must also see the registration done.
        MEMBARRIER.store(ok, Ordering::Release);
        ok
    })
}

/// Makes every running thread of the process execute a full memory barrier.
///
/// Under loom (the model-checking build) a `SeqCst` fence stands in for the system call: see
/// `crate::sync::light_fence` for why that pairing is the guarantee membarrier(2) gives.
#[cfg(loom)]
fn heavy_barrier() {
    fence(Ordering::SeqCst);
}

/// Makes every running thread of the process execute a full memory barrier.
#[cfg(not(loom))]
fn heavy_barrier() {
    // Relaxed: written once in `init`, before any writer runs (writers call `init` first).
    #[cfg(target_os = "linux")]
    if MEMBARRIER.load(Ordering::Relaxed) {
        // SAFETY: see `init`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED,
                0,
                0,
            )
        };
        if r == 0 {
            return;
        }
    }
    // Readers fence themselves when membarrier is unavailable; ours orders our own side.
    fence(Ordering::SeqCst);
}

/// A read section on this thread; ends when dropped (also when a probe panics).
pub(crate) struct ReadGuard {
    shard: &'static Shard,
    borrowed: bool,
}

/// Enters a read section (nests).
#[inline]
pub(crate) fn read() -> ReadGuard {
    let (shard, borrowed) = match shard::current() {
        Some(s) => (s, false),
        None => match shard::acquire() {
            Lease::Owned(s) => (s, false),
            Lease::Borrowed(s) => (s, true),
        },
    };
    enter(shard);
    ReadGuard { shard, borrowed }
}

/// Enters a read section on `shard`, the calling thread's (the body of [`read`] once it has the
/// shard; the loom models call it with theirs).
#[inline(always)]
fn enter(shard: &Shard) {
    // Relaxed: `rcu_nest` is owner-only.
    let nest = shard.rcu_nest.load(Ordering::Relaxed);
    shard.rcu_nest.store(nest + 1, Ordering::Relaxed);
    if nest == 0 {
        // Acquire: seeing a new epoch implies seeing the probe array published before it.
        let e = EPOCH.load(Ordering::Acquire);
        // Relaxed store + barrier below: see the module docs (membarrier pairs with it).
        shard.rcu_epoch.store(e, Ordering::Relaxed);
        // Relaxed: see `heavy_barrier`.
        if MEMBARRIER.load(Ordering::Relaxed) {
            crate::sync::light_fence();
        } else {
            fence(Ordering::SeqCst);
        }
    }
}

/// Leaves a read section on `shard`; returns whether it was the outermost (the body of
/// `ReadGuard::drop`).
#[inline(always)]
fn exit(shard: &Shard) -> bool {
    // Relaxed: owner-only.
    let nest = shard.rcu_nest.load(Ordering::Relaxed) - 1;
    shard.rcu_nest.store(nest, Ordering::Relaxed);
    if nest == 0 {
        // Release: every read of the section happens before a writer sees it ended.
        shard.rcu_epoch.store(0, Ordering::Release);
    }
    nest == 0
}

impl ReadGuard {
    /// The shard of the thread in this section (tracepoint hit counters live there).
    pub(crate) fn shard(&self) -> &'static Shard {
        self.shard
    }
}

impl Drop for ReadGuard {
    #[inline]
    fn drop(&mut self) {
        if exit(self.shard) && self.borrowed {
            shard::release(self.shard);
        }
    }
}

/// Whether this thread is inside a read section (a probe calling back into us).
pub(crate) fn in_read_section() -> bool {
    // Relaxed: owner-only.
    shard::current().is_some_and(|s| s.rcu_nest.load(Ordering::Relaxed) > 0)
}

/// The current epoch: something unpublished now is safe once a grace period returns a larger
/// value from [`synchronize`].
pub(crate) fn epoch() -> u64 {
    // SeqCst: ordered after the caller's unpublication (a Release store) and before the bump.
    EPOCH.load(Ordering::SeqCst)
}

/// Waits until every read section (on other threads) that began before this call has ended,
/// and returns the epoch it waited up to: every section that read a smaller epoch is over.
/// Sections on the calling thread are not waited for: a probe may unregister itself.
pub(crate) fn synchronize() -> u64 {
    init();
    if in_read_section() {
        // Called from a probe. Waiting here could deadlock: another thread's probe may be
        // waiting for this section while we wait for its. So no grace period: the caller
        // frees nothing now (its retirees wait for a grace period taken outside a section).
        heavy_barrier();
        return 0;
    }
    let _gp = gp_lock();
    let me = shard::current().map(|s| s as *const Shard);
    grace_period(
        shard::all_shards()
            .into_iter()
            .filter(|&s| Some(s as *const Shard) != me),
    )
}

/// The grace period proper (grace-period lock held): bumps the epoch, then waits until each
/// of `others` is outside any read section or in one that began after the bump; returns the
/// new epoch. The loom models call it with their readers' shards.
fn grace_period<'a>(others: impl IntoIterator<Item = &'a Shard>) -> u64 {
    // SeqCst: orders the caller's earlier publication of a new array before the bump.
    let target = EPOCH.fetch_add(1, Ordering::SeqCst) + 1;
    heavy_barrier();
    for s in others {
        let mut spins = 0u32;
        loop {
            // Acquire: pairs with the reader's release store of 0.
            let e = s.rcu_epoch.load(Ordering::Acquire);
            if e == 0 || e >= target {
                break;
            }
            back_off(&mut spins);
        }
    }
    heavy_barrier();
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn membarrier_constants_match_the_kernel_header() {
        assert_eq!(sys::MEMBARRIER_CMD_QUERY, 0);
        assert_eq!(sys::MEMBARRIER_CMD_PRIVATE_EXPEDITED, 8);
        assert_eq!(sys::MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 16);
    }

    #[test]
    fn sections_nest_and_a_writer_on_the_same_thread_does_not_wait_for_itself() {
        let outer = read();
        let inner = read();
        assert!(in_read_section());
        assert_eq!(synchronize(), 0, "no grace period from inside a section");
        drop(inner);
        assert!(in_read_section());
        drop(outer);
        assert!(!in_read_section());
    }

    #[test]
    fn a_writer_waits_for_a_reader_on_another_thread() {
        use std::sync::atomic::AtomicBool;
        use std::sync::{Arc, Barrier};
        let inside = Arc::new(Barrier::new(2));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (inside, done) = (inside.clone(), done.clone());
            std::thread::spawn(move || {
                let g = read();
                inside.wait();
                std::thread::sleep(std::time::Duration::from_millis(50));
                // SeqCst: the writer must not see `done` before the section ends... it is
                // set while still inside, so a writer that returned early would see false.
                done.store(true, Ordering::SeqCst);
                drop(g);
            })
        };
        inside.wait();
        synchronize();
        assert!(
            done.load(Ordering::SeqCst),
            "synchronize returned before the reader left"
        );
        reader.join().unwrap();
    }
}

/// Model checking of the grace period (`RUSTFLAGS="--cfg loom"`, docs/loom.md).
///
/// Real code: [`enter`] and [`exit`] (the bodies of [`read`] and `ReadGuard::drop`),
/// [`grace_period`] (the body of [`synchronize`]), [`epoch`], the `EPOCH` static and the
/// `Shard` words they use, on loom's atomics. Stand-ins: `membarrier` and the reader's compiler
/// barrier are a `SeqCst` fence each (`crate::sync::light_fence`); the reader's shard is passed
/// in (`read` finds it through a thread-local, which loom cannot see); the probe list is a
/// loom cell behind a loom `AtomicPtr`, unpublished and freed in the order
/// `Tracepoint::update` and `reclaim` use (Release store, `epoch()`, grace period, free if the
/// epoch is below the one returned) but without the `SeqCst` fence `update` runs between the
/// store and `epoch()`: under loom that fence would pair with the stand-in light fence, which
/// a real compiler barrier does not, and hide a missing `membarrier` (left out, the grace
/// period alone must order the reader: the stricter check). One writer, so the grace-period
/// lock (`gp_lock`, a compare-exchange) is not taken.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::shard::Sizes;
    use crate::sync::atomic::AtomicPtr;
    use loom::cell::UnsafeCell;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    /// A probe list: its contents, and what a free writes over them.
    struct List(UnsafeCell<u64>);
    const OLD: u64 = 1;
    const NEW: u64 = 2;
    const FREED: u64 = 0xDEAD;

    /// Two readers' sections (each nested once) on two threads while the writer replaces the list,
    /// waits a grace period and frees the old one: the reader never reads a freed list, and
    /// loom finds no access to the old list's cell that is not ordered before the free (a
    /// "causality violation" is a failure). `membarrier`: whether the readers take the
    /// membarrier path (compiler barrier; `init` found the system call) or the fallback
    /// (`SeqCst` fence, real code in both builds).
    fn grace_period_model(name: &str, membarrier: bool) {
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let seen_in = seen.clone();
        crate::sync::model(name, move || {
            // Relaxed: what `init` stores; set before any thread of the execution runs.
            MEMBARRIER.store(membarrier, Ordering::Relaxed);
            let old = Box::into_raw(Box::new(List(UnsafeCell::new(OLD))));
            let new = Box::into_raw(Box::new(List(UnsafeCell::new(NEW))));
            let list = Arc::new(AtomicPtr::new(old));
            // Two readers, each with its own shard, each in one section (nested once).
            let shards = [1, 2].map(|seed| Arc::new(Shard::new(Sizes::default(), seed)));
            let readers = shards.clone().map(|s| {
                let (l, seen) = (list.clone(), seen_in.clone());
                loom::thread::spawn(move || {
                    enter(&s);
                    enter(&s);
                    // Acquire: as `Tracepoint::__fire` loads its probe list.
                    let p = l.load(Ordering::Acquire);
                    // SAFETY: `p` is `old` or `new`, both live until the writer frees `old`
                    // after a grace period (the property checked) and `new` after the joins.
                    let v = unsafe { &*p }.0.with(|v| unsafe { *v });
                    assert_ne!(v, FREED, "a reader read a freed probe list");
                    seen.lock().unwrap().insert(v);
                    assert!(!exit(&s), "the inner section is not the outermost");
                    assert!(exit(&s), "the outer section is");
                })
            });
            // `Tracepoint::update`: publish (Release), note the epoch of the retiree (its
            // `SeqCst` fence left out: see above).
            list.store(new, Ordering::Release);
            let retired_at = epoch();
            // `reclaim`: a grace period, then free what was retired before its epoch.
            let done = grace_period(shards.iter().map(|s| &**s));
            assert!(
                retired_at < done,
                "the old list is freed by this grace period"
            );
            // SAFETY: unpublished before the grace period; the model checks no reader holds it.
            unsafe { &*old }.0.with_mut(|v| unsafe { *v = FREED });
            for r in readers {
                r.join().unwrap();
            }
            // SAFETY: both came from `Box::into_raw` above; the reader has ended.
            drop(unsafe { (Box::from_raw(old), Box::from_raw(new)) });
        });
        let seen = seen.lock().unwrap();
        assert_eq!(*seen, BTreeSet::from([OLD, NEW]), "schedules explored");
    }

    /// Both reader paths, one after the other (`MEMBARRIER` is process-wide: two tests
    /// setting it at once would mix them).
    #[test]
    fn loom_grace_period_no_reader_keeps_the_old_list() {
        grace_period_model("grace period (membarrier)", true);
        grace_period_model("grace period (fallback fence)", false);
    }
}
