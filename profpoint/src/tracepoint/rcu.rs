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
//!   pointer. A full fence per read section costs ~30 cycles, so readers use only a compiler
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
//!
//! # Extending
//! Anything else that needs readers without locks (a dynamic point table, say) can use
//! [`read`] and [`synchronize`] as they are.

use crate::shard::{self, Lease, Shard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, compiler_fence, fence};

/// Constants of `include/uapi/linux/membarrier.h`, missing from the libc crate.
#[cfg(target_os = "linux")]
mod sys {
    pub(super) const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
    pub(super) const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    pub(super) const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
}

/// The grace-period epoch; starts at 1 so that 0 can mean "not in a read section".
static EPOCH: AtomicU64 = AtomicU64::new(1);
/// Whether `membarrier` private expedited is registered (readers may skip their fence).
static MEMBARRIER: AtomicBool = AtomicBool::new(false);
/// Serialises writers' grace periods. A flag rather than a `Mutex` (it guards no data): a
/// `fork`ed child can reset it when the thread that held it was not copied (`crate::fork`).
static GP_BUSY: AtomicBool = AtomicBool::new(false);

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
        std::hint::spin_loop();
    } else if *spins < 1_000 {
        std::thread::yield_now();
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
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }
    ReadGuard { shard, borrowed }
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
        // Relaxed: owner-only.
        let nest = self.shard.rcu_nest.load(Ordering::Relaxed) - 1;
        self.shard.rcu_nest.store(nest, Ordering::Relaxed);
        if nest == 0 {
            // Release: every read of the section happens before a writer sees it ended.
            self.shard.rcu_epoch.store(0, Ordering::Release);
            if self.borrowed {
                shard::release(self.shard);
            }
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
    // SeqCst: orders the caller's earlier publication of a new array before the bump.
    let target = EPOCH.fetch_add(1, Ordering::SeqCst) + 1;
    heavy_barrier();
    for s in shard::all_shards() {
        if Some(s as *const Shard) == me {
            continue;
        }
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
