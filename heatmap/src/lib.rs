//! `profpoint-heatmap`: an in-process sampling profiler with a readprofile-style report.
//!
//! Linux's `/proc/profile` (and the Lego kernel's heatmap it inspired) keeps one counter per
//! `1 << prof_shift` bytes of kernel text and bumps the one holding the interrupted instruction
//! at every timer tick; `readprofile` then prints the hottest functions. This crate does the
//! same for a process: one counter per `1 << shift` bytes of every executable segment (main
//! executable, shared objects, vDSO), bumped from a `SIGPROF` handler at every sample of every
//! thread, symbolised only when a report is asked for.
//!
//! ```no_run
//! let sampler = profpoint_heatmap::start(profpoint_heatmap::Config::new().hz(1000))
//!     .expect("start sampling");
//! // ... the work to profile, on any number of threads ...
//! let profile = sampler.stop();
//! profpoint_heatmap::print_profile_heatmap_nr(&profile, 10);
//! ```
//!
//! The crate stands alone: it knows nothing of `profpoint`, which links it behind its opt-in
//! `heatmap` feature (off by default), builds its [`Config`] from profpoint's own environment
//! variables (this crate reads none) and adds its report to the exit report.
//!
//! # Map of the crate
//!
//! | file | concept |
//! | --- | --- |
//! | `config.rs` | [`Config`], [`Mode`], [`Source`] and their limits |
//! | `buckets.rs` | executable segments (`dl_iterate_phdr`) and the atomic counters |
//! | `signal.rs` | the sampler core: publication and drain, the handler's entry and exit, the interrupted pc, install and restore (the heatmap's and the windows' handlers use it) |
//! | `threads.rs` | the threads alive now, for both watchers |
//! | `sys.rs` | kernel constants and structures missing from `libc`, pinned by tests |
//! | `sampler/` | [`start`]; the heatmap's handler, each source's part (perf `task-clock`, `setitimer`, `tgkill`, wall mode), the watcher thread |
//! | `profile.rs` | [`Profile`]: the data of one run |
//! | `stacks/` | call stacks (x86_64 Linux): framehop unwinding in the handler, the lock-free stack table, [`stacks::set_thread_tag`], the symbolised [`StackReport`]; its `mod.rs` maps its files |
//! | `symbolize.rs` | addresses to names from ELF symbol tables |
//! | `report/` | [`Report`]: ranking, exclusion, table and JSON; `fold.rs` the stacks' report |
//! | `dump.rs` | the versioned dump format |
//! | `pmu/` | per-function hardware metrics by alternating sample periods ([`pmu::start`]); its `mod.rs` maps its files |
//!
//! Beside the crate: `examples/heatmap_demo.rs` (a workload that writes a dump),
//! `scripts/compare_with_perf.sh` (our top 5 against `perf report` on the same run),
//! `benches/` (overhead, achieved rate, report time) and `NOTES.md` (measured figures).
//!
//! # Limits
//!
//! - One sampler per process at a time ([`StartError::AlreadyRunning`]); a program that already
//!   handles `SIGPROF` gets [`StartError::SignalInUse`]. One that installs its own `SIGPROF`
//!   handler after start takes it over: the watcher notices within ~5 ms, stops sampling (no
//!   more of our signals reach that handler), stop leaves the program's handler and its own
//!   `ITIMER_PROF` in place, and the profile's warnings say when sampling stopped.
//! - With `perf_event_paranoid` 2 only user-space time is sampled (kernel time is not seen).
//! - Libraries `dlopen`ed after start get buckets within one scan interval (20 ms); samples
//!   before that count as "other", and a library loaded after the last scan is named in the
//!   warnings.
//! - Symbols come from the files on disk after the run: a file rebuilt in between is detected
//!   by its build id and reported.
//! - Each sample's cost is mostly kernel time in perf's software timer, not the handler: a
//!   few percent of a core at 1 kHz in a VM (BENCHMARKS.md, "Heatmap", has the figures).
//! - A thread that blocks `SIGPROF` is not sampled (its overflow signal stays pending).

#![deny(unsafe_op_in_unsafe_fn)]

mod buckets;
mod config;
mod dump;
mod error;
pub mod pmu;
mod profile;
mod report;
// The live sampler is Linux's; elsewhere the same API says it is not available.
#[cfg(target_os = "linux")]
mod sampler;
#[cfg(not(target_os = "linux"))]
#[path = "unsupported.rs"]
mod sampler;
#[cfg(target_os = "linux")]
mod signal;
pub mod stacks;
mod symbolize;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod threads;

pub use buckets::{ObjectFile, ObjectKind};
pub use config::{Config, MAX_HZ, MAX_SERVED_HZ, MAX_SHIFT, Mode, Source, served_rate_warning};
pub use error::{DumpError, StartError};
pub use profile::{Profile, Segment, SourceUsed};
pub use profpoint_glob::glob_matches;
pub use report::{By, Report, ReportOptions, Row};
/// The handler's own time, for the `stacks_targets` bench (feature `handler-timing`).
#[cfg(all(
    feature = "handler-timing",
    target_os = "linux",
    target_arch = "x86_64"
))]
#[doc(hidden)]
pub use sampler::handler_timing;
pub use sampler::{Sampler, start};
pub use stacks::{Frame, SampledStack, StackCut, StackReport};

/// Prints the top `n` functions of `profile` to standard error: the Lego kernel heatmap's
/// `print_profile_heatmap_nr(int nr)`.
pub fn print_profile_heatmap_nr(profile: &Profile, n: usize) {
    let report = profile.report(&ReportOptions {
        top: n,
        ..ReportOptions::default()
    });
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = report.write_table(&mut out);
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(&out);
}
