//! Start-up and the at-exit report.
//!
//! # Mechanism
//! - One process-level initialiser, placed in `.init_array` so it runs before `main` (and
//!   before any test harness): it picks the clock, applies `PROFPOINT_DISABLE`,
//!   `PROFPOINT_ENABLE` and `PROFPOINT_SAMPLE` to the points, reads `PROFPOINT_REPORT`, and
//!   registers one `atexit` handler. It allocates nothing per point and registers nothing per
//!   point.
//! - The handler prints the report if the program opted in ([`crate::report_at_exit`] or
//!   `#[profpoint::main]`) or `PROFPOINT_REPORT` asked for it. `atexit` handlers run on return
//!   from `main` and on `std::process::exit`; not on `abort`, a fatal signal or a
//!   `panic = "abort"` panic.
//! - glibc runs the main thread's thread-local destructors before `atexit` handlers, so the
//!   main thread's shard is already back on the free list when the report is read: its counts
//!   are still there (shards keep their counts). Other threads may still be running; the
//!   report is a snapshot of that moment.

use crate::env::{self, Destination};
use crate::report::{Report, ReportOptions};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the at-exit handler does.
#[derive(Debug)]
struct ExitPlan {
    /// Destinations chosen by `PROFPOINT_REPORT`, if it was set (and valid).
    from_env: Option<Vec<Destination>>,
    /// The program opted in.
    opted_in: bool,
    subtract_overhead: bool,
}

static PLAN: Mutex<ExitPlan> = Mutex::new(ExitPlan {
    from_env: None,
    opted_in: false,
    subtract_overhead: false,
});

/// Whether the report was already written (the handler runs once).
static DONE: AtomicBool = AtomicBool::new(false);

/// The process that ran the initialiser: a `fork`ed child that exits normally runs the at-exit
/// report too, and must not overwrite its parent's files.
static INIT_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Where the at-exit report of process `pid` goes for a file destination `path`: `{pid}` in
/// the path becomes the process id; in a forked child (`forked`), a path without `{pid}` gets
/// `.PID` appended, so parent and children each keep their own report.
fn exit_path(path: &std::path::Path, pid: u32, forked: bool) -> std::path::PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    // On bytes: a path that is not UTF-8 keeps its bytes.
    let bytes = path.as_os_str().as_bytes();
    if let Some(at) = bytes.windows(5).position(|w| w == b"{pid}") {
        let mut out = bytes[..at].to_vec();
        out.extend_from_slice(pid.to_string().as_bytes());
        out.extend_from_slice(&bytes[at + 5..]);
        // Later `{pid}`s too.
        return exit_path(
            std::path::Path::new(&std::ffi::OsString::from_vec(out)),
            pid,
            false,
        );
    }
    if forked {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{pid}"));
        return p.into();
    }
    path.to_path_buf()
}

fn plan() -> std::sync::MutexGuard<'static, ExitPlan> {
    // Every update is a single field store: a poisoned lock still holds a consistent plan.
    PLAN.lock().unwrap_or_else(|e| e.into_inner())
}

// SAFETY: `.init_array` entries are called by the dynamic loader (or libc for static
// executables) with the usual C calling convention, once, before `main`; `init` takes no
// arguments (the extra argc/argv/envp the loader passes are ignored by the C ABI).
//
// Not under the `off` feature: nothing roots the runtime then, so the linker leaves it out.
#[cfg(not(feature = "off"))]
#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;

#[cfg_attr(feature = "off", allow(dead_code))]
extern "C" fn init() {
    // A panic must not unwind into the loader.
    let _ = std::panic::catch_unwind(init_inner);
}

fn init_inner() {
    // Relaxed: written once before main, read at exit by the same or a forked process.
    INIT_PID.store(std::process::id(), Ordering::Relaxed);
    crate::fork::init();
    crate::clock::init();
    if let Some(v) = env::var("PROFPOINT_DISABLE") {
        match env::parse_globs("PROFPOINT_DISABLE", &v) {
            Ok(globs) => globs.iter().for_each(|g| {
                crate::disable(g);
            }),
            Err(e) => env::warn(&e, "no point disabled"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_ENABLE") {
        match env::parse_globs("PROFPOINT_ENABLE", &v) {
            Ok(globs) => globs.iter().for_each(|g| {
                crate::enable(g);
            }),
            Err(e) => env::warn(&e, "the default (all points on)"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_SAMPLE") {
        match env::parse_sample(&v) {
            Ok(rules) => rules.iter().for_each(|(g, n)| {
                if *n == 0 {
                    crate::count_only(g);
                } else {
                    crate::set_sampling(g, *n);
                }
            }),
            Err(e) => env::warn(&e, "timing of every call"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_TRACE") {
        match env::parse_globs("PROFPOINT_TRACE", &v) {
            Ok(globs) => globs.iter().for_each(|g| {
                crate::trace_count(g);
            }),
            Err(e) => env::warn(&e, "no tracepoint counted"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_COMPENSATE") {
        match env::parse_bool("PROFPOINT_COMPENSATE", &v) {
            Ok(on) => crate::compensate(on),
            Err(e) => env::warn(&e, "0 (no compensation)"),
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
        match env::parse_report(&v) {
            Ok(d) => p.from_env = Some(d),
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
    let p = plan();
    let armed = p.opted_in || p.from_env.as_ref().is_some_and(|d| !d.is_empty());
    drop(p);
    if armed {
        crate::overhead::measure();
    }
    // SAFETY: `at_exit` is an `extern "C" fn()` that lives for the whole program.
    if unsafe { libc::atexit(at_exit) } != 0 {
        eprintln!("profpoint: atexit registration failed; no report will be written at exit");
    }
}

/// Arms the report at exit (idempotent).
#[cfg_attr(feature = "off", allow(dead_code))]
pub(crate) fn opt_in() {
    plan().opted_in = true;
    crate::overhead::measure();
}

extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(write_exit_report);
}

fn write_exit_report() {
    // AcqRel: only the first caller writes (exit could be called from two threads at once).
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    let (dests, subtract) = {
        let p = plan();
        let dests = match (&p.from_env, p.opted_in) {
            (Some(d), _) => d.clone(),
            (None, true) => vec![Destination::Stderr],
            (None, false) => return,
        };
        (dests, p.subtract_overhead)
    };
    if dests.is_empty() {
        return;
    }
    let report = Report::collect(&ReportOptions {
        subtract_overhead: subtract,
        final_report: true,
    });
    // The program's own output comes first: flush what it left in stdout's buffer.
    {
        use std::io::Write;
        let _ = std::io::stdout().flush();
    }
    let pid = std::process::id();
    // Relaxed: see INIT_PID.
    let forked = pid != INIT_PID.load(Ordering::Relaxed);
    for d in &dests {
        let d = &d.map_path(|p| exit_path(p, pid, forked));
        if let Err(e) = write_to(&report, d) {
            eprintln!("profpoint: could not write the report to {d:?}: {e}");
        }
    }
}

/// Writes `report` to one destination.
pub(crate) fn write_to(report: &Report, d: &Destination) -> std::io::Result<()> {
    use std::io::Write;
    match d {
        Destination::Stderr => {
            let mut e = std::io::stderr().lock();
            crate::report::write_table(report, &mut e)?;
            e.flush()
        }
        Destination::Stdout => {
            let mut o = std::io::stdout().lock();
            crate::report::write_table(report, &mut o)?;
            o.flush()
        }
        Destination::Json(p) => std::fs::write(p, report.to_json()),
        Destination::Csv(p) => std::fs::write(p, report.to_csv()),
        Destination::Table(p) => std::fs::write(p, report.to_table()),
        Destination::Prometheus(p) => std::fs::write(p, report.to_prometheus()),
        Destination::Svg(p) => std::fs::write(p, report.to_svg()),
        Destination::Pprof(p) => std::fs::write(p, report.to_pprof()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn file_paths_name_the_process_when_asked_or_when_forked() {
        let p = Path::new("/tmp/run.json");
        assert_eq!(exit_path(p, 42, false), Path::new("/tmp/run.json"));
        assert_eq!(exit_path(p, 42, true), Path::new("/tmp/run.json.42"));
        let templ = Path::new("/tmp/run-{pid}.json");
        assert_eq!(exit_path(templ, 42, false), Path::new("/tmp/run-42.json"));
        assert_eq!(exit_path(templ, 43, true), Path::new("/tmp/run-43.json"));
        let two = Path::new("/tmp/{pid}/r-{pid}.json");
        assert_eq!(exit_path(two, 7, true), Path::new("/tmp/7/r-7.json"));
        // A path that is not UTF-8 keeps its bytes.
        use std::os::unix::ffi::OsStrExt;
        let raw = std::ffi::OsStr::from_bytes(b"/tmp/\xff-{pid}");
        let got = exit_path(Path::new(raw), 9, false);
        assert_eq!(got.as_os_str().as_bytes(), b"/tmp/\xff-9");
    }
}
