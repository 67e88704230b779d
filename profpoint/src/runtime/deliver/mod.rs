//! Where reports go and how they are written: the destinations planned at start-up
//! (`PROFPOINT_REPORT`, or stderr for a program that opted in), the path of each report
//! (`{pid}`, `{seq}`, a later copy's suffix, a forked child's `.PID`), and the writing itself:
//! a file through a temporary file renamed over it, stderr and stdout straight to their
//! descriptors on a signal's report.
//!
//! # Mechanism
//! - Relative paths in `PROFPOINT_REPORT` are made absolute by the initialiser (`exit.rs`):
//!   the folder the program started in, whatever folder it is in at exit.
//! - On Unix the destination's folder is opened one component at a time from `/` (or the
//!   working directory for a relative path), each an `openat(O_DIRECTORY | O_NOFOLLOW)` on
//!   the step before; a symbolic link on the way is judged on that descriptor (the rule
//!   below) before it is followed. The file is then written to a new temporary file made in
//!   that folder's descriptor (`O_EXCL | O_NOFOLLOW`, named `.NAME.RANDOM.tmp` from the
//!   system's random source, within `NAME_MAX`), fsynced and renamed over the destination in
//!   the same descriptor (`renameat`), so readers see a whole report and no folder swapped
//!   meanwhile changes where it goes; the rename replaces the destination's entry (a symbolic
//!   link there too), never a file a link points to. A regular file of this user's keeps its
//!   mode. A failed write removes the temporary file, and so does a signal's report given up
//!   at its deadline. The destination itself is never opened, so nothing there (a FIFO) can
//!   hold the exit.
//! - [`refused`] refuses, with one line, a destination that exists and is not a regular file
//!   (a FIFO, a device, a socket, a folder), and, in a sticky world-writable folder such as
//!   `/tmp`, a symbolic link or file of another user, at the destination or (a link) as a
//!   folder on the way to it (as `fs.protected_symlinks` and `fs.protected_regular` would,
//!   whatever the system's settings). On purpose, `/dev/stdout`
//!   and `/dev/stderr` (and their `/dev/fd/N` names) are written to fd 1 and fd 2, and
//!   `/dev/null` and `/dev/full` where they are.
//! - [`cannot_write`] tells at start-up, without writing anything, why a destination would
//!   fail (its folder missing or not writable), for the start-up warning; the initialiser
//!   drops a destination [`refused`] refuses then, and the table goes to stderr instead.
//!
//! The exit report (`exit_report.rs`), the periodic reports (`periodic.rs`) and
//! [`crate::write_report`] write through [`write_to`]; this file calls none of them.

use crate::report::Report;
use std::path::PathBuf;

mod file;
mod spelling;
#[cfg(unix)]
pub(crate) use file::remove_temporaries;
pub(crate) use file::write_file;
#[cfg(unix)]
use file::write_raw_fd;
pub(crate) use file::{cannot_write, refused};
pub(crate) use spelling::parse_report;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// The points table on standard error.
    Stderr,
    /// The points table on standard output.
    Stdout,
    /// The JSON report, written to a file.
    Json(PathBuf),
    /// The points as CSV, written to a file.
    Csv(PathBuf),
    /// The points table, written to a file.
    Table(PathBuf),
    /// The Prometheus text format, written to a file.
    Prometheus(PathBuf),
    /// An SVG bar chart of the points, written to a file.
    Svg(PathBuf),
    /// A pprof profile of the points, written to a file.
    Pprof(PathBuf),
    /// Folded stacks (inferno's input): the sampled stacks when the report has them, else the
    /// points tree (self time in ns).
    Folded(PathBuf),
    /// A flame graph SVG (drawn by inferno) of the same stacks as [`Destination::Folded`].
    Flame(PathBuf),
    /// Folded stacks of the points tree, always (self time in ns).
    PointsFolded(PathBuf),
    /// A flame graph SVG of the points tree, always.
    PointsFlame(PathBuf),
    /// A pprof profile with stacks (locations chained caller to callee) of the same stacks as
    /// [`Destination::Folded`].
    PprofStacks(PathBuf),
    /// A pprof profile with stacks of the points tree, always.
    PointsPprof(PathBuf),
}

impl Destination {
    /// Its file path, for a file destination.
    pub(crate) fn path(&self) -> Option<&std::path::Path> {
        match self {
            Destination::Stderr | Destination::Stdout => None,
            Destination::Json(p)
            | Destination::Csv(p)
            | Destination::Table(p)
            | Destination::Prometheus(p)
            | Destination::Svg(p)
            | Destination::Pprof(p)
            | Destination::Folded(p)
            | Destination::Flame(p)
            | Destination::PointsFolded(p)
            | Destination::PointsFlame(p)
            | Destination::PprofStacks(p)
            | Destination::PointsPprof(p) => Some(p),
        }
    }

    /// The same destination with its file path (if any) changed by `f`.
    pub(crate) fn map_path(&self, f: impl FnOnce(&std::path::Path) -> PathBuf) -> Destination {
        match self {
            Destination::Stderr => Destination::Stderr,
            Destination::Stdout => Destination::Stdout,
            Destination::Json(p) => Destination::Json(f(p)),
            Destination::Csv(p) => Destination::Csv(f(p)),
            Destination::Table(p) => Destination::Table(f(p)),
            Destination::Prometheus(p) => Destination::Prometheus(f(p)),
            Destination::Svg(p) => Destination::Svg(f(p)),
            Destination::Pprof(p) => Destination::Pprof(f(p)),
            Destination::Folded(p) => Destination::Folded(f(p)),
            Destination::Flame(p) => Destination::Flame(f(p)),
            Destination::PointsFolded(p) => Destination::PointsFolded(f(p)),
            Destination::PointsFlame(p) => Destination::PointsFlame(f(p)),
            Destination::PprofStacks(p) => Destination::PprofStacks(f(p)),
            Destination::PointsPprof(p) => Destination::PointsPprof(f(p)),
        }
    }
}

/// Where the exit report goes (and the periodic reports: the same destinations).
#[derive(Debug)]
pub(crate) struct ExitPlan {
    /// Destinations chosen by `PROFPOINT_REPORT`, if it was set (and valid).
    pub(crate) from_env: Option<Vec<Destination>>,
    /// The program opted in.
    pub(crate) opted_in: bool,
    pub(crate) subtract_overhead: bool,
}

static PLAN: Mutex<ExitPlan> = Mutex::new(ExitPlan {
    from_env: None,
    opted_in: false,
    subtract_overhead: false,
});

/// Set by `super::signals` before it writes a signal's report: the report then neither
/// flushes stdout nor takes std's stdout or stderr lock (a program thread may hold one for
/// good, and the report would wait forever); it writes to fd 1 and fd 2 directly.
pub(crate) static SIGNAL_PATH: AtomicBool = AtomicBool::new(false);

/// The process that ran the initialiser: a `fork`ed child that exits normally runs the at-exit
/// report too, and must not overwrite its parent's files.
pub(crate) static INIT_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Whether fd 1 was closed when the initialiser ran (Rust's runtime then opens /dev/null on
/// it, and a report written there would vanish without an error).
pub(crate) static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Where the at-exit report of this copy of profpoint goes for a file destination `path`:
/// `copy` (a later copy's object name, see `super::copies`) is appended first, so the copies
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
pub(crate) fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

pub(crate) fn plan() -> std::sync::MutexGuard<'static, ExitPlan> {
    // Every update is a single field store: a poisoned lock still holds a consistent plan.
    PLAN.lock().unwrap_or_else(|e| e.into_inner())
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
    let copy = super::copies::path_suffix();
    d.map_path(|p| {
        let p = match replace_token(p.as_os_str(), "{seq}", seq) {
            Some(s) => std::path::PathBuf::from(s),
            None => p.to_path_buf(),
        };
        exit_path(&p, copy.as_deref(), pid, forked)
    })
}

/// An I/O error in words: the system's message without its ` (os error N)` suffix, and a
/// closed standard stream said as such.
pub(crate) fn reason(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::EBADF) {
        return "it is closed".to_string();
    }
    if e.kind() == std::io::ErrorKind::TimedOut && e.raw_os_error().is_none() {
        // `diag::write_fd` gave up on a reader that took nothing.
        return format!(
            "its reader took nothing for {} s",
            crate::diag::STALL.as_secs()
        );
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
            let mut table = Vec::new();
            crate::report::write_table(report, &mut table)?;
            // Held: the table is not interleaved with the program's own lines.
            let _lock = std::io::stderr().lock();
            crate::diag::write_fd(2, &table)
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
        Destination::Folded(p) => write_file(p, &mut |f| f.write_all(report.folded().as_bytes())),
        Destination::PointsFolded(p) => {
            write_file(p, &mut |f| f.write_all(report.points_folded().as_bytes()))
        }
        #[cfg(feature = "flame")]
        Destination::Flame(p) => write_file(p, &mut |f| f.write_all(report.flame_svg().as_bytes())),
        #[cfg(feature = "flame")]
        Destination::PointsFlame(p) => write_file(p, &mut |f| {
            f.write_all(report.points_flame_svg().as_bytes())
        }),
        Destination::PprofStacks(p) => {
            write_file(p, &mut |f| f.write_all(&report.to_pprof_stacks()))
        }
        Destination::PointsPprof(p) => {
            write_file(p, &mut |f| f.write_all(&report.to_points_pprof()))
        }
        #[cfg(not(feature = "flame"))]
        Destination::Flame(_) | Destination::PointsFlame(_) => Err(std::io::Error::other(
            "flame graphs need profpoint's `flame` feature (features = [\"flame\"]); \
             folded:PATH writes the same stacks for inferno-flamegraph",
        )),
    }
}

#[cfg(test)]
mod tests;
