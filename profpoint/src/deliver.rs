//! Where reports go and how they are written: the destinations planned at start-up
//! (`PROFPOINT_REPORT`, or stderr for a program that opted in), the path of each report
//! (`{pid}`, `{seq}`, a later copy's suffix, a forked child's `.PID`), and the writing itself:
//! a file through a temporary file renamed over it, stderr and stdout straight to their
//! descriptors on a signal's report.
//!
//! # Mechanism
//! - Relative paths in `PROFPOINT_REPORT` are made absolute by the initialiser (`exit.rs`):
//!   the folder the program started in, whatever folder it is in at exit.
//! - A file is written to `.NAME.PID.N.tmp` in its folder, fsynced and renamed over the
//!   destination, so readers see a whole report; a failed write removes the temporary file.
//! - [`cannot_write`] tells at start-up, without writing anything, why a destination would
//!   fail (its folder missing or not writable), for the start-up warning.
//!
//! The exit report (`exit_report.rs`), the periodic reports (`periodic.rs`) and
//! [`crate::write_report`] write through [`write_to`]; this file calls none of them.

use crate::env::Destination;
use crate::report::Report;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Set by `crate::signals` before it writes a signal's report: the report then neither
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
    let copy = crate::copies::path_suffix();
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
pub(crate) fn cannot_write(path: &std::path::Path) -> Option<String> {
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
