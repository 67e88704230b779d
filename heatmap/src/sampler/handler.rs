//! The heatmap's consumer of the signal core (`signal.rs`): its `SIGPROF` handler, one relaxed
//! increment per sample, and the call stack when the run captures stacks.
//!
//! Whatever the source (a per-thread perf `task-clock` event routed to its own thread,
//! `setitimer(ITIMER_PROF)`, or the watcher's `tgkill`), a sample is a `SIGPROF` delivered to
//! the thread that was running. [`handler`] enters through the core (errno, the active count,
//! the drain), reads the interrupted pc and hands it to [`TableSet::hit`], which bounds-checks
//! it against each chunk's segments and increments one preallocated atomic counter.
//!
//! # Async-signal safety
//!
//! Beyond what the core's entry touches, the handler touches exactly the `ucontext_t` the
//! kernel passed (read only) and the published [`TableSet`]: its chunk list and each chunk's
//! slot array (read only), and one `AtomicU64` counter (a bucket or "other");
//! `partition_point` is an inlined binary search. With stacks on, the same bracket (one
//! `enter`, one active count) then runs [`Stacks::record`](crate::stacks::Stacks), whose module
//! docs (`stacks/capture.rs`) list what it touches. `tests/async_signal_safety.rs` checks both.

use crate::buckets::TableSet;
use crate::error::StartError;
use crate::signal::{self, InstallError, Installed, Published};

/// The signal every source delivers.
pub(crate) const SIGNAL: libc::c_int = libc::SIGPROF;

/// The table the handler counts into; unpublished when no sampler runs.
pub(crate) static TABLE: Published<TableSet> = Published::new();

/// The `SIGPROF` handler. See the module docs for what it touches.
extern "C" fn handler(_sig: libc::c_int, _info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    #[cfg(all(feature = "handler-timing", target_arch = "x86_64"))]
    // SAFETY: rdtsc reads the time-stamp counter; no memory, no side effect.
    let t0 = unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(all(feature = "handler-timing", target_arch = "x86_64"))]
    let mut with_stacks = false;
    TABLE.enter(|table| {
        #[cfg(all(feature = "handler-timing", target_arch = "x86_64"))]
        {
            with_stacks = table.stacks.is_some();
        }
        if !uc.is_null() {
            // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO handler.
            table.hit(unsafe { signal::interrupted_pc(uc) });
            if let Some(stacks) = &table.stacks {
                stacks.record(uc);
            }
        }
    });
    #[cfg(all(feature = "handler-timing", target_arch = "x86_64"))]
    {
        // SAFETY: as above.
        let dt = unsafe { core::arch::x86_64::_rdtsc() }.wrapping_sub(t0);
        let slot = &timing::TOTALS[usize::from(with_stacks)];
        // Relaxed: tallies read after the run.
        slot[0].fetch_add(dt, std::sync::atomic::Ordering::Relaxed);
        // Relaxed: as above.
        slot[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The handler's own time (feature `handler-timing`, for the `stacks_targets` bench).
#[cfg(all(feature = "handler-timing", target_arch = "x86_64"))]
pub mod timing {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// [flat, with stacks] x [TSC ticks, samples].
    pub(crate) static TOTALS: [[AtomicU64; 2]; 2] = [const { [const { AtomicU64::new(0) }; 2] }; 2];

    /// (ticks, samples) of the handler without stacks, then with stacks, since the last call;
    /// resets them.
    pub fn take() -> [(u64, u64); 2] {
        // Relaxed: tallies.
        TOTALS.each_ref().map(|t| {
            (
                t[0].swap(0, Ordering::Relaxed),
                t[1].swap(0, Ordering::Relaxed),
            )
        })
    }
}

/// Installs [`handler`] for [`SIGNAL`], or fails if another handler owns it.
pub(crate) fn install() -> Result<Installed, StartError> {
    signal::install(SIGNAL, handler).map_err(|e| match e {
        InstallError::Sigaction(e) => StartError::Sigaction(e),
        InstallError::InUse(handler) => StartError::SignalInUse { handler },
    })
}

/// Blocks [`SIGNAL`] in the calling thread (the watcher never samples itself or sees EINTR).
pub(super) fn block_here() {
    // SAFETY: an all-zero sigset_t is initialised by sigemptyset before use; pthread_sigmask
    // only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIGNAL);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
