//! The windows' part of the thread watch: at each list of the threads (every 20 ms, taken by the
//! heatmap's watcher when it runs, else by `threads.rs`'s own thread: one scan either way), new
//! threads get their group (routed to the thread, armed for a first long period) and the
//! groups of threads that have ended are closed.

use super::super::config::PmuConfig;
use super::group::open_event;
use super::handler::{Shared, signal};
use crate::sys;
use crate::threads;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The threads sampled: each thread id with its group's descriptors (leader first).
pub(crate) type Threads = Arc<Mutex<Vec<(libc::pid_t, Vec<libc::c_int>)>>>;

/// Opens groups for threads of `live` (sorted) not seen yet and forgets threads that are gone.
pub(super) fn scan(
    config: &PmuConfig,
    shared: *mut Shared,
    threads: &Mutex<Vec<(libc::pid_t, Vec<libc::c_int>)>>,
    live: &[libc::pid_t],
) {
    // SAFETY: the sampler keeps `shared` alive while it is followed (stop unfollows first).
    let s = unsafe { &*shared };
    let mut t = threads.lock().unwrap_or_else(|e| e.into_inner());
    t.retain(|(tid, fds)| {
        if live.binary_search(tid).is_ok() {
            return true;
        }
        for &fd in fds.iter().rev() {
            sys::disable_and_close(fd);
        }
        if let Some(&leader) = fds.first() {
            release_slot(s, leader);
        }
        false
    });
    for &tid in live {
        if t.iter().any(|(x, _)| *x == tid) {
            continue;
        }
        if let Some(fds) = open_group(config, s, tid) {
            t.push((tid, fds));
        }
    }
}

pub(super) fn release_slot(s: &Shared, fd: libc::c_int) {
    if let Some(slot) = s.slots.iter().find(|x| x.fd.load(Ordering::Relaxed) == fd) {
        // Relaxed: the event was closed, so no handler for it runs any more.
        slot.fd.store(-1, Ordering::Relaxed);
    }
}

/// Notes why a thread could not be given its group (not for a thread that has just exited).
pub(super) fn open_failed(s: &Shared, tid: libc::pid_t, e: &io::Error) {
    if threads::exited(tid, e) {
        return;
    }
    let mut first = s.open_error.lock().unwrap_or_else(|p| p.into_inner());
    first.get_or_insert_with(|| {
        format!("threads could not be given their counters and were not sampled (first: {e})")
    });
}

pub(super) fn open_group(
    config: &PmuConfig,
    s: &Shared,
    tid: libc::pid_t,
) -> Option<Vec<libc::c_int>> {
    let leader = match open_event(tid, config.clock, config.long_period, -1) {
        Ok(fd) => fd,
        Err(e) => {
            open_failed(s, tid, &e);
            return None;
        }
    };
    let mut fds = vec![leader];
    for &ev in &config.events {
        match open_event(tid, ev, 0, leader) {
            Ok(fd) => fds.push(fd),
            Err(e) => {
                open_failed(s, tid, &e);
                for &fd in fds.iter().rev() {
                    sys::disable_and_close(fd);
                }
                return None;
            }
        }
    }
    // A free slot, by hashing the descriptor as the handler does.
    let n = s.slots.len();
    let h = (leader as usize).wrapping_mul(0x9E37_79B9) % n;
    let slot = (0..n).map(|i| &s.slots[(h + i) % n]).find(|x| {
        x.fd.compare_exchange(-1, leader, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    });
    let Some(slot) = slot else {
        for &fd in fds.iter().rev() {
            sys::disable_and_close(fd);
        }
        // Relaxed: a flag read at stop.
        s.slots_ran_out.store(true, Ordering::Relaxed);
        return None;
    };
    // A reused slot must not carry its previous thread's phase or counts: reset it before
    // the event is armed (no signal for `leader` can arrive before that).
    // Relaxed: published to the handler by the arming ioctl below.
    slot.phase.store(0, Ordering::Relaxed);
    slot.start_pc.store(0, Ordering::Relaxed);
    for (b, e) in slot.base.iter().zip(&slot.last_end) {
        b.store(0, Ordering::Relaxed);
        e.store(0, Ordering::Relaxed);
    }
    // Route the overflow to the thread, then arm for the first long period.
    if sys::route_signal(leader, tid, signal()).is_err() {
        for &fd in fds.iter().rev() {
            sys::disable_and_close(fd);
        }
        release_slot(s, leader);
        return None;
    }
    // SAFETY: REFRESH enables the group for one overflow; an integer argument.
    unsafe { libc::ioctl(leader, sys::PERF_EVENT_IOC_REFRESH as _, 1) };
    // Relaxed: a tally read after the watcher is joined.
    s.threads_seen.fetch_add(1, Ordering::Relaxed);
    Some(fds)
}

/// Follows the thread scans (`threads::follow`): [`scan`] at each; returns the follower's id
/// for stop to unfollow.
pub(super) fn follow(config: PmuConfig, shared: *mut Shared, threads: Threads) -> io::Result<u64> {
    let shared_addr = shared as usize;
    threads::follow(Box::new(move |live| {
        scan(&config, shared_addr as *mut Shared, &threads, live)
    }))
}
