//! What the watcher thread shares with the running sampler: tallies, the table sets, a
//! replaced handler; and the `setitimer` source's timer, which both may release.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::lock;
use crate::buckets::TableSet;

/// Counters the watcher shares with the sampler.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// `/proc` samples of blocked threads (wall mode).
    pub(super) proc_samples: AtomicU64,
    /// Threads that got a perf event.
    pub(super) threads: AtomicU64,
    /// Threads whose event could not be opened (other than because they had just exited).
    pub(super) failed_threads: AtomicU64,
    /// The first error listing `/proc/self/task` (no /proc: no thread gets an event).
    pub(super) scan_error: Mutex<Option<String>>,
    /// Every table set published, the current one last. Kept until stop: a handler may still
    /// be reading an older one.
    pub(super) sets: Mutex<Vec<Arc<TableSet>>>,
    /// Wall-mode ticks done.
    pub(super) ticks: AtomicU64,
    /// CPU time, in ns, that threads ran while they carried our sampling (their perf
    /// event's count, or the tgkill source's CPU-clock progress since first seen): of threads
    /// gone, plus of live ones as of the watcher's last look. The process's CPU beyond it ran
    /// on threads nothing sampled (see `Profile::unarmed_cpu_ns`).
    pub(super) covered_ns: AtomicU64,
    /// Of `covered_ns`, the part of threads whose events are closed (final).
    pub(super) covered_closed_ns: AtomicU64,
    /// The watcher's own user CPU time, in ns, written when it exits.
    pub(super) watcher_user_ns: AtomicU64,
    /// The watcher's own system CPU time, in ns, written when it exits.
    pub(super) watcher_sys_ns: AtomicU64,
    /// Our `SIGPROF` handler was found replaced (the first time only).
    pub(super) replaced: Mutex<Option<Replaced>>,
    /// The `setitimer` source's timer was dealt with (disarmed, or found re-armed by the
    /// program and left alone): never touch `ITIMER_PROF` again.
    pub(super) timer_released: AtomicBool,
}

/// The program replaced our `SIGPROF` disposition while we sampled.
#[derive(Debug, Clone, Copy)]
pub(super) struct Replaced {
    /// Time from start to the moment it was noticed (sampling stopped then).
    pub(super) after: Duration,
    /// The disposition found instead of ours.
    pub(super) by: libc::sighandler_t,
}

impl Shared {
    /// Records a replacement found `after` start (keeps the first one).
    pub(super) fn note_replaced(&self, after: Duration, by: libc::sighandler_t) {
        lock(&self.replaced).get_or_insert(Replaced { after, by });
    }

    /// Disarms `ITIMER_PROF` if it still has the interval we armed (`ours`); a timer the
    /// program re-armed with other values is the program's and stays. Only the first call acts.
    pub(super) fn release_timer(&self, ours: Option<Interval>) {
        let Some(ours) = ours else { return };
        // Relaxed: only a once-flag; the timer itself is kernel state.
        if self.timer_released.swap(true, Ordering::Relaxed) {
            return;
        }
        // SAFETY: an all-zero itimerval is a valid out-parameter.
        let mut now: libc::itimerval = unsafe { std::mem::zeroed() };
        // SAFETY: `now` is a live itimerval for getitimer to fill.
        unsafe { libc::getitimer(libc::ITIMER_PROF, &mut now) };
        if interval(&now) == ours {
            // SAFETY: an all-zero itimerval disarms the timer.
            unsafe {
                let zero: libc::itimerval = std::mem::zeroed();
                libc::setitimer(libc::ITIMER_PROF, &zero, std::ptr::null_mut());
            }
        }
    }
}

/// An `itimerval`'s interval: (seconds, microseconds).
pub(super) type Interval = (libc::time_t, libc::suseconds_t);

/// An `itimerval`'s interval.
fn interval(it: &libc::itimerval) -> Interval {
    (it.it_interval.tv_sec, it.it_interval.tv_usec)
}

/// Arms `ITIMER_PROF` at `hz` (the `setitimer` source); returns its interval as the kernel
/// reports it, to know the timer as ours at stop.
pub(super) fn arm_itimer(hz: u32) -> std::io::Result<Interval> {
    let usec = (1_000_000 / i64::from(hz)).max(1);
    let tv = libc::timeval {
        tv_sec: (usec / 1_000_000) as libc::time_t,
        tv_usec: (usec % 1_000_000) as libc::suseconds_t,
    };
    let it = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: `it` is a valid itimerval; the old value is not wanted (null).
    if unsafe { libc::setitimer(libc::ITIMER_PROF, &it, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: an all-zero itimerval is a valid out-parameter.
    let mut armed: libc::itimerval = unsafe { std::mem::zeroed() };
    // SAFETY: `armed` is a live itimerval for getitimer to fill.
    unsafe { libc::getitimer(libc::ITIMER_PROF, &mut armed) };
    Ok(interval(&armed))
}
