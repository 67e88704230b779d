//! Start-up: the initialiser that reads the `PROFPOINT_*` variables before `main`, and the
//! `atexit` handler it registers.
//!
//! # Mechanism
//! - One process-level initialiser, placed in `.init_array` so it runs before `main` (and
//!   before any test harness): it picks the clock, applies `PROFPOINT_DISABLE`,
//!   `PROFPOINT_ENABLE` and `PROFPOINT_SAMPLE` to the points, reads `PROFPOINT_REPORT` (into
//!   the plan of `deliver/`), and registers one `atexit` handler. It allocates nothing per
//!   point and registers nothing per point.
//! - The handler writes the exit report (`exit_report.rs`) if the program opted in
//!   ([`crate::report_at_exit`] or `#[profpoint::main]`) or `PROFPOINT_REPORT` asked for it.
//!   `atexit` handlers run on return from `main` and on `std::process::exit`; not on `abort`,
//!   a fatal signal or a `panic = "abort"` panic. SIGINT, SIGTERM and SIGHUP are handled by
//!   `super::signals`, which writes the same report from a thread of its own.
//! - Relative paths in `PROFPOINT_REPORT` are made absolute here: the folder the program
//!   started in, whatever folder it is in at exit.
//! - Said at start-up rather than after the run, one line each: a file destination whose
//!   folder is missing or not writable (checked with `access`, nothing created; the path is
//!   the one the exit report will use), and a glob of `PROFPOINT_DISABLE`, `PROFPOINT_ENABLE`,
//!   `PROFPOINT_SAMPLE` or `PROFPOINT_TRACE` that matches no point (tracepoint) of this copy;
//!   in a program that names points at run time (the `tracing` bridge's spans) a points' glob
//!   is checked again at exit instead, against the points named by then.

use super::deliver::{Destination, parse_report};
use super::deliver::{INIT_PID, absolute, cannot_write, destination_for, plan, refused};
use super::exit_report::write_exit_report;
use super::unmatched::{Names, Unmatched};
use crate::env;
use crate::point::spare::Rule;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a signal's report is armed (`PROFPOINT_SIGNALS`, default on).
static SIGNALS_WANTED: AtomicBool = AtomicBool::new(true);

// SAFETY: `.init_array` entries are called by the dynamic loader (or libc for static
// executables) with the usual C calling convention, once, before `main`; `init` takes no
// arguments (the extra argc/argv/envp the loader passes are ignored by the C ABI).
//
// Not under the `off` feature: nothing roots the runtime then, so the linker leaves it out.
// The section is the platform's list of initialisers: `.init_array` on ELF systems,
// `__DATA,__mod_init_func` on macOS (called with the same C convention), `.CRT$XCU` on Windows
// (the C runtime calls its entries before `main`, as C++ static constructors).
#[cfg(not(feature = "off"))]
#[used]
#[cfg_attr(
    not(any(target_vendor = "apple", windows)),
    unsafe(link_section = ".init_array")
)]
#[cfg_attr(
    target_vendor = "apple",
    unsafe(link_section = "__DATA,__mod_init_func")
)]
#[cfg_attr(windows, unsafe(link_section = ".CRT$XCU"))]
static INIT: extern "C" fn() = init;

#[cfg_attr(feature = "off", allow(dead_code))]
extern "C" fn init() {
    // A panic must not unwind into the loader.
    let _ = std::panic::catch_unwind(init_inner);
}

fn init_inner() {
    // Relaxed: written once before main, read at exit by the same or a forked process.
    INIT_PID.store(std::process::id(), Ordering::Relaxed);
    super::copies::init();
    // Before Rust's runtime puts /dev/null on a closed fd 1 (it does so in `main`'s set-up).
    #[cfg(unix)]
    {
        // SAFETY: F_GETFD on an fd number only reads its flags.
        let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
        super::deliver::STDOUT_CLOSED_AT_START.store(closed, Ordering::Relaxed);
    }
    super::fork::init();
    crate::clock::init();
    // The points by name, indexed once for every glob of every variable (40,000 globs against
    // 20,000 points: milliseconds, where matching each glob against each name took seconds;
    // the bound is `profpoint_glob::NameIndex`'s).
    let points = PointIndex::new();
    if let Some(v) = env::var("PROFPOINT_DISABLE") {
        match env::parse_globs("PROFPOINT_DISABLE", &v) {
            Ok(globs) => {
                let mut none = Unmatched::new("PROFPOINT_DISABLE", Names::Points);
                let rules: Vec<(&str, Rule)> = globs
                    .iter()
                    .map(|g| (g.as_str(), Rule::Enabled(false)))
                    .collect();
                for ((g, _), matched) in rules.iter().zip(points.apply_all(&rules)) {
                    none.check(g, matched);
                }
                none.warn();
            }
            Err(e) => env::warn(&e, "no point disabled"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_ENABLE") {
        match env::parse_globs("PROFPOINT_ENABLE", &v) {
            Ok(globs) => {
                let mut none = Unmatched::new("PROFPOINT_ENABLE", Names::Points);
                let rules: Vec<(&str, Rule)> = globs
                    .iter()
                    .map(|g| (g.as_str(), Rule::Enabled(true)))
                    .collect();
                for ((g, _), matched) in rules.iter().zip(points.apply_all(&rules)) {
                    none.check(g, matched);
                }
                none.warn();
            }
            Err(e) => env::warn(&e, "the default (all points on)"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_SAMPLE") {
        match env::parse_sample(&v) {
            Ok(rules) => {
                let mut none = Unmatched::new("PROFPOINT_SAMPLE", Names::Points);
                let rules: Vec<(&str, Rule)> = rules
                    .iter()
                    .map(|(g, n)| {
                        let rule = if *n == 0 {
                            Rule::Counting
                        } else {
                            Rule::Sampling(*n)
                        };
                        (g.as_str(), rule)
                    })
                    .collect();
                for ((g, _), matched) in rules.iter().zip(points.apply_all(&rules)) {
                    // A bare `N` has no glob of the user's to warn about.
                    if v.contains('=') {
                        none.check(g, matched);
                    }
                }
                none.warn();
            }
            Err(e) => env::warn(&e, "timing of every call"),
        }
    }
    drop(points);
    if let Some(v) = env::var("PROFPOINT_TRACE") {
        match env::parse_globs("PROFPOINT_TRACE", &v) {
            Ok(globs) => {
                let mut none = Unmatched::new("PROFPOINT_TRACE", Names::Tracepoints);
                for g in &globs {
                    none.check(g, crate::tracepoint::count_matching(g, true));
                }
                none.warn();
            }
            Err(e) => env::warn(&e, "no tracepoint counted"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_BUDGET") {
        match env::parse_budget(&v) {
            Ok(b) => {
                crate::budget::set_bursts(b.bursts);
                crate::budget::set(b.percent);
            }
            Err(e) => env::warn(&e, "2%"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_MAX_SLOT_MB") {
        match env::parse_max_slot_mb(&v) {
            Ok(mb) => crate::shard::set_max_slot_mb(mb),
            Err(e) => env::warn(&e, &format!("{}", crate::shard::DEFAULT_MAX_SLOT_MB)),
        }
    }
    if let Some(v) = env::var("PROFPOINT_COMPENSATE") {
        match env::parse_bool("PROFPOINT_COMPENSATE", &v) {
            Ok(on) => crate::overhead::set_compensation(on),
            Err(e) => env::warn(&e, "0 (no compensation)"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_REPORT_EVERY") {
        match env::parse_every(&v) {
            Ok(every) => super::periodic::set_every(every),
            Err(e) => env::warn(&e, "a report at exit only"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_SIGNALS") {
        match env::parse_bool("PROFPOINT_SIGNALS", &v) {
            Ok(on) => SIGNALS_WANTED.store(on, Ordering::Relaxed),
            Err(e) => env::warn(&e, "1 (a report on SIGINT, SIGTERM and SIGHUP)"),
        }
    }
    let mut p = plan();
    if let Some(v) = env::var("PROFPOINT_SUBTRACT_OVERHEAD") {
        match env::parse_bool("PROFPOINT_SUBTRACT_OVERHEAD", &v) {
            Ok(b) => p.subtract_overhead = b,
            Err(e) => env::warn(&e, "0"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_REPORT") {
        match parse_report(&v) {
            // Relative paths name files in the folder the program started in, not the one it
            // happens to be in at exit.
            Ok(d) => {
                let mut resolved: Vec<Destination> = Vec::new();
                let mut dropped = false;
                for (given, at) in d.iter().zip(d.iter().map(|d| d.map_path(absolute))) {
                    if warn_unwritable(given, &at) {
                        resolved.push(at);
                    } else {
                        dropped = true;
                    }
                }
                if dropped && !resolved.contains(&Destination::Stderr) {
                    resolved.push(Destination::Stderr);
                }
                p.from_env = Some(resolved);
            }
            Err(e) => {
                env::warn(&e, "stderr");
                p.from_env = Some(vec![Destination::Stderr]);
            }
        }
    }
    drop(p);
    #[cfg(feature = "heatmap")]
    if crate::sampling::start_from_env() | crate::sampling::start_pmu_from_env() {
        // Asking for a heatmap or hardware metrics asks for a report: stderr unless
        // PROFPOINT_REPORT says where.
        plan().opted_in = true;
    }
    #[cfg(not(feature = "heatmap"))]
    for var in ["PROFPOINT_HEATMAP", "PROFPOINT_PMU"] {
        if env::var(var).is_some_and(|v| !matches!(v.trim(), "" | "0")) {
            crate::diag::warn_line!(
                "profpoint: {var} is set, but this program was built without profpoint's \
                 `heatmap` feature (the sampler: features = [\"heatmap\"]); no sampler, the \
                 rest of the report as asked"
            );
        }
    }
    #[cfg(feature = "serve")]
    super::serve::start_from_env();
    #[cfg(not(feature = "serve"))]
    if env::var("PROFPOINT_SERVE").is_some() {
        crate::diag::warn_line!(
            "profpoint: PROFPOINT_SERVE is set, but this program was built without profpoint's \
             `serve` feature; no server"
        );
    }
    let p = plan();
    let armed = p.opted_in || p.from_env.as_ref().is_some_and(|d| !d.is_empty());
    drop(p);
    if armed {
        crate::overhead::measure();
        arm_extras();
    }
    // SAFETY: `at_exit` is an `extern "C" fn()` that lives for the whole program.
    if unsafe { libc::atexit(at_exit) } != 0 {
        crate::diag::warn_line!(
            "profpoint: atexit registration failed; no report will be written at exit"
        );
    }
}

/// The points (as `crate::point::listed` lists them) and their names' index, made once at start-up
/// for the globs of the variables.
struct PointIndex {
    points: Vec<&'static crate::point::Point>,
    index: profpoint_glob::NameIndex<'static>,
}

impl PointIndex {
    fn new() -> PointIndex {
        let points: Vec<&'static crate::point::Point> = crate::point::listed().collect();
        let index = profpoint_glob::NameIndex::new(points.iter().map(|p| p.name()));
        PointIndex { points, index }
    }

    /// Applies `rule` to every point `glob` matches (as `crate::disable` and its kin do), and
    /// records it for the points named at run time later (`point/spare.rs`); returns how many
    /// matched.
    fn apply(&self, glob: &str, rule: Rule) -> usize {
        crate::point::spare::record(glob, rule, || {
            self.index
                .for_each_match(glob, |i| rule.apply(self.points[i]))
        })
    }

    /// Applies one variable's `rules` in order ([`PointIndex::apply`]); returns how many points
    /// each matched. A pair given more than once is applied once, at its last place: a point
    /// ends with the rule of the last glob that matches it, and that is the last place of its
    /// pair, so the points end as they would with every repeat applied (and so do the rules
    /// recorded for points named later, each glob's last). A glob is matched once however
    /// often it comes: repeating `*` 40,000 times costs one match of it.
    fn apply_all(&self, rules: &[(&str, Rule)]) -> Vec<usize> {
        use std::collections::HashMap;
        let mut last: HashMap<(&str, Rule), usize> = HashMap::with_capacity(rules.len());
        for (at, &pair) in rules.iter().enumerate() {
            last.insert(pair, at);
        }
        let mut matched: HashMap<&str, usize> = HashMap::with_capacity(last.len());
        for (at, &(glob, rule)) in rules.iter().enumerate() {
            if last[&(glob, rule)] == at {
                matched.insert(glob, self.apply(glob, rule));
            }
        }
        rules.iter().map(|(glob, _)| matched[glob]).collect()
    }
}

/// One warning line at start-up for a file destination of `PROFPOINT_REPORT` that is refused
/// (`deliver::refused`: false, the destination is dropped) or cannot be written as things
/// stand (true: kept, the exit may find it writable): `given` as the variable spells it, `at`
/// made absolute. The path is the one the exit report will use ([`destination_for`]); nothing
/// is opened, created or written.
fn warn_unwritable(given: &Destination, at: &Destination) -> bool {
    // Report 1: a `{seq}` in the path is checked as the first of a series.
    let at = destination_for(at, 1);
    if let Some(why) = at.path().and_then(refused) {
        // The reason whole (escaped): it names who owns what, which is the point of the line.
        let given = env::shown(&given.to_string(), env::SHOWN_MAX);
        let why = env::shown(&why, 4 * env::SHOWN_MAX);
        crate::diag::warn_line!(
            "profpoint: PROFPOINT_REPORT={given}: {why}; the points table goes to stderr at \
             exit instead"
        );
        return false;
    }
    let Some(why) = at.path().and_then(cannot_write) else {
        return true;
    };
    const THEN: &str =
        "the points table will go to stderr at exit instead, unless that changes by then";
    // A path of usual length whole; a longer one cut (it is in the line twice).
    let given = env::shown(&given.to_string(), env::SHOWN_MAX);
    let why = env::shown(&why, 96);
    crate::diag::warn_line!("profpoint: PROFPOINT_REPORT={given}: {why}; {THEN}");
    true
}

/// Arms the report at exit (idempotent).
#[cfg_attr(feature = "off", allow(dead_code))]
pub(crate) fn opt_in() {
    plan().opted_in = true;
    crate::overhead::measure();
    arm_extras();
}

/// What comes with an armed report: the periodic reports when `PROFPOINT_REPORT_EVERY` asks
/// (`super::periodic`), and the report on SIGINT, SIGTERM and SIGHUP (`super::signals`), unless
/// `PROFPOINT_SIGNALS=0`.
fn arm_extras() {
    super::periodic::start();
    // Relaxed: set by the initialiser, before.
    if SIGNALS_WANTED.load(Ordering::Relaxed) {
        super::signals::arm();
    }
}

extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(write_exit_report);
    // A signal that arrived while it was written ends the process now.
    super::signals::after_exit_report();
}
