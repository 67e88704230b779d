//! Where reports go and how they are written: the destinations planned at start-up
//! (`PROFPOINT_REPORT`, or stderr for a program that opted in), the path of each report
//! (`{pid}`, `{seq}`, a later copy's suffix, a forked child's `.PID`), and the writing itself:
//! a file through a temporary file renamed over it, stderr and stdout straight to their
//! descriptors on a signal's report.
//!
//! # Mechanism
//! - Relative paths in `PROFPOINT_REPORT` are made absolute by the initialiser (`exit.rs`):
//!   the folder the program started in, whatever folder it is in at exit.
//! - A file is written to a new temporary file in its folder (`O_EXCL | O_NOFOLLOW`, named
//!   `.NAME.RANDOM.tmp` from the system's random source, within `NAME_MAX`), fsynced and
//!   renamed over the destination, so readers see a whole report; the rename replaces the
//!   destination's entry (a symbolic link there too), never a file a link points to. A failed
//!   write removes the temporary file. The destination itself is never opened, so nothing
//!   there (a FIFO) can hold the exit.
//! - [`refused`] refuses, with one line, a destination that exists and is not a regular file
//!   (a FIFO, a device, a socket, a folder), and, in a sticky world-writable folder such as
//!   `/tmp`, a symbolic link or file of another user (as `fs.protected_symlinks` and
//!   `fs.protected_regular` would, whatever the system's settings). On purpose, `/dev/stdout`
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

mod spelling;
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
            "flame graphs need profpoint's `flame` feature (on by default); \
             folded:PATH writes the same stacks for inferno-flamegraph",
        )),
    }
}

/// Writes `bytes` to descriptor `fd` (1 or 2), borrowed, without std's locks; SIGPIPE held
/// off (`crate::diag`).
#[cfg(unix)]
fn write_raw_fd(fd: std::os::fd::RawFd, bytes: &[u8]) -> std::io::Result<()> {
    crate::diag::write_fd(fd, bytes)
}

/// How a path that is not replaced by a file is written (see [`special`]).
#[cfg(unix)]
enum Special {
    /// The process's standard output or error: written to fd 1 or 2, as `stdout` and `stderr`.
    Fd(libc::c_int),
    /// `/dev/null` or `/dev/full`: opened (`O_NONBLOCK`) and written where it is.
    Sink,
}

/// The destinations written as they are rather than replaced, on purpose: `/dev/stdout`,
/// `/dev/stderr` (and their `/dev/fd/N`, `/proc/self/fd/N` names), `/dev/null` and
/// `/dev/full`. Any other path that is not a regular file is refused.
#[cfg(unix)]
fn special(path: &std::path::Path) -> Option<Special> {
    match path.as_os_str().as_encoded_bytes() {
        b"/dev/stdout" | b"/dev/fd/1" | b"/proc/self/fd/1" => Some(Special::Fd(1)),
        b"/dev/stderr" | b"/dev/fd/2" | b"/proc/self/fd/2" => Some(Special::Fd(2)),
        b"/dev/null" | b"/dev/full" => Some(Special::Sink),
        _ => None,
    }
}

/// The folder holding `path` (`.` for a bare name).
fn folder_of(path: &std::path::Path) -> &std::path::Path {
    match path.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => std::path::Path::new("."),
    }
}

/// Why no report may be written at `path` whatever the rights say, `None` when one may: it
/// exists and is not a regular file nor a symbolic link (a FIFO would hold the exit forever, a
/// device would be overwritten), or, in a folder that is sticky and world-writable (`/tmp`),
/// it is a symbolic link or a regular file of another user (neither this process's nor the
/// folder owner's: the rule of `fs.protected_symlinks` and `fs.protected_regular`, kept
/// whatever the system's settings). Found with `lstat`: nothing is opened or followed.
#[cfg(unix)]
pub(crate) fn refused(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    if special(path).is_some() {
        return None;
    }
    let m = std::fs::symlink_metadata(path).ok()?;
    let t = m.file_type();
    if t.is_symlink() || t.is_file() {
        let folder = folder_of(path);
        let f = std::fs::metadata(folder).ok()?;
        let shared = f.permissions().mode() & 0o1002 == 0o1002;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !shared || m.uid() == me || m.uid() == f.uid() {
            return None;
        }
        let what = if t.is_symlink() {
            "a symbolic link"
        } else {
            "a file"
        };
        return Some(format!(
            "{} is {what} of another user (uid {}) in the sticky world-writable folder {}: \
             refused",
            path.display(),
            m.uid(),
            folder.display()
        ));
    }
    let what = if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Some(format!(
        "{} is {what}, not a regular file: refused",
        path.display()
    ))
}

/// Elsewhere: a folder is refused.
#[cfg(not(unix))]
pub(crate) fn refused(path: &std::path::Path) -> Option<String> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_dir())
        .map(|_| {
            format!(
                "{} is a folder, not a regular file: refused",
                path.display()
            )
        })
}

/// Why [`write_file`] would fail on `path` now, as far as can be told without writing
/// anything: the folder it goes in is missing, not a folder or not writable. `None` when
/// nothing stands in the way (a full disk is still found only by writing). What is refused
/// whatever the rights is [`refused`]'s.
pub(crate) fn cannot_write(path: &std::path::Path) -> Option<String> {
    #[cfg(unix)]
    if special(path).is_some() {
        return None;
    }
    let folder = folder_of(path);
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

/// Elsewhere: a folder's read-only mark does not stop new files in it on Windows.
#[cfg(not(unix))]
fn not_writable(_: &std::path::Path) -> Option<std::io::Error> {
    None
}

/// Writes the report at `path`. A file is replaced whole, so that a reader sees the old file
/// or the new one: a temporary file is made beside it (see [`create_temp`]), written, fsynced
/// and renamed over `path`, which replaces the directory entry itself, a symbolic link there
/// included, never a file it points to (a failed write removes the temporary file). What
/// [`refused`] refuses is an error; the [`special`] paths are written as they are.
fn write_file(
    path: &std::path::Path,
    fill: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(s) = special(path) {
        return write_special(path, s, fill);
    }
    if let Some(why) = refused(path) {
        return Err(std::io::Error::other(why));
    }
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::other(format!(
            "{} does not name a file",
            path.display()
        )));
    };
    let (tmp, mut f) = create_temp(folder_of(path), name)?;
    let written = (|| {
        fill(&mut f)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes a [`special`] path: the standard streams through their descriptors (as the
/// `stdout` and `stderr` destinations), a sink opened without blocking and checked to be a
/// character device before anything is written.
#[cfg(unix)]
fn write_special(
    path: &std::path::Path,
    s: Special,
    fill: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    match s {
        Special::Fd(fd) => {
            let mut bytes = Vec::new();
            fill(&mut bytes)?;
            // Relaxed: see STDOUT_CLOSED_AT_START.
            if fd == 1 && STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
                return Err(std::io::Error::other(
                    "standard output was closed when the program started",
                ));
            }
            // Not on a signal's report: see SIGNAL_PATH.
            if SIGNAL_PATH.load(Ordering::Relaxed) {
                return write_raw_fd(fd, &bytes);
            }
            if fd == 1 {
                use std::io::Write;
                std::io::stdout().lock().flush()?;
                return write_raw_fd(fd, &bytes);
            }
            // Held: the report is not interleaved with the program's own lines.
            let _lock = std::io::stderr().lock();
            write_raw_fd(fd, &bytes)
        }
        Special::Sink => {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(path)?;
            if !f.metadata()?.file_type().is_char_device() {
                return Err(std::io::Error::other(format!(
                    "{} is not a character device: refused",
                    path.display()
                )));
            }
            fill(&mut f)
        }
    }
}

/// Makes the temporary file beside the destination `name` in `folder`: created new
/// (`O_CREAT | O_EXCL`, which follows no symbolic link; `O_NOFOLLOW`, `O_CLOEXEC` too), under
/// a name nobody can guess ([`temp_name`]); a name taken already is tried again with other
/// random bits.
fn create_temp(
    folder: &std::path::Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let mut last = None;
    for _ in 0..16 {
        let tmp = folder.join(temp_name(name, random_u64()));
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NOFOLLOW | libc::O_CLOEXEC);
        match o.open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::ErrorKind::AlreadyExists.into()))
}

/// Longest file name most file systems take (`NAME_MAX`), in bytes.
const NAME_MAX: usize = 255;

/// The temporary name for destination `name`: `.NAME.RANDOM.tmp`, RANDOM 16 hex digits, NAME
/// cut (at a character's boundary when it is text) so that the whole stays within
/// [`NAME_MAX`] bytes, whatever the destination's own length.
fn temp_name(name: &std::ffi::OsStr, random: u64) -> std::ffi::OsString {
    let tail = format!(".{random:016x}.tmp");
    let room = NAME_MAX - 1 - tail.len();
    let bytes = name.as_encoded_bytes();
    let mut cut = bytes.len().min(room);
    if let Ok(text) = std::str::from_utf8(bytes) {
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
    }
    let mut out = Vec::with_capacity(1 + cut + tail.len());
    out.push(b'.');
    out.extend_from_slice(&bytes[..cut]);
    out.extend_from_slice(tail.as_bytes());
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStringExt::from_vec(out)
    }
    // Elsewhere the bytes are not the system's: the name as text, lossy.
    #[cfg(not(unix))]
    {
        String::from_utf8_lossy(&out).into_owned().into()
    }
}

/// 64 bits nobody can predict: the system's random source (`getrandom`; `/dev/urandom`), or,
/// failing both, std's per-process random hash keys over the time and a counter.
fn random_u64() -> u64 {
    #[cfg(unix)]
    let mut b = [0u8; 8];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `b` is a writable buffer of 8 bytes.
        let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), libc::GRND_NONBLOCK) };
        if n == 8 {
            return u64::from_ne_bytes(b);
        }
    }
    #[cfg(unix)]
    {
        use std::io::Read;
        if let Ok(mut f) = std::fs::File::open("/dev/urandom")
            && f.read_exact(&mut b).is_ok()
        {
            return u64::from_ne_bytes(b);
        }
    }
    use std::hash::BuildHasher;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: only distinctness matters.
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((seq, now, std::process::id()))
}

#[cfg(test)]
mod tests;
