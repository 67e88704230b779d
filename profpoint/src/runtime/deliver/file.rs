//! How a report reaches a file without harming the host: refused destinations (a FIFO, a
//! device, another user's link or file in a sticky folder), the start-up check of a
//! destination's folder, and the write through an exclusive temporary file renamed over
//! the destination (see the module docs of `deliver`).

use super::reason;
#[cfg(unix)]
use super::{SIGNAL_PATH, STDOUT_CLOSED_AT_START};
use std::sync::atomic::Ordering;

/// Writes `bytes` to descriptor `fd` (1 or 2), borrowed, without std's locks; SIGPIPE held
/// off (`crate::diag`).
#[cfg(unix)]
pub(super) fn write_raw_fd(fd: std::os::fd::RawFd, bytes: &[u8]) -> std::io::Result<()> {
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
/// The same rule for every folder on the way to it: a folder that is another user's symbolic
/// link in a sticky world-writable folder (`/tmp/reports`, a link to a folder of the
/// victim's) is refused, or the report would be written wherever that user chose.
#[cfg(unix)]
pub(crate) fn refused(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    if special(path).is_some() {
        return None;
    }
    let mut on_the_way = std::path::PathBuf::new();
    for c in folder_of(path).components() {
        on_the_way.push(c);
        // A folder missing on the way: nothing is written there (the write says so).
        let m = std::fs::symlink_metadata(&on_the_way).ok()?;
        if m.file_type().is_symlink()
            && let Some(why) = another_users(&on_the_way, &m, "a symbolic link")
        {
            return Some(why);
        }
    }
    let m = std::fs::symlink_metadata(path).ok()?;
    let t = m.file_type();
    if t.is_symlink() || t.is_file() {
        let what = if t.is_symlink() {
            "a symbolic link"
        } else {
            "a file"
        };
        return another_users(path, &m, what);
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

/// Why `path` (`m`: its `lstat`; `what` it is) may not be written: it is another user's
/// (neither this process's nor its folder owner's) in a sticky world-writable folder.
#[cfg(unix)]
fn another_users(path: &std::path::Path, m: &std::fs::Metadata, what: &str) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let folder = folder_of(path);
    let f = std::fs::metadata(folder).ok()?;
    let shared = f.permissions().mode() & 0o1002 == 0o1002;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !shared || m.uid() == me || m.uid() == f.uid() {
        return None;
    }
    Some(format!(
        "{} is {what} of another user (uid {}) in the sticky world-writable folder {}: refused",
        path.display(),
        m.uid(),
        folder.display()
    ))
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
pub(crate) fn write_file(
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
pub(super) const NAME_MAX: usize = 255;

/// The temporary name for destination `name`: `.NAME.RANDOM.tmp`, RANDOM 16 hex digits, NAME
/// cut (at a character's boundary when it is text) so that the whole stays within
/// [`NAME_MAX`] bytes, whatever the destination's own length.
pub(super) fn temp_name(name: &std::ffi::OsStr, random: u64) -> std::ffi::OsString {
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
pub(super) fn random_u64() -> u64 {
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
