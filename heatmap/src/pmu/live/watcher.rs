//! The watcher: every 20 ms it gives new threads their group (routed to the thread, armed for
//! a first long period) and closes the groups of threads that have ended.

use super::super::config::PmuConfig;
use super::group::open_event;
use super::handler::{Shared, signal};
use crate::sys;
use crate::threads;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The threads sampled: each thread id with its group's descriptors (leader first).
pub(crate) type Threads = Arc<Mutex<Vec<(libc::pid_t, Vec<libc::c_int>)>>>;

/// Opens groups for threads not seen yet and forgets threads that are gone.
pub(super) fn scan(
    config: &PmuConfig,
    shared: *mut Shared,
    threads: &Mutex<Vec<(libc::pid_t, Vec<libc::c_int>)>>,
) {
    // SAFETY: the sampler keeps `shared` alive while the watcher runs (it joins it first).
    let s = unsafe { &*shared };
    let Ok(live) = threads::alive(0) else {
        return;
    };
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
    for &tid in &live {
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

/// Starts the watcher thread: a scan every 20 ms until `stop` is set.
pub(super) fn spawn(
    config: PmuConfig,
    shared: *mut Shared,
    threads: Threads,
    stop: Arc<AtomicBool>,
) -> io::Result<std::thread::JoinHandle<()>> {
    let shared_addr = shared as usize;
    std::thread::Builder::new()
        .name("pmu-watcher".into())
        .spawn(move || {
            // Relaxed: a stop flag.
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
                scan(&config, shared_addr as *mut Shared, &threads);
            }
        })
}
