//! Periodic reports (`PROFPOINT_REPORT_EVERY`): a service that never exits writes
//! its report every interval, each with the interval's calls and times beside the totals.
//!
//! # Mechanism
//! - Started with the at-exit report (the initialiser when `PROFPOINT_REPORT` asks,
//!   [`crate::report_at_exit`] otherwise): one thread, `profpoint-report`, never waited for
//!   (see ARCHITECTURE.md on initialisers under the loader lock), sleeps one interval, then
//!   writes every destination of the exit report: files replaced whole (temporary file and
//!   rename, as at exit), `{seq}` in a path replaced by the report's number in the series
//!   (`{pid}` as at exit), stderr and stdout get the table each time.
//! - Each report's [`Interval`] is the difference from the previous one (the whole previous
//!   report is kept for it). The exit report (or a signal's) is the last of the series: it
//!   takes the series' lock, so no periodic write lands after it or interleaves with it, and it
//!   carries the interval since the last periodic one.
//! - A destination that cannot be written gets one line the first time (the series goes on
//!   and tries again every interval), and one when it can be written again.
//! - A forked child has no `profpoint-report` thread: its exit report is not one of a series.

use super::deliver::Destination;
use crate::report::{Interval, Report, ReportOptions, collect};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The series so far.
pub(crate) struct Series {
    /// The previous report, for the next interval.
    prev: Option<Report>,
    /// The previous report's number (0: none yet).
    seq: u64,
    /// The exit report was written: no more periodic ones.
    ended: bool,
    /// Destinations whose last write failed (said once until they work again).
    failing: Vec<Destination>,
}

static SERIES: Mutex<Series> = Mutex::new(Series {
    prev: None,
    seq: 0,
    ended: false,
    failing: Vec::new(),
});

/// The interval (`PROFPOINT_REPORT_EVERY`), when set.
static EVERY: Mutex<Option<Duration>> = Mutex::new(None);

/// The process that runs the series (0: none).
static RUNNING_IN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn series() -> MutexGuard<'static, Series> {
    // A panic while writing leaves the series as consistent as any update of its fields.
    SERIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets the interval (the initialiser, from `PROFPOINT_REPORT_EVERY`).
pub(crate) fn set_every(every: Duration) {
    *EVERY.lock().unwrap_or_else(|e| e.into_inner()) = Some(every);
}

/// Starts the series if an interval was set (once per process; called when the report is
/// armed).
pub(crate) fn start() {
    let Some(every) = *EVERY.lock().unwrap_or_else(|e| e.into_inner()) else {
        return;
    };
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Blocking every asynchronous signal: a signal for the program goes to its own threads.
        let spawned = crate::threads::spawn_quiet(
            // 8 MiB (reserved, touched as used), as a main thread: its reports symbolise the
            // heatmap when it runs (DWARF, inlined frames).
            std::thread::Builder::new()
                .name("profpoint-report".into())
                .stack_size(8 << 20),
            move || {
                loop {
                    std::thread::sleep(every);
                    if !write_next() {
                        return;
                    }
                }
            },
        );
        match spawned {
            // Relaxed: read by the exit report of this process, after.
            Ok(_) => RUNNING_IN.store(std::process::id(), std::sync::atomic::Ordering::Relaxed),
            Err(e) => crate::diag::warn_line!(
                "profpoint: PROFPOINT_REPORT_EVERY: could not start the report thread ({e}); \
                 the report is written at exit only"
            ),
        }
    });
}

/// Writes the next report of the series; false once the exit report ended it.
fn write_next() -> bool {
    let mut s = series();
    if s.ended {
        return false;
    }
    let Some((dests, subtract)) = super::deliver::planned() else {
        return true;
    };
    let mut report = collect(&ReportOptions {
        subtract_overhead: subtract,
        final_report: false,
    });
    let seq = s.seq + 1;
    report.interval = Some(Interval::between(s.prev.as_ref(), &report, seq));
    for d in &dests {
        let d = super::deliver::destination_for(d, seq);
        let result = super::deliver::write_to(&report, &d);
        let was_failing = s.failing.contains(&d);
        match (result, was_failing) {
            (Ok(()), true) => {
                s.failing.retain(|f| *f != d);
                crate::diag::warn_line!(
                    "profpoint: the periodic report is written to {} again (report {seq})",
                    crate::env::shown(&d.to_string(), 96)
                );
            }
            (Err(e), false) if d != Destination::Stderr => {
                // Its figures are not lost: every report holds the whole run so far, so the
                // next one written, or the one at exit (which goes to stderr if its own
                // destination fails), has them.
                crate::diag::warn_line!(
                    "profpoint: could not write periodic report {seq} to {}: {}; trying again every interval",
                    crate::env::shown(&d.to_string(), 96),
                    super::deliver::reason(&e)
                );
                s.failing.push(d);
            }
            _ => {}
        }
    }
    s.seq = seq;
    s.prev = Some(report);
    true
}

/// For the exit report (or a signal's): ends the series and returns its lock, to be held
/// while the exit report is written; `None` when no series runs in this process.
pub(crate) fn end() -> Option<MutexGuard<'static, Series>> {
    // Relaxed: see `start`.
    if RUNNING_IN.load(std::sync::atomic::Ordering::Relaxed) != std::process::id() {
        // No series, or a forked child's copy of one whose thread is not here (its lock may
        // be held by that thread forever).
        return None;
    }
    let mut s = series();
    s.ended = true;
    Some(s)
}

impl Series {
    /// The last report's number and interval: `report` (the exit report) after the previous.
    pub(crate) fn last(&self, report: &Report) -> Interval {
        Interval::between(self.prev.as_ref(), report, self.seq + 1)
    }
}
