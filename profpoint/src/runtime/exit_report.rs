//! The at-exit report: written once per process, by whichever comes first of the program's
//! exit (`atexit`), a signal's thread (`super::signals`) and [`crate::write_exit_report`].
//!
//! # Mechanism
//! - [`write_exit_report`] claims the report (`DONE`): exactly one caller writes it, and a
//!   caller that finds it being written by another thread waits until it is written.
//! - glibc runs the main thread's thread-local destructors before `atexit` handlers, so the
//!   main thread's shard is already back on the free list when the report is read: its counts
//!   are still there (shards keep their counts). Other threads may still be running; the
//!   report is a snapshot of that moment.
//! - A destination that cannot be written gets one line on stderr (which, and why), and the
//!   points table goes to stderr instead: a report is never dropped silently. The program's
//!   exit status is not changed.
//! - The last report of a periodic series ends the series (`super::periodic::end`).

use super::deliver::Destination;
use super::deliver::{SIGNAL_PATH, destination_for, planned, reason, write_to};
use crate::report::{ReportOptions, collect};
use std::sync::atomic::Ordering;

/// Whether the at-exit report was written, or is being written, and by which process:
/// 0 before; otherwise the process id shifted left by one, with bit 0 set once it is written.
/// A forked child sees its parent's id and writes its own report.
static DONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Claims the at-exit report for this process: true for the one caller that writes it. A
/// caller that finds it being written by another thread of this process waits until it is
/// written (the program's exit must not end the process halfway through the report of a
/// signal, nor a signal's thread through the report of the exit), then gets false.
fn claim_report() -> bool {
    let me = u64::from(std::process::id()) << 1;
    loop {
        // Acquire/AcqRel: the claim orders the writer's work before the "written" bit.
        let cur = DONE.load(Ordering::Acquire);
        if cur & !1 != me {
            // Nobody, or the process this one was forked from.
            if DONE
                .compare_exchange(cur, me, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return true;
            }
            continue;
        }
        if cur & 1 == 1 {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Writes the at-exit report now, once per process (see [`crate::write_exit_report`]).
pub(crate) fn write_exit_report() {
    if !claim_report() {
        return;
    }
    // A panic must not leave the report claimed and unwritten: waiters would wait forever.
    let _ = std::panic::catch_unwind(write_claimed);
    // Release: `claim_report`'s waiters read the bit with Acquire.
    DONE.fetch_or(1, Ordering::Release);
}

fn write_claimed() {
    // Globs that could only name points of the run (spans) and still name none.
    super::unmatched::warn_deferred();
    let Some((dests, subtract)) = planned() else {
        return;
    };
    // The last report of a series (PROFPOINT_REPORT_EVERY): no periodic one lands after it.
    let series = super::periodic::end();
    let mut report = collect(&ReportOptions {
        subtract_overhead: subtract,
        final_report: true,
    });
    let seq = match &series {
        Some(s) => {
            let interval = s.last(&report);
            let seq = interval.seq;
            report.interval = Some(interval);
            seq
        }
        None => 1,
    };
    // The program's own output comes first: flush what it left in stdout's buffer (not on a
    // signal's report: see SIGNAL_PATH).
    if !SIGNAL_PATH.load(Ordering::Relaxed) {
        use std::io::Write;
        let _ = std::io::stdout().flush();
    }
    let copy = super::copies::path_suffix();
    if let Some(name) = &copy
        && dests.contains(&Destination::Stderr)
    {
        // Two tables on stderr: say whose this one is.
        crate::diag::warn_line!(
            "profpoint: the report of the profpoint copy in {name} (another copy in this \
             process reports separately; its files get the suffix .{name})"
        );
    }
    let mut table_on_stderr = false;
    let mut failed = false;
    for d in &dests {
        let d = &destination_for(d, seq);
        match write_to(&report, d) {
            Ok(()) => table_on_stderr |= *d == Destination::Stderr,
            // Nothing is left to tell.
            Err(_) if *d == Destination::Stderr => {}
            Err(e) => {
                // A report that cannot be written goes somewhere else: stderr, once.
                crate::diag::warn_line!(
                    "profpoint: could not write the report to {}: {}; {}",
                    crate::env::shown(&d.to_string(), 96),
                    reason(&e),
                    if table_on_stderr {
                        "the points table is on stderr"
                    } else {
                        "the points table goes to stderr instead"
                    }
                );
                failed = true;
            }
        }
    }
    if failed && !table_on_stderr && !dests.contains(&Destination::Stderr) {
        let _ = write_to(&report, &Destination::Stderr);
    }
}
