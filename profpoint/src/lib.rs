//! # profpoint
//!
//! Know where your program's time goes without leaving the program: annotate functions and
//! blocks, run, and read one table at exit.
//!
//! ```
//! #[profpoint::profile_point]
//! fn parse(input: &str) -> usize {
//!     input.split_whitespace().count()
//! }
//!
//! fn main() {
//!     profpoint::report_at_exit(); // or PROFPOINT_REPORT=stderr, or #[profpoint::main]
//!     let _g = profpoint::profile_scope!("main loop");
//!     for _ in 0..10 {
//!         parse("a few words to count");
//!     }
//! }
//! ```
//!
//! ## The pieces
//! - [`macro@profile_point`] times a function (sync or `async`), named after its path.
//! - [`profile_scope!`] times a block until the guard drops.
//! - [`define_profile_point!`] defines a point for explicit [`Point::start`] / [`Point::leave`],
//!   as `DEFINE_PROFILE_POINT` does in the Lego kernel's profile points.
//! - [`enable`], [`disable`], [`set_sampling`] change points at run time by glob; the
//!   `PROFPOINT_ENABLE`, `PROFPOINT_DISABLE` and `PROFPOINT_SAMPLE` variables do it at start.
//! - [`print_profile_points`], [`write_profile_points`], [`snapshot`], [`reset`] read them.
//! - [`tracepoint!`] declares a tracepoint: a site that costs one instruction until a probe
//!   is attached at run time (see the [`mod@tracepoint`] module); [`trace!`] fires one with lazily
//!   evaluated arguments.
//! - `start_heatmap` (or `PROFPOINT_HEATMAP=1`; the `heatmap` feature) adds the sampling
//!   heatmap to the report.
//!
//! Every point is a `static` gathered by the linker into one section, so the table lists every
//! point compiled into the program, hit or not. Counters live in per-thread shards written with
//! plain stores; see `ARCHITECTURE.md` for the design and `BENCHMARKS.md` for the costs.
//!
//! ## Environment
//! See the table in the `env` module docs: `PROFPOINT_REPORT`, `PROFPOINT_ENABLE`,
//! `PROFPOINT_DISABLE`, `PROFPOINT_SAMPLE`, `PROFPOINT_SUBTRACT_OVERHEAD`, `PROFPOINT_CLOCK`.
//!
//! ## Features
//! None by default: the points, tracepoints, the budget, the table and every export but flame
//! graphs' SVG. BENCHMARKS.md, "A user's build", has what each costs a build.
//! - `heatmap`: link the `heatmap` sampler (`start_heatmap`, `PROFPOINT_HEATMAP`, its stacks,
//!   `PROFPOINT_PMU`).
//! - `flame`: flame graphs as SVG (`flame:PATH`, `points-flame:PATH`), drawn by `inferno`.
//! - `serve`: live reports over HTTP (`profpoint::serve`, `PROFPOINT_SERVE`).
//! - `off`: every macro expands to the bare code; the functions stay and report nothing.
//! - `criterion`: `profpoint::criterion::Profiler`, a points (and heatmap) report per
//!   benchmark under `cargo bench -- --profile-time N`.
//! - `tracepoint-atomic`: tracepoint sites test an atomic flag instead of being patched
//!   (static keys are the default on x86_64 Linux); for systems that forbid code patching.

#![deny(unsafe_op_in_unsafe_fn)]

extern crate self as profpoint;

#[cfg(not(loom))]
pub mod alloc;
mod budget;
mod clock;
#[cfg(feature = "criterion")]
pub mod criterion;
mod diag;
pub mod env;
mod glob;
mod hist;
mod os_clock;
mod overhead;
mod owned;
mod point;
mod report;
mod runtime;
#[cfg(feature = "heatmap")]
mod sampling;
mod shard;
mod slot;
mod sync;
mod threads;
pub mod tracepoint;
mod tree;

#[doc(hidden)]
pub mod __private;

#[cfg(not(loom))]
pub use alloc::Counting as Alloc;
pub use clock::ClockInfo;
pub use glob::matches as glob_matches;
pub use point::{AsyncGuard, Guard, Point, Token};
pub use profpoint_macros::{main, profile_point, trace, tracepoint};
pub use profpoint_report::Overhead;
pub use profpoint_report::ReadError;
pub use profpoint_report::{AllocReport, AllocStats};
pub use profpoint_report::{
    BudgetEvent, BudgetOver, BudgetReport, CostPart, CountingOver, CountingShare, ThrottledPoint,
};
pub use report::{
    ClockReport, CollectReport, Interval, IntervalPoint, PointReport, PointsTree, Report,
    ReportOptions, RunInfo, SCHEMA, SlotMemory, TreeEdge, TreeNode, VERSION, write_table,
};
pub use runtime::deliver::Destination;
#[cfg(feature = "serve")]
pub use runtime::serve::{ServeError, ServeOptions, Server, serve, serve_with};

#[cfg(feature = "heatmap")]
pub use heatmap;

/// The `off` feature: the public API compiles and does nothing (each function returns at
/// once, so nothing of the runtime is linked for it).
const OFF_BUILD: bool = cfg!(feature = "off");

/// Every profile point compiled into the program (including points never hit).
#[cfg_attr(feature = "off", inline(always))]
pub fn points() -> impl Iterator<Item = &'static Point> {
    point::listed()
}

/// Applies `rule` to every point whose name matches `glob`, and to the points named at run
/// time later (`point/spare.rs`); returns how many matched now.
#[inline]
fn for_matching(glob: &str, rule: point::spare::Rule) -> usize {
    if OFF_BUILD {
        return 0;
    }
    point::spare::record(glob, rule, || {
        points()
            .filter(|p| glob::matches(glob, p.name()))
            .map(|p| rule.apply(p))
            .count()
    })
}

/// Turns on every point whose name matches `glob` (`*` any run, `?` one character); returns
/// how many matched. Points named at run time later (the `tracing` bridge's) that match it
/// are turned on too.
#[cfg_attr(feature = "off", inline(always))]
pub fn enable(glob: &str) -> usize {
    for_matching(glob, point::spare::Rule::Enabled(true))
}

/// Turns off every point whose name matches `glob`; an off point costs one predictable branch
/// and reads no clock. Returns how many matched. Points named at run time later that match
/// it are off from the start.
#[cfg_attr(feature = "off", inline(always))]
pub fn disable(glob: &str) -> usize {
    for_matching(glob, point::spare::Rule::Enabled(false))
}

/// Times one call in about `every` of the points matching `glob` (1 = time every call); every
/// call is still counted. Returns how many matched (points named at run time later get it
/// too).
#[cfg_attr(feature = "off", inline(always))]
pub fn set_sampling(glob: &str, every: u32) -> usize {
    for_matching(glob, point::spare::Rule::Sampling(every))
}

/// Overhead compensation on or off (`PROFPOINT_COMPENSATE=1` at start): while on, each timed
/// call records its interval minus the measured in-interval cost of a point, and the points
/// around it lose that call's whole measured cost, so a parent's total and self time do not
/// grow with the number of annotated functions it calls. Measures the overhead first (once,
/// about 1 ms). Untimed calls (sampled, counted only) are not compensated.
#[cfg_attr(feature = "off", inline(always))]
pub fn compensate(on: bool) {
    overhead::set_compensation(on);
}

/// Sets the overhead budget: `Some(percent)` of the process's CPU time that the points'
/// instrumentation may cost (2% by default, `PROFPOINT_BUDGET`), or `None` for no budget.
/// Under it, a point too hot to time on every call is timed on one call in N, or counted
/// only, and timed fully again when it cools down; every call of every point is still counted
/// (the budget never turns a point off), every change and an error bar for every estimated
/// total are in the report. Where counting alone costs more than the budget, the points stay
/// counted and the report says what that cost and which points made it.
/// [`set_budget_bursts`] lets the budget go further. Points you set to sampled, counted or off
/// yourself stay as you set them. `None` times throttled points fully again.
#[cfg_attr(feature = "off", inline(always))]
pub fn set_budget(percent: Option<f64>) {
    if OFF_BUILD {
        return;
    }
    budget::set(percent);
}

/// Lets the overhead budget time its hottest points in bursts (`true`; `PROFPOINT_BUDGET=2%,bursts`)
/// when counting alone costs more than it: such a point is off but for one short burst a
/// round, fully timed there, and its calls between bursts are **estimated** from the points
/// beside it (marked estimated, with a 95% interval). Off by default: then counting is the
/// budget's floor and every count is exact. Withdrawn (`false`), points in bursts are counted
/// again at the controller's next round.
#[cfg_attr(feature = "off", inline(always))]
pub fn set_budget_bursts(allowed: bool) {
    if OFF_BUILD {
        return;
    }
    budget::set_bursts(allowed);
}

/// Whether the overhead budget may time points in bursts; see [`set_budget_bursts`].
#[cfg_attr(feature = "off", inline(always))]
pub fn budget_bursts() -> bool {
    if OFF_BUILD {
        return false;
    }
    budget::bursts_allowed()
}

/// The overhead budget in percent of CPU time (`None`: no budget); see [`set_budget`].
#[cfg_attr(feature = "off", inline(always))]
pub fn budget() -> Option<f64> {
    if OFF_BUILD {
        return None;
    }
    budget::get()
}

/// Counts every call of the points matching `glob` and times none (no clock read: the
/// cheapest state of an on point, for code too hot to time). Returns how many matched;
/// [`enable`] or [`set_sampling`] time them again.
#[cfg_attr(feature = "off", inline(always))]
pub fn count_only(glob: &str) -> usize {
    for_matching(glob, point::spare::Rule::Counting)
}

/// A consistent copy of every point now (each point's numbers agree with each other). Cheap
/// enough to call every second: it reads each thread's counters once.
#[cfg_attr(feature = "off", inline(always))]
pub fn snapshot() -> Report {
    if OFF_BUILD {
        return Report::empty();
    }
    report::collect(&ReportOptions::default())
}

/// Makes the current counts the new zero: later reports and snapshots count from here.
/// Min and max keep their values.
#[cfg_attr(feature = "off", inline(always))]
pub fn reset() {
    if OFF_BUILD {
        return;
    }
    report::reset_counts();
}

/// Prints the points table to standard error.
#[cfg_attr(feature = "off", inline(always))]
pub fn print_profile_points() {
    let mut e = std::io::stderr().lock();
    // Failing to write to stderr leaves nothing better to report to.
    let _ = write_profile_points(&mut e);
}

/// Writes the points table to `w`.
#[cfg_attr(feature = "off", inline(always))]
pub fn write_profile_points(w: &mut dyn std::io::Write) -> std::io::Result<()> {
    if OFF_BUILD {
        return Ok(());
    }
    overhead::measure();
    write_table(&report::collect(&ReportOptions::default()), w)
}

/// Asks for the report when the process exits (return from `main` or `std::process::exit`):
/// the table on stderr, or whatever `PROFPOINT_REPORT` names. Call it once, early;
/// `#[profpoint::main]` does it for you. Measures the point overhead now (about 1 ms).
/// Does nothing under the `off` feature.
#[cfg_attr(feature = "off", inline(always))]
pub fn report_at_exit() {
    #[cfg(not(feature = "off"))]
    runtime::exit::opt_in();
}

/// Writes the at-exit report now (every destination of `PROFPOINT_REPORT`, or the table on
/// stderr when the program opted in), once per process: the at-exit handler and later calls
/// then write nothing; a call while another thread writes it waits until it is written.
/// Nothing when no report was asked for.
///
/// For a program that ends itself other than by returning from `main` or calling
/// `std::process::exit` (which write the report anyway): its own shutdown on `SIGINT` or
/// `SIGTERM` that re-raises the signal or calls `_exit`, a supervisor hook before `abort`.
/// Call it from a normal thread (the one your handler wakes, as the `ctrlc` crate or
/// signal-hook's iterator do), never inside a signal handler: it allocates and takes locks.
/// Without a handler of the program's own, profpoint writes the report on `SIGINT`,
/// `SIGTERM` and `SIGHUP` itself (Unix; `PROFPOINT_SIGNALS=0` turns that off).
#[cfg_attr(feature = "off", inline(always))]
pub fn write_exit_report() {
    #[cfg(not(feature = "off"))]
    runtime::exit_report::write_exit_report();
}

/// Starts the `heatmap` sampler under profpoint: every report (snapshots, the exit report)
/// then carries its top functions, and it is stopped at exit. `PROFPOINT_HEATMAP=1` does the
/// same without code. For a sampler of your own, use [`heatmap::start`] directly.
#[cfg(feature = "heatmap")]
#[cfg_attr(feature = "off", inline(always))]
pub fn start_heatmap(config: heatmap::Config) -> Result<(), heatmap::StartError> {
    if OFF_BUILD {
        return Ok(());
    }
    sampling::start(config)
}

/// Every tracepoint compiled into the program: name, enabled state, probes, hits.
#[cfg_attr(feature = "off", inline(always))]
pub fn tracepoints() -> Vec<tracepoint::TracepointInfo> {
    if OFF_BUILD {
        return Vec::new();
    }
    tracepoint::all().iter().map(|t| t.info()).collect()
}

/// Turns on the built-in counting probe of every tracepoint matching `glob` (their hits appear
/// in the report); returns how many matched. `PROFPOINT_TRACE` does it at start.
#[cfg_attr(feature = "off", inline(always))]
pub fn trace_count(glob: &str) -> usize {
    if OFF_BUILD {
        return 0;
    }
    tracepoint::count_matching(glob, true)
}

/// Turns the counting probe off again; returns how many matched.
#[cfg_attr(feature = "off", inline(always))]
pub fn trace_uncount(glob: &str) -> usize {
    if OFF_BUILD {
        return 0;
    }
    tracepoint::count_matching(glob, false)
}

/// Writes a report to a destination now (as the exit handler would): a file is replaced whole
/// (a temporary file beside it, renamed over it); an error is returned, not sent elsewhere.
pub fn write_report(report: &Report, to: &Destination) -> std::io::Result<()> {
    runtime::deliver::write_to(report, to)
}

/// README.md's examples, compiled and run as doctests (`cargo test --doc`). The crate's
/// README.md is the repository's (a link in the source tree, a copy in the published package).
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
