//! Per-function hardware metrics by alternating sample periods, in process, without root.
//!
//! # Concept
//! The alternating-period patch (`perf-alternating-sample-period.txt`, a perf patch never
//! merged into the kernel; ARCHITECTURE.md, "Where the design came from"): sample on
//! cycles, alternating a *long* period (which only picks a moment, cheaply) and a *short
//! window* (whose counter deltas are the measurement), and credit a window's deltas to a
//! function only when the window began and ended in that function. A long period alone
//! smears every function's metrics towards the average; short periods alone cost many times
//! the data and get throttled (BENCHMARKS.md, "Figures behind design choices"). Alternating gives per-function CPI, branch and cache misses at a
//! small multiple of plain sampling's cost.
//!
//! # Mechanism
//! - Per thread (a watcher finds threads as the heatmap's does), a `perf_event_open` group:
//!   cycles as the sampling leader, plus counting members (instructions, branch-misses,
//!   cache-references, cache-misses by default), user space only. The leader's overflow is
//!   routed as a signal to its own thread (`F_SETOWN_EX`/`F_SETSIG`) and re-armed with
//!   `PERF_EVENT_IOC_REFRESH(1)`, which freezes the group at each overflow: the counts read in
//!   the handler are exact at that moment.
//! - The handler's state machine per thread: at the end of a long period it records the pc
//!   (the window's start) and reads the group; it sets the period to the window
//!   (`PERF_EVENT_IOC_PERIOD` takes a *pointer*) and re-arms. At the end of the window it reads
//!   the group again and appends (start pc, end pc, deltas) to a preallocated record buffer,
//!   then sets a long period and re-arms. Both periods carry random jitter (xorshift, per
//!   thread) so sampling cannot lock onto a loop's harmonic.
//! - After the fact: start and end pcs are symbolised; a window counts for a function only if
//!   both name it; the rest are counted as discarded. The fixed cost every window carries (the
//!   signal path's own cycles, instructions and misses) is measured at start on a known loop,
//!   for ~100 ms on a thread of its own (`start` does not wait; `stop` does, or stops it early
//!   in a short program: under 5 windows it is not trusted, nothing is subtracted and the
//!   report says so), and subtracted from every window.
//! - Its own rate is capped (the long period has a floor) so the kernel never throttles it:
//!   slow overflow interrupts make the kernel lower `perf_event_max_sample_rate` for everyone.
//!   The rate is read at start and stop and a drop is reported; multiplexing (time running <
//!   time enabled) is detected per thread and reported.
//!
//! # Async-signal safety
//! The handler touches: errno (saved and restored), the siginfo (`si_fd`) and ucontext (pc),
//! the static slot table (atomics), `read`/`ioctl` on the overflowing descriptor (both
//! async-signal-safe system calls), and one preallocated record (index by `fetch_add`). No
//! allocation, lock or lazy TLS.
//!
//! # Without a PMU
//! Many VMs and containers expose no hardware events (`perf_event_open` of cycles fails with
//! ENOENT or EOPNOTSUPP), `perf_event_paranoid` may forbid them, seccomp may deny the system
//! call. [`start`] of the hardware mode then fails with a [`PmuError`] naming the cause and the
//! fix; callers (profpoint's report) go on without this section.
//!
//! The software mode ([`PmuConfig::software`]) needs no PMU: the
//! thread's CPU clock (`task-clock`, in ns) leads and page faults are counted, through the same
//! handler, state machine, calibration and attribution. Two things differ. User-only sampling
//! skips a clock that fires inside the kernel, so windows cannot begin there and a window whose
//! end firing was skipped runs twice as long: such *overlong* windows are not credited. And the
//! shares (%T) lean towards user-space time for the same reason; the rates over credited
//! windows (page faults per ms) do not.
//!
//! # Files
//! | file | what |
//! | --- | --- |
//! | `events.rs` | [`Event`]'s `perf_event_attr` encoding (the counters and their names are the report model's) |
//! | `config.rs` | [`PmuConfig`] and its limits |
//! | `error.rs` | [`PmuError`]: why the mode cannot run, with the fix |
//! | `window.rs` | [`Window`] and [`PmuProfile`]: what a run records; the overlong test |
//! | `calibration.rs` | where the calibration's loop lies ([`Calibration`], the fixed cost, is the model's) |
//! | `attribution.rs` | windows credited to functions, summed and ranked |
//! | `live.rs` | [`start`], [`PmuSampler`] and its stop (Linux) |
//! | `live/group.rs` | perf groups: opening, the refusals named, reading; [`Counters`] |
//! | `live/handler.rs` | the overflow handler and its per-thread window state machine |
//! | `live/watcher.rs` | the thread scan: new threads given groups, ended ones closed |
//! | `live/calibrate.rs` | the calibration run at start, on a thread of its own |
//! | `unsupported.rs` | the same API elsewhere than Linux, every start an error |
//!
//! [`PmuReport`], [`PmuRow`], [`Method`], [`Event`] and [`Calibration`], with the patch's table
//! ([`PmuReport::write_table`]), are the report model's (`profpoint_report::heatmap::pmu`),
//! re-exported here: the sampler fills them.
//!
//! `calibration_loop` stays in this file: reports leave it out by its path,
//! [`CALIBRATION_LOOP`].

mod attribution;
mod calibration;
mod config;
mod error;
mod events;
mod window;

pub use calibration::Calibration;
pub use config::{MIN_LONG_PERIOD, MIN_SOFTWARE_WINDOW, PmuConfig};
pub use error::PmuError;
pub use events::{Event, MAX_MEMBERS};
// The report's types are the model's: the sampler fills them, and the report and its
// renderers read them without linking the sampler.
pub use profpoint_report::heatmap::pmu::{Method, PmuReport, PmuRow};
pub use window::{PmuProfile, Window};

/// The symbol of the calibration's loop (`calibration_loop`, below): the heatmap's report
/// leaves it out by this name (profpoint's exit report does: it is the profiler's own work).
/// A test symbolises the loop in the test binary and compares, so a rename breaks the test,
/// not the exclusion.
pub const CALIBRATION_LOOP: &str = "profpoint_heatmap::pmu::calibration_loop";

/// A loop of integer adds: no branch misses to speak of, no memory but one stack slot.
///
/// It lives here, not in `calibration.rs`, because reports leave it out by its path,
/// [`CALIBRATION_LOOP`]: moving it renames it (and the test on the constant says so).
#[inline(never)]
fn calibration_loop(iters: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
    for i in 0..iters {
        // The barrier keeps the optimiser from replacing the loop by its closed form (sums of
        // polynomials): without it the loop takes no time and the windows land elsewhere.
        a = std::hint::black_box(a.wrapping_add(i));
        b = b.wrapping_add(a);
        c = c.wrapping_add(b);
        d = d.wrapping_add(c);
    }
    std::hint::black_box(a ^ b ^ c ^ d)
}

// The live machinery is Linux's (perf_event_open, real-time signals carrying `si_fd`).
#[cfg(target_os = "linux")]
mod live;
#[cfg(target_os = "linux")]
pub use live::{Counters, PmuSampler, available, start};

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
pub use unsupported::{Counters, PmuSampler, available, start};

#[cfg(test)]
mod tests;
