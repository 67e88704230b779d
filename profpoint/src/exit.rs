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
//!   `panic = "abort"` panic. SIGINT, SIGTERM and SIGHUP are handled by `crate::signals`,
//!   which writes this report from a thread of its own; `DONE` lets exactly one of them
//!   write it.
//! - glibc runs the main thread's thread-local destructors before `atexit` handlers, so the
//!   main thread's shard is already back on the free list when the report is read: its counts
//!   are still there (shards keep their counts). Other threads may still be running; the
//!   report is a snapshot of that moment.
//! - Relative paths in `PROFPOINT_REPORT` are made absolute by the initialiser: the folder the
//!   program started in, whatever folder it is in at exit.
//! - A file is written to `.NAME.PID.N.tmp` in its folder, fsynced and renamed over the
//!   destination, so readers see a whole report; a failed write removes the temporary file.
//! - A destination that cannot be written gets one line on stderr (which, and why), and the
//!   points table goes to stderr instead: a report is never dropped silently. The program's
//!   exit status is not changed.
//! - Said at start-up rather than after the run, one line each: a file destination whose
//!   folder is missing or not writable (checked with `access`, nothing created; the path is
//!   the one the exit report will use), and a glob of `PROFPOINT_DISABLE`, `PROFPOINT_ENABLE`,
//!   `PROFPOINT_SAMPLE` or `PROFPOINT_TRACE` that matches no point (tracepoint) of this copy.

use crate::env::{self, Destination};
use crate::report::{Report, ReportOptions, collect};
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

/// Whether the at-exit report was written, or is being written, and by which process:
/// 0 before; otherwise the process id shifted left by one, with bit 0 set once it is written.
/// A forked child sees its parent's id and writes its own report.
static DONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set by `crate::signals` before it writes a signal's report: the report then neither
/// flushes stdout nor takes std's stdout or stderr lock (a program thread may hold one for
/// good, and the report would wait forever); it writes to fd 1 and fd 2 directly.
pub(crate) static SIGNAL_PATH: AtomicBool = AtomicBool::new(false);

/// Whether a signal's report is armed (`PROFPOINT_SIGNALS`, default on).
static SIGNALS_WANTED: AtomicBool = AtomicBool::new(true);

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

/// The process that ran the initialiser: a `fork`ed child that exits normally runs the at-exit
/// report too, and must not overwrite its parent's files.
static INIT_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Whether fd 1 was closed when the initialiser ran (Rust's runtime then opens /dev/null on
/// it, and a report written there would vanish without an error).
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Where the at-exit report of this copy of profpoint goes for a file destination `path`:
/// `copy` (a later copy's object name, see `crate::copies`) is appended first, so the copies
/// in one process never share a file; then [`pid_path`].
fn exit_path(
    path: &std::path::Path,
    copy: Option<&str>,
    pid: u32,
    forked: bool,
) -> std::path::PathBuf {
    match copy {
        Some(name) => {
            let mut p = path.as_os_str().to_owned();
            p.push(format!(".{name}"));
            pid_path(std::path::Path::new(&p), pid, forked)
        }
        None => pid_path(path, pid, forked),
    }
}

/// Where the at-exit report of process `pid` goes for a file destination `path`: `{pid}` in
/// the path becomes the process id; in a forked child (`forked`), a path without `{pid}` gets
/// `.PID` appended, so parent and children each keep their own report.
fn pid_path(path: &std::path::Path, pid: u32, forked: bool) -> std::path::PathBuf {
    if let Some(p) = replace_token(path.as_os_str(), "{pid}", u64::from(pid)) {
        return p.into();
    }
    if forked {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{pid}"));
        return p.into();
    }
    path.to_path_buf()
}

/// `s` with every `token` (`{pid}`, `{seq}`) replaced by `value`, or `None` when it has none.
/// On the system's own units (bytes on Unix, UTF-16 on Windows): a path that is not Unicode
/// keeps them.
#[cfg(unix)]
fn replace_token(s: &std::ffi::OsStr, token: &str, value: u64) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let bytes = s.as_bytes();
    let pat = token.as_bytes();
    bytes.windows(pat.len()).position(|w| w == pat)?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(at) = rest.windows(pat.len()).position(|w| w == pat) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(value.to_string().as_bytes());
        rest = &rest[at + pat.len()..];
    }
    out.extend_from_slice(rest);
    Some(std::ffi::OsString::from_vec(out))
}

/// See the Unix version.
#[cfg(windows)]
fn replace_token(s: &std::ffi::OsStr, token: &str, value: u64) -> Option<std::ffi::OsString> {
    use std::os::windows::ffi::{OsStrExt, OsStringExt};
    let units: Vec<u16> = s.encode_wide().collect();
    let pat: Vec<u16> = token.encode_utf16().collect();
    units.windows(pat.len()).position(|w| w == pat)?;
    let mut out = Vec::with_capacity(units.len());
    let mut rest = units.as_slice();
    while let Some(at) = rest.windows(pat.len()).position(|w| w == pat) {
        out.extend_from_slice(&rest[..at]);
        out.extend(value.to_string().encode_utf16());
        rest = &rest[at + pat.len()..];
    }
    out.extend_from_slice(rest);
    Some(std::ffi::OsString::from_wide(&out))
}

/// `path` made absolute against the current working directory (unchanged when it already is,
/// or when the working directory cannot be read).
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
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
    crate::copies::init();
    // Before Rust's runtime puts /dev/null on a closed fd 1 (it does so in `main`'s set-up).
    #[cfg(unix)]
    {
        // SAFETY: F_GETFD on an fd number only reads its flags.
        let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
        STDOUT_CLOSED_AT_START.store(closed, Ordering::Relaxed);
    }
    crate::fork::init();
    crate::clock::init();
    if let Some(v) = env::var("PROFPOINT_DISABLE") {
        match env::parse_globs("PROFPOINT_DISABLE", &v) {
            Ok(globs) => globs.iter().for_each(|g| {
                let n = crate::disable(g);
                warn_unmatched("PROFPOINT_DISABLE", g, n, Names::Points);
            }),
            Err(e) => env::warn(&e, "no point disabled"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_ENABLE") {
        match env::parse_globs("PROFPOINT_ENABLE", &v) {
            Ok(globs) => globs.iter().for_each(|g| {
                let n = crate::enable(g);
                warn_unmatched("PROFPOINT_ENABLE", g, n, Names::Points);
            }),
            Err(e) => env::warn(&e, "the default (all points on)"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_SAMPLE") {
        match env::parse_sample(&v) {
            Ok(rules) => rules.iter().for_each(|(g, n)| {
                let matched = if *n == 0 {
                    crate::count_only(g)
                } else {
                    crate::set_sampling(g, *n)
                };
                // A bare `N` has no glob of the user's to warn about.
                if v.contains('=') {
                    warn_unmatched("PROFPOINT_SAMPLE", g, matched, Names::Points);
                }
            }),
            Err(e) => env::warn(&e, "timing of every call"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_TRACE") {
        match env::parse_globs("PROFPOINT_TRACE", &v) {
            Ok(globs) => globs.iter().for_each(|g| {
                let n = crate::trace_count(g);
                warn_unmatched("PROFPOINT_TRACE", g, n, Names::Tracepoints);
            }),
            Err(e) => env::warn(&e, "no tracepoint counted"),
        }
    }
    if let Some(v) = env::var("PROFPOINT_BUDGET") {
        match env::parse_budget(&v) {
            Ok(b) => crate::budget::set(b),
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
            Ok(every) => crate::periodic::set_every(every),
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
        match env::parse_report(&v) {
            // Relative paths name files in the folder the program started in, not the one it
            // happens to be in at exit.
            Ok(d) => {
                let resolved: Vec<Destination> = d.iter().map(|d| d.map_path(absolute)).collect();
                for (given, at) in d.iter().zip(&resolved) {
                    warn_unwritable(given, at);
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
    #[cfg(feature = "serve")]
    crate::serve::start_from_env();
    #[cfg(not(feature = "serve"))]
    if env::var("PROFPOINT_SERVE").is_some() {
        eprintln!(
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
        eprintln!("profpoint: atexit registration failed; no report will be written at exit");
    }
}

/// The names a glob of a variable is matched against.
#[derive(Clone, Copy)]
enum Names {
    Points,
    Tracepoints,
}

/// One warning line for a glob of `var` that matched none of this copy's points (or
/// tracepoints), `matched` being how many it did: how many there are, a name that looks like
/// the glob, and a character the glob may have meant as another syntax's wildcard.
///
/// Another copy of profpoint seen in this process (a library's, see `crate::copies`) may hold
/// the points this glob names, and this copy cannot read that copy's names: then no warning.
/// A library loaded later (`dlopen`) is not seen at all; the line names this copy's object,
/// so a glob meant for such a library's points reads as what it is.
fn warn_unmatched(var: &str, glob: &str, matched: usize, names: Names) {
    if matched > 0 || crate::copies::all().len() > 1 {
        return;
    }
    let (all, what): (Vec<&str>, &str) = match names {
        Names::Points => (crate::points().map(|p| p.name()).collect(), "points"),
        Names::Tracepoints => (
            crate::tracepoint::all().iter().map(|t| t.name()).collect(),
            "tracepoints",
        ),
    };
    let object = crate::copies::own_name();
    let mut line = match all.len() {
        0 => format!("profpoint: {var}={glob}: matches nothing: there are no {what} in {object}"),
        n => format!("profpoint: {var}={glob}: matches none of the {n} {what} in {object}"),
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
        line.push_str(&format!(" (names look like {like})"));
    }
    if let Some(c) = crate::glob::foreign_syntax(glob) {
        line.push_str(&format!("; only * and ? are wildcards, {c} matches itself"));
    }
    eprintln!("{line}");
}

/// One warning line at start-up for a file destination of `PROFPOINT_REPORT` that cannot be
/// written as things stand: `given` as the variable spells it, `at` made absolute. The path
/// is the one the exit report will use ([`destination_for`]); nothing is created or written.
fn warn_unwritable(given: &Destination, at: &Destination) {
    // Report 1: a `{seq}` in the path is checked as the first of a series.
    let at = destination_for(at, 1);
    let Some(why) = at.path().and_then(cannot_write) else {
        return;
    };
    eprintln!(
        "profpoint: PROFPOINT_REPORT={given}: {why}; the points table will go to stderr at \
         exit instead, unless that changes by then"
    );
}

/// Arms the report at exit (idempotent).
#[cfg_attr(feature = "off", allow(dead_code))]
pub(crate) fn opt_in() {
    plan().opted_in = true;
    crate::overhead::measure();
    arm_extras();
}

/// What comes with an armed report: the periodic reports when `PROFPOINT_REPORT_EVERY` asks
/// (`crate::periodic`), and the report on SIGINT, SIGTERM and SIGHUP (`crate::signals`), unless
/// `PROFPOINT_SIGNALS=0`.
fn arm_extras() {
    crate::periodic::start();
    // Relaxed: set by the initialiser, before.
    if SIGNALS_WANTED.load(Ordering::Relaxed) {
        crate::signals::arm();
    }
}

extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(write_exit_report);
    // A signal that arrived while it was written ends the process now.
    crate::signals::after_exit_report();
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

/// The destinations of the exit report and whether to subtract the overhead; `None` when no
/// report was asked for.
pub(crate) fn planned() -> Option<(Vec<Destination>, bool)> {
    let p = plan();
    let dests = match (&p.from_env, p.opted_in) {
        (Some(d), _) => d.clone(),
        (None, true) => vec![Destination::Stderr],
        (None, false) => return None,
    };
    (!dests.is_empty()).then_some((dests, p.subtract_overhead))
}

/// Where report number `seq` of this process goes for destination `d`: `{seq}` and `{pid}` in a
/// file path replaced, a later copy's suffix and a forked child's `.PID` added.
pub(crate) fn destination_for(d: &Destination, seq: u64) -> Destination {
    let pid = std::process::id();
    // Relaxed: see INIT_PID.
    let forked = pid != INIT_PID.load(Ordering::Relaxed);
    let copy = crate::copies::path_suffix();
    d.map_path(|p| {
        let p = match replace_token(p.as_os_str(), "{seq}", seq) {
            Some(s) => std::path::PathBuf::from(s),
            None => p.to_path_buf(),
        };
        exit_path(&p, copy.as_deref(), pid, forked)
    })
}

fn write_claimed() {
    let Some((dests, subtract)) = planned() else {
        return;
    };
    // The last report of a series (PROFPOINT_REPORT_EVERY): no periodic one lands after it.
    let series = crate::periodic::end();
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
    let copy = crate::copies::path_suffix();
    if let Some(name) = &copy
        && dests.contains(&Destination::Stderr)
    {
        // Two tables on stderr: say whose this one is.
        eprintln!(
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
                eprintln!(
                    "profpoint: could not write the report to {d}: {}; {}",
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

/// An I/O error in words: the system's message without its ` (os error N)` suffix, and a
/// closed standard stream said as such.
pub(crate) fn reason(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::EBADF) {
        return "it is closed".to_string();
    }
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(at) if s.ends_with(')') => s[..at].to_string(),
        _ => s,
    }
}

/// Writes `report` to one destination.
pub(crate) fn write_to(report: &Report, d: &Destination) -> std::io::Result<()> {
    use std::io::Write;
    match d {
        Destination::Stderr => {
            #[cfg(unix)]
            if SIGNAL_PATH.load(Ordering::Relaxed) {
                let mut table = Vec::new();
                crate::report::write_table(report, &mut table)?;
                return write_raw_fd(2, &table);
            }
            let mut e = std::io::stderr().lock();
            crate::report::write_table(report, &mut e)?;
            e.flush()
        }
        Destination::Stdout => {
            // Relaxed: see STDOUT_CLOSED_AT_START.
            if STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
                return Err(std::io::Error::other(
                    "standard output was closed when the program started",
                ));
            }
            let mut table = Vec::new();
            crate::report::write_table(report, &mut table)?;
            // Whatever the program left in the buffer first, then the table, straight to fd 1:
            // `std::io::stdout()` treats a closed fd 1 as a sink, and the report would vanish.
            #[cfg(unix)]
            {
                if !SIGNAL_PATH.load(Ordering::Relaxed) {
                    std::io::stdout().lock().flush()?;
                }
                write_raw_fd(1, &table)
            }
            // Windows: std reports a missing standard output handle as a sink too; the
            // table goes through std.
            #[cfg(not(unix))]
            {
                let mut o = std::io::stdout().lock();
                o.write_all(&table)?;
                o.flush()
            }
        }
        // Streamed: a large report never exists whole as JSON text in memory.
        Destination::Json(p) => write_file(p, &mut |f| report.write_json(f)),
        Destination::Csv(p) => write_file(p, &mut |f| f.write_all(report.to_csv().as_bytes())),
        Destination::Table(p) => write_file(p, &mut |f| crate::report::write_table(report, f)),
        Destination::Prometheus(p) => {
            write_file(p, &mut |f| f.write_all(report.to_prometheus().as_bytes()))
        }
        Destination::Svg(p) => write_file(p, &mut |f| f.write_all(report.to_svg().as_bytes())),
        Destination::Pprof(p) => write_file(p, &mut |f| f.write_all(&report.to_pprof())),
    }
}

/// Writes `bytes` to descriptor `fd` (1 or 2), borrowed, without std's locks.
#[cfg(unix)]
fn write_raw_fd(fd: std::os::fd::RawFd, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    // SAFETY: `fd` is only borrowed (ManuallyDrop: never closed here); a closed fd makes the
    // write fail with EBADF, which is what we want to know.
    let mut f = std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd)
    });
    f.write_all(bytes)
}

/// How [`write_file`] writes a path.
enum FileTarget {
    /// Opened and written where it is: it exists and is not a regular file.
    InPlace,
    /// Replaced whole by a temporary file renamed over this regular file (or file to be).
    Replace(std::path::PathBuf),
}

/// How [`write_file`] writes `path`: in place, or by replacing which file (a symbolic link's
/// target, not the link).
fn file_target(path: &std::path::Path) -> std::io::Result<FileTarget> {
    Ok(match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => FileTarget::InPlace,
        Ok(_) if path.is_symlink() => FileTarget::Replace(std::fs::canonicalize(path)?),
        _ => FileTarget::Replace(path.to_path_buf()),
    })
}

/// Why [`write_file`] would fail on `path` now, as far as can be told without writing
/// anything: the folder of the file it replaces is missing, not a folder or not writable; a
/// file written in place is a folder or not writable. `None` when nothing stands in the way
/// (a full disk is still found only by writing).
fn cannot_write(path: &std::path::Path) -> Option<String> {
    let target = match file_target(path) {
        Err(e) => return Some(format!("{}: {}", path.display(), reason(&e))),
        Ok(FileTarget::InPlace) => {
            if path.is_dir() {
                return Some(format!("{} is a folder", path.display()));
            }
            return not_writable(path)
                .map(|e| format!("{} is not writable ({})", path.display(), reason(&e)));
        }
        Ok(FileTarget::Replace(target)) => target,
    };
    let folder = match target.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => std::path::Path::new("."),
    };
    match std::fs::metadata(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(format!("folder {} does not exist", folder.display()))
        }
        Err(e) => Some(format!("folder {}: {}", folder.display(), reason(&e))),
        Ok(m) if !m.is_dir() => Some(format!("{} is not a folder", folder.display())),
        Ok(_) => not_writable(folder).map(|e| {
            format!(
                "folder {} is not writable ({})",
                folder.display(),
                reason(&e)
            )
        }),
    }
}

/// The system's answer when asked whether this process may write `path` (`access(W_OK)`: the
/// real user's rights, a read-only file system), `None` when it may.
#[cfg(unix)]
fn not_writable(path: &std::path::Path) -> Option<std::io::Error> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path alive across the call; `access` only reads it.
    (unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0).then(std::io::Error::last_os_error)
}

/// Elsewhere: a file marked read-only (a folder's read-only mark does not stop new files in
/// it on Windows).
#[cfg(not(unix))]
fn not_writable(path: &std::path::Path) -> Option<std::io::Error> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() && m.permissions().readonly() => {
            Some(std::io::ErrorKind::PermissionDenied.into())
        }
        _ => None,
    }
}

/// Temporary files made by this process (their names stay unique across threads).
static TMP_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Writes `bytes` to `path` so that a reader sees the old file or the new one, whole: a
/// temporary file `.NAME.PID.SEQ.tmp` in the same folder, written, fsynced, then renamed over
/// `path` (a failed write removes it). A path that names something other than a regular file
/// (`/dev/stdout`, `/dev/full`, a FIFO) is written in place; a symbolic link to a regular file
/// has its target replaced, not the link.
fn write_file(
    path: &std::path::Path,
    fill: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let in_place = |fill: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>| {
        let mut f = std::fs::File::create(path)?;
        fill(&mut f)
    };
    let target = match file_target(path)? {
        FileTarget::InPlace => return in_place(fill),
        FileTarget::Replace(target) => target,
    };
    let Some(name) = target.file_name() else {
        // `..` or `/`: let the system say why it is not a file.
        return in_place(fill);
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    // Relaxed: only uniqueness matters.
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    tmp_name.push(format!(".{}.{seq}.tmp", std::process::id()));
    let tmp = target.with_file_name(tmp_name);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        fill(&mut f)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &target)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn file_paths_name_the_process_when_asked_or_when_forked() {
        let p = Path::new("/tmp/run.json");
        assert_eq!(pid_path(p, 42, false), Path::new("/tmp/run.json"));
        assert_eq!(pid_path(p, 42, true), Path::new("/tmp/run.json.42"));
        let templ = Path::new("/tmp/run-{pid}.json");
        assert_eq!(pid_path(templ, 42, false), Path::new("/tmp/run-42.json"));
        assert_eq!(pid_path(templ, 43, true), Path::new("/tmp/run-43.json"));
        let two = Path::new("/tmp/{pid}/r-{pid}.json");
        assert_eq!(pid_path(two, 7, true), Path::new("/tmp/7/r-7.json"));
        let seq = Path::new("/tmp/run-{seq}.json");
        assert_eq!(
            destination_for(&Destination::Json(seq.into()), 12),
            Destination::Json("/tmp/run-12.json".into())
        );
        #[cfg(unix)]
        not_utf8_keeps_its_bytes();
    }

    #[cfg(unix)]
    fn not_utf8_keeps_its_bytes() {
        // A path that is not UTF-8 keeps its bytes.
        use std::os::unix::ffi::OsStrExt;
        let raw = std::ffi::OsStr::from_bytes(b"/tmp/\xff-{pid}");
        let got = pid_path(Path::new(raw), 9, false);
        assert_eq!(got.as_os_str().as_bytes(), b"/tmp/\xff-9");
    }

    #[test]
    fn a_later_copy_names_its_files_after_its_object() {
        let p = Path::new("/tmp/run.json");
        assert_eq!(exit_path(p, None, 42, false), Path::new("/tmp/run.json"));
        assert_eq!(
            exit_path(p, Some("libplugin.so"), 42, false),
            Path::new("/tmp/run.json.libplugin.so")
        );
        assert_eq!(
            exit_path(p, Some("libplugin.so"), 42, true),
            Path::new("/tmp/run.json.libplugin.so.42")
        );
        let templ = Path::new("/tmp/run-{pid}.json");
        assert_eq!(
            exit_path(templ, Some("libplugin.so"), 7, false),
            Path::new("/tmp/run-7.json.libplugin.so")
        );
    }
}
