//! Start-up: the initialiser that reads the `PROFPOINT_*` variables before `main`, and the
//! `atexit` handler it registers.
//!
//! # Mechanism
//! - One process-level initialiser, placed in `.init_array` so it runs before `main` (and
//!   before any test harness): it picks the clock, applies `PROFPOINT_DISABLE`,
//!   `PROFPOINT_ENABLE` and `PROFPOINT_SAMPLE` to the points, reads `PROFPOINT_REPORT` (into
//!   the plan of `deliver.rs`), and registers one `atexit` handler. It allocates nothing per
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
    // The points by name, indexed once for every glob of every variable (10,000 globs against
    // 10,000 points: milliseconds, where matching each glob against each name took seconds).
    let points = PointIndex::new();
    if let Some(v) = env::var("PROFPOINT_DISABLE") {
        match env::parse_globs("PROFPOINT_DISABLE", &v) {
            Ok(globs) => {
                let mut none = Unmatched::new("PROFPOINT_DISABLE", Names::Points);
                for g in &globs {
                    none.check(g, points.apply(g, Rule::Enabled(false)));
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
                for g in &globs {
                    none.check(g, points.apply(g, Rule::Enabled(true)));
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
                for (g, n) in &rules {
                    let rule = if *n == 0 {
                        Rule::Counting
                    } else {
                        Rule::Sampling(*n)
                    };
                    let matched = points.apply(g, rule);
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
                    none.check(g, crate::trace_count(g));
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
            Ok(on) => crate::compensate(on),
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

/// The names a glob of a variable is matched against.
#[derive(Clone, Copy)]
enum Names {
    Points,
    Tracepoints,
}

/// The points (as `crate::points` lists them) and their names' index, made once at start-up
/// for the globs of the variables.
struct PointIndex {
    points: Vec<&'static crate::Point>,
    index: profpoint_glob::NameIndex<'static>,
}

impl PointIndex {
    fn new() -> PointIndex {
        let points: Vec<&'static crate::Point> = crate::points().collect();
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
}

/// The globs of one variable that matched nothing: up to [`UNMATCHED_EACH`] get a line each
/// (with a name that looks like them); more get one line with their count and the first few.
struct Unmatched {
    var: &'static str,
    names: Names,
    globs: Vec<String>,
    count: usize,
    /// Checked again at exit (see [`warn_deferred`]): the line says "by the end of the run".
    at_exit: bool,
}

/// Globs of points' variables that matched no point at start-up in a program that names points
/// at run time (the `tracing` bridge's spans): each is checked again against every point at
/// exit, and said then if it still matches none.
static DEFERRED: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());

/// The most globs kept for the check at exit (the variables' own length bounds them too).
const DEFERRED_MAX: usize = 1024;

/// Says the globs [`DEFERRED`] at start-up that still match no point, once, at the exit
/// report (a span's point claimed in the run is a point by then).
pub(crate) fn warn_deferred() {
    let deferred = std::mem::take(&mut *DEFERRED.lock().unwrap_or_else(|e| e.into_inner()));
    if deferred.is_empty() {
        return;
    }
    let names: Vec<&'static str> = crate::points().map(|p| p.name()).collect();
    let mut var: Option<Unmatched> = None;
    for (v, glob) in deferred {
        if var.as_ref().is_some_and(|u| u.var != v)
            && let Some(u) = var.take()
        {
            u.warn();
        }
        let u = var.get_or_insert_with(|| Unmatched {
            at_exit: true,
            ..Unmatched::new(v, Names::Points)
        });
        let matched = names
            .iter()
            .filter(|n| crate::glob::matches(&glob, n))
            .count();
        u.check(&glob, matched);
    }
    if let Some(u) = var {
        u.warn();
    }
}

/// How many globs of one variable that match nothing get a line each.
const UNMATCHED_EACH: usize = 3;

impl Unmatched {
    fn new(var: &'static str, names: Names) -> Unmatched {
        Unmatched {
            var,
            names,
            globs: Vec::new(),
            count: 0,
            at_exit: false,
        }
    }

    /// Counts `glob` when it `matched` nothing.
    fn check(&mut self, glob: &str, matched: usize) {
        if matched > 0 {
            return;
        }
        self.count += 1;
        // All of them (bounded: a program with spare points checks them again at exit).
        if self.globs.len() < DEFERRED_MAX {
            self.globs.push(glob.to_string());
        }
    }

    fn warn(self) {
        // Another copy of profpoint seen in this process may hold the points: see
        // `warn_unmatched`.
        if self.count == 0 || super::copies::all().len() > 1 {
            return;
        }
        // A program with points named at run time (the `tracing` bridge's spans) may name
        // them later: a glob that matches nothing yet is not a mistake there, and is checked
        // again at exit.
        if !self.at_exit && matches!(self.names, Names::Points) && crate::point::spare::any() {
            let mut d = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
            let room = DEFERRED_MAX.saturating_sub(d.len());
            d.extend(self.globs.into_iter().take(room).map(|g| (self.var, g)));
            return;
        }
        if self.count <= UNMATCHED_EACH {
            for g in &self.globs {
                warn_unmatched(self.var, g, self.names, self.at_exit);
            }
            return;
        }
        let (all, what) = names_of(self.names);
        let first: Vec<String> = self.globs[..UNMATCHED_EACH]
            .iter()
            .map(|g| env::shown(g, 32))
            .collect();
        crate::diag::warn_line!(
            "profpoint: {}: {} globs match{} none of the {} {what} in {}{}, the first {}",
            self.var,
            self.count,
            if self.at_exit { "ed" } else { "" },
            all.len(),
            env::shown(&super::copies::own_name(), 48),
            if self.at_exit {
                " by the end of the run"
            } else {
                ""
            },
            first.join(", ")
        );
    }
}

/// The names of this copy's points or tracepoints, and what they are called.
fn names_of(names: Names) -> (Vec<&'static str>, &'static str) {
    match names {
        Names::Points => (crate::points().map(|p| p.name()).collect(), "points"),
        Names::Tracepoints => (
            crate::tracepoint::all().iter().map(|t| t.name()).collect(),
            "tracepoints",
        ),
    }
}

/// One warning line for a glob of `var` that matched none of this copy's points (or
/// tracepoints): how many there are, a name that looks like the glob, and a character the
/// glob may have meant as another syntax's wildcard.
///
/// Another copy of profpoint seen in this process (a library's, see `super::copies`) may hold
/// the points this glob names, and this copy cannot read that copy's names: then no warning.
/// A library loaded later (`dlopen`) is not seen at all; the line names this copy's object,
/// so a glob meant for such a library's points reads as what it is.
/// `at_exit`: the glob was checked again at exit (a program that names points at run time),
/// and the line says so.
fn warn_unmatched(var: &str, glob: &str, names: Names, at_exit: bool) {
    let (all, what) = names_of(names);
    let object = env::shown(&super::copies::own_name(), 48);
    let shown = env::shown(glob, 48);
    let mut line = match (all.len(), at_exit) {
        (0, false) => {
            format!("profpoint: {var}={shown}: matches nothing: there are no {what} in {object}")
        }
        (n, false) => {
            format!("profpoint: {var}={shown}: matches none of the {n} {what} in {object}")
        }
        (n, true) => format!(
            "profpoint: {var}={shown}: matched none of the {n} {what} in {object} by the end of \
             the run (points named at run time, such as spans, included)"
        ),
    };
    // The name sharing the longest start with the glob's literal part (the first on a tie).
    let literal = &glob[..glob.find(['*', '?']).unwrap_or(glob.len())];
    let common = |n: &str| {
        n.chars()
            .zip(literal.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    if let Some(like) = all.iter().rev().max_by_key(|n| common(n)) {
        line.push_str(&format!(" (names look like {})", env::shown(like, 48)));
    }
    if let Some(c) = crate::glob::foreign_syntax(glob) {
        line.push_str(&format!("; only * and ? are wildcards, {c} matches itself"));
    }
    crate::diag::warn_line!("{line}");
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
