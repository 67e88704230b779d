//! The live half of [`super`] (Linux only): [`start`], the running [`PmuSampler`] and its
//! stop. Its parts: `group.rs` (perf groups), `handler.rs` (the overflow handler and its
//! per-thread state machine), `watcher.rs` (threads found and given their groups, at the
//! scans `crate::threads` runs or the heatmap's watcher hosts); the
//! calibration run is in `../calibration.rs`. What the report needs (windows, their
//! arithmetic) is in the other files of `pmu/`, on every system; elsewhere `unsupported.rs`
//! has stubs that say the mode is not available.

mod calibrate;
mod group;
mod handler;
mod watcher;

pub use group::{Counters, available};
pub(super) use handler::{RECORDS, Shared, load};
pub(super) use watcher::Threads;

use super::config::{MIN_LONG_PERIOD, MIN_SOFTWARE_WINDOW, PmuConfig};
use super::error::PmuError;
use super::events::{Event, MAX_MEMBERS};
use super::{Calibration, PmuProfile};
use crate::signal::Installed;
use crate::sys;
use calibrate::{MIN_CALIBRATION_WINDOWS, spawn_calibrator};
use group::{available_for, max_sample_rate};
use handler::{RUNNING, SHARED, SLOTS};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A running hardware-metrics sampler. [`PmuSampler::stop`] ends it and gives the profile.
#[derive(Debug)]
pub struct PmuSampler {
    config: PmuConfig,
    threads: Threads,
    /// Tells the calibration to stop early.
    stopping: Arc<AtomicBool>,
    /// This sampler as a follower of the thread scans (`crate::threads`).
    follower: Option<u64>,
    /// Our handler and the disposition it replaced.
    installed: Installed,
    shared: *mut Shared,
    rate_at_start: Option<u64>,
    calibration: Calibration,
    /// The calibration, running on a thread of its own so that `start` returns at once.
    calibrator: Option<std::thread::JoinHandle<Calibration>>,
    started: std::time::Instant,
    /// The process that started sampling: a `fork`ed child has copies of the descriptors,
    /// which still name the parent's counters, and no watcher thread.
    pid: u32,
}

// SAFETY: `shared` is a heap allocation owned by the sampler and only read through atomics by
// handlers; the sampler may move between threads.
unsafe impl Send for PmuSampler {}

/// Starts sampling every thread of the process.
pub fn start(config: PmuConfig) -> Result<PmuSampler, PmuError> {
    check(&config)?;
    available_for(config.clock)?;
    for &e in &config.events {
        if !e.is_software() {
            available_for(e)?;
        }
    }
    if RUNNING.swap(true, Ordering::SeqCst) {
        return Err(PmuError::AlreadyRunning);
    }
    let shared = Box::into_raw(Box::new(Shared::new(&config)));
    // Install the handler (refusing a foreign one).
    let installed = handler::install(shared)?;
    SHARED.publish(shared);
    let threads: Threads = Arc::default();
    let stopping = Arc::new(AtomicBool::new(false));
    let mut sampler = PmuSampler {
        config: config.clone(),
        threads: threads.clone(),
        stopping: stopping.clone(),
        follower: None,
        installed,
        shared,
        rate_at_start: max_sample_rate(),
        pid: std::process::id(),
        calibration: Calibration::default(),
        calibrator: None,
        started: std::time::Instant::now(),
    };
    if let Ok(live) = crate::threads::alive(0) {
        watcher::scan(&config, shared, &threads, &live);
    }
    sampler.follower =
        Some(watcher::follow(config.clone(), shared, threads).map_err(PmuError::Io)?);
    // The calibration runs its loop for ~100 ms on a thread of its own, once the watcher has
    // given that thread its group: the caller (often the program's start-up) does not wait.
    sampler.calibrator = Some(
        spawn_calibrator(sampler.threads.clone(), shared, sampler.stopping.clone())
            .map_err(PmuError::Io)?,
    );
    Ok(sampler)
}

/// Refuses a configuration the live half cannot run: periods out of range, a leader other
/// than the two clocks, a software window below the kernel's floor, too many members.
fn check(config: &PmuConfig) -> Result<(), PmuError> {
    let unit = config.clock.unit();
    if config.long_period < MIN_LONG_PERIOD
        || config.window == 0
        || config.window >= config.long_period
    {
        return Err(PmuError::Config(format!(
            "long period {} and window {}: expected a long period of at least {MIN_LONG_PERIOD} {unit} and a shorter, non-zero window",
            config.long_period, config.window
        )));
    }
    if !matches!(config.clock, Event::Cycles | Event::TaskClock) {
        return Err(PmuError::Config(format!(
            "clock {:?}: expected Cycles (hardware) or TaskClock (software)",
            config.clock
        )));
    }
    // The shortest window the jitter can ask for.
    let shortest = config.window as f64 * (1.0 - config.jitter.clamp(0.0, 0.5));
    if config.clock == Event::TaskClock && shortest < MIN_SOFTWARE_WINDOW as f64 {
        return Err(PmuError::Config(format!(
            "window {} ns with jitter {}: the software clock cannot fire sooner than {MIN_SOFTWARE_WINDOW} ns, and the jitter asks for windows down to {shortest:.0} ns",
            config.window, config.jitter
        )));
    }
    if config.events.contains(&config.clock) {
        return Err(PmuError::Config(format!(
            "{:?} is the leader: it cannot also be a member",
            config.clock
        )));
    }
    if config.events.len() > MAX_MEMBERS {
        return Err(PmuError::Config(format!(
            "{} events: at most {MAX_MEMBERS} beside the leader",
            config.events.len()
        )));
    }
    available_for(config.clock)?;
    Ok(())
}

impl PmuSampler {
    /// Waits for the calibration (~100 ms of CPU on a thread of its own, started by
    /// [`start`]) and returns it: a caller that times its own work in steady state calls this
    /// first.
    pub fn calibrated(&mut self) -> Calibration {
        if let Some(c) = self.calibrator.take()
            && let Ok(c) = c.join()
        {
            self.calibration = c;
        }
        self.calibration
    }

    /// Windows recorded so far (the calibration's included): lets a caller count the windows
    /// of a stretch of its own work.
    pub fn recorded(&self) -> usize {
        // SAFETY: `shared` stays allocated while the sampler exists (freed only by stop).
        let s = unsafe { &*self.shared };
        // Relaxed: a tally.
        s.next.load(Ordering::Relaxed).min(RECORDS)
    }

    /// Stops sampling every thread, restores the signal's disposition, returns the windows.
    pub fn stop(mut self) -> PmuProfile {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> PmuProfile {
        // In a forked child (an at-exit report there stops the copy it inherited): the watcher
        // thread was not copied (joining it would wait forever), its lock may have been held at
        // the fork, and the descriptors name the parent's counters, which a disable would stop
        // for the parent too. The child only closes its copies.
        let forked = std::process::id() != self.pid;
        self.join_threads(forked);
        let threads = self.take_threads(forked);
        let nthreads = threads.len();
        // Order matters: stop the counters, unpublish and drain the handlers, discard pending
        // signals, and only then close the descriptors. Closing first would let a queued
        // signal's handler `read`/`ioctl` a descriptor number the program has reused.
        let (multiplexed, never_counted) = if forked {
            (0, 0)
        } else {
            disable_groups(&threads)
        };
        // In a forked child no handler of ours runs (the counters signal the parent's
        // threads): the core does not wait there.
        SHARED.unpublish_and_drain(forked);
        // SIG_IGN discards pending instances (and any raised by a counter that a draining
        // handler re-armed after our disable).
        self.installed.ignore();
        // Closed while the signal is ignored: after `close` the kernel sends nothing more.
        for (_, fds) in &threads {
            for &fd in fds.iter().rev() {
                if forked {
                    // SAFETY: the child's own copy of the descriptor, closed once.
                    unsafe { libc::close(fd) };
                } else {
                    sys::disable_and_close(fd);
                }
            }
        }
        // The previous disposition returns (whatever is installed now: we set SIG_IGN).
        self.installed.put_back();
        // SAFETY: unpublished and drained: no handler can touch it any more.
        let s = unsafe { Box::from_raw(self.shared) };
        self.shared = std::ptr::null_mut();
        RUNNING.store(false, Ordering::SeqCst);
        let n = s.next.load(Ordering::Relaxed).min(RECORDS);
        let windows = (0..n).map(|i| load(&s, i)).collect();
        let warnings = self.warnings(&s, nthreads, multiplexed, never_counted);
        PmuProfile {
            config: self.config.clone(),
            windows,
            calibration: self.calibration,
            threads: s.threads_seen.load(Ordering::Relaxed),
            wall_seconds: self.started.elapsed().as_secs_f64(),
            warnings,
        }
    }

    /// Stops the calibration and joins it, then leaves the thread scans (in a forked child,
    /// where the calibration thread was not copied, forgets it instead).
    fn join_threads(&mut self, forked: bool) {
        // Relaxed: a stop flag (the calibration polls it).
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(c) = self.calibrator.take() {
            if forked {
                // Not copied into the child: joining it would wait forever.
                std::mem::forget(c);
            } else if let Ok(c) = c.join() {
                self.calibration = c;
            }
        }
        if let Some(id) = self.follower.take() {
            // Once it returns, no scan of ours runs or will run.
            crate::threads::unfollow(id, forked);
        }
    }

    /// The threads sampled and their groups, taken out of the shared list.
    fn take_threads(&self, forked: bool) -> Vec<(libc::pid_t, Vec<libc::c_int>)> {
        if forked {
            self.threads
                .try_lock()
                .map(|mut t| std::mem::take(&mut *t))
                .unwrap_or_default()
        } else {
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()))
        }
    }

    /// What the report should say about the run: groups never scheduled or multiplexed, a
    /// lowered sample rate, threads left unsampled, a short calibration, dropped windows.
    fn warnings(
        &self,
        s: &Shared,
        nthreads: usize,
        multiplexed: usize,
        never_counted: usize,
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        if never_counted > 0 {
            warnings.push(format!(
                "{never_counted} of {nthreads} threads' groups were never scheduled (time running 0): the PMU cannot count these {} events at once; choose fewer events",
                self.config.events.len() + 1
            ));
        }
        if multiplexed > 0 {
            warnings.push(format!(
                "{multiplexed} of {nthreads} threads' counters were multiplexed (time running < time enabled): another user of the PMU shares the counters; ratios stay valid, totals do not"
            ));
        }
        let rate_at_stop = max_sample_rate();
        if let (Some(a), Some(b)) = (self.rate_at_start, rate_at_stop)
            && b < a
        {
            warnings.push(format!(
                "the kernel lowered perf_event_max_sample_rate from {a} to {b} during the run (slow sampling interrupts): other samplers, the heatmap included, are throttled"
            ));
        }
        if let Some(e) = s
            .open_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            warnings.push(e);
        }
        // Relaxed: the watcher that sets it was joined.
        if s.slots_ran_out.load(Ordering::Relaxed) {
            warnings.push(format!(
                "more than {SLOTS} threads ran at once: the ones beyond were not sampled"
            ));
        }
        let dropped = s.dropped.load(Ordering::Relaxed);
        if (self.calibration.windows as usize) < MIN_CALIBRATION_WINDOWS {
            warnings.push(format!(
                "the calibration measured {} windows (it needs {MIN_CALIBRATION_WINDOWS}, ~100 ms after start): nothing subtracted, so each window's share of the signal path's own cost stays in the figures",
                self.calibration.windows
            ));
        }
        if dropped > 0 {
            warnings.push(format!("{dropped} windows did not fit the record buffer"));
        }
        warnings
    }
}

/// Disables every group and counts those multiplexed (time running < time enabled) and never
/// scheduled (running 0): `(multiplexed, never_counted)`.
fn disable_groups(threads: &[(libc::pid_t, Vec<libc::c_int>)]) -> (usize, usize) {
    let mut multiplexed = 0;
    let mut never_counted = 0;
    for (_, fds) in threads {
        if let Some(&leader) = fds.first() {
            // SAFETY: disabling a group we own; no argument.
            unsafe { libc::ioctl(leader, sys::PERF_EVENT_IOC_DISABLE as _, 0) };
            let mut buf = [0u64; 3 + MAX_MEMBERS + 1];
            // SAFETY: reading the group of a descriptor we own.
            let n =
                unsafe { libc::read(leader, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
            if n >= 24 && buf[2] < buf[1] {
                multiplexed += 1;
            }
            if n >= 24 && buf[1] > 0 && buf[2] == 0 {
                never_counted += 1;
            }
        }
    }
    (multiplexed, never_counted)
}

impl Drop for PmuSampler {
    fn drop(&mut self) {
        if !self.shared.is_null() {
            let _ = self.stop_inner();
        }
    }
}
