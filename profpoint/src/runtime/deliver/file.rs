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
/// whatever the system's settings). The same rule for every folder on the way to it: a folder
/// that is another user's symbolic link in a sticky world-writable folder (`/tmp/reports`, a
/// link to a folder of the victim's) is refused, or the report would be written wherever that
/// user chose. Decided by the same walk [`write_file`] makes ([`open_folder`],
/// [`check_entry`]): folders opened, nothing created, the destination never opened.
#[cfg(unix)]
pub(crate) fn refused(path: &std::path::Path) -> Option<String> {
    if special(path).is_some() {
        return None;
    }
    let name = path.file_name()?;
    match open_folder(folder_of(path)) {
        // A folder missing on the way: nothing is written there (the write says so).
        Err(Walk::Io(_)) => None,
        Err(Walk::Refused(why)) => Some(why),
        Ok(f) => check_entry(&f, name).err(),
    }
}

/// A folder opened by [`open_folder`]: its descriptor, its `fstat`, and the path it was
/// reached by (for messages).
#[cfg(unix)]
struct Folder {
    fd: std::os::fd::OwnedFd,
    st: libc::stat,
    shown: std::path::PathBuf,
}

/// Why [`open_folder`] stopped.
#[cfg(unix)]
enum Walk {
    /// Refused by the rule of [`another_users`]: the line saying so.
    Refused(String),
    /// The system's error (a folder missing, not a folder, not searchable).
    Io(std::io::Error),
}

/// Symbolic links followed on the way to a folder before giving up (`ELOOP`), as the kernel.
#[cfg(unix)]
const MAX_LINKS: u32 = 40;

/// `openat(dir, name, flags)`, the descriptor owned; `dir` `None` is `AT_FDCWD`.
#[cfg(unix)]
fn open_at(
    dir: Option<&std::os::fd::OwnedFd>,
    name: &std::ffi::CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    loop {
        // SAFETY: `name` is NUL-terminated and alive across the call; `at` is AT_FDCWD or a
        // descriptor borrowed for the call.
        let fd = unsafe { libc::openat(at, name.as_ptr(), flags, libc::c_uint::from(mode)) };
        if fd >= 0 {
            // SAFETY: `fd` was just returned by openat: open, and owned by nobody else.
            return Ok(crate::runtime::low_fds::above_stdio(unsafe {
                std::os::fd::OwnedFd::from_raw_fd(fd)
            }));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// `fstat` of a descriptor.
#[cfg(unix)]
fn fstat(fd: &std::os::fd::OwnedFd) -> std::io::Result<libc::stat> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor borrowed for the call; `st` writable.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself, a link not followed.
#[cfg(unix)]
fn lstat_at(dir: &std::os::fd::OwnedFd, name: &std::ffi::CStr) -> std::io::Result<libc::stat> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` NUL-terminated and alive; a descriptor borrowed for the call.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// The file type bits of a `stat`.
#[cfg(unix)]
fn kind(st: &libc::stat) -> libc::mode_t {
    st.st_mode & libc::S_IFMT
}

/// `s` as a C string (a NUL inside it: an error, as std's own calls say it).
#[cfg(unix)]
fn c_name(s: &std::ffi::OsStr) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(s.as_encoded_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "file name contained an unexpected NUL byte",
        )
    })
}

/// Opens `folder` one component at a time from a start nobody else controls (`/` for an
/// absolute path, the working directory for a relative one: `PROFPOINT_REPORT`'s paths were
/// made absolute at start-up, against the folder the program started in), each step an
/// `openat(O_DIRECTORY | O_NOFOLLOW)` on the descriptor of the step before. A symbolic link
/// met on the way is judged on that same descriptor ([`another_users`]: another user's link
/// in a sticky world-writable folder is refused) and then followed by reading it there; a
/// link of this user or of the folder's owner in such a folder cannot be swapped by anyone
/// else (the sticky bit), and in any other folder only those who may write it could, whom
/// nothing protects against anyway. Whatever is swapped while this runs, the folder returned
/// is one reached by steps that were each allowed, and its descriptor is where the report is
/// then created and renamed: no path is looked up twice.
#[cfg(unix)]
fn open_folder(folder: &std::path::Path) -> Result<Folder, Walk> {
    use std::path::Component;
    // `O_PATH` where there is one: a step needs only the right to search a folder (`x`), as
    // a path lookup does, not to read it (`/home/someone` at 0711).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const HOW: libc::c_int = libc::O_PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const HOW: libc::c_int = libc::O_RDONLY;
    const DIR: libc::c_int = HOW | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let open_root = || open_at(None, c"/", DIR, 0);
    let mut cur = if folder.is_absolute() {
        open_root()
    } else {
        open_at(None, c".", DIR, 0)
    }
    .map_err(Walk::Io)?;
    let mut st = fstat(&cur).map_err(Walk::Io)?;
    let mut shown = std::path::PathBuf::new();
    // The components still to walk, the next one last.
    let mut todo: Vec<std::ffi::OsString> = Vec::new();
    // `p`'s components put on `todo` so that its first is taken next.
    let push_all = |todo: &mut Vec<std::ffi::OsString>, p: &std::path::Path| {
        let at = todo.len();
        for c in p.components() {
            todo.insert(at, c.as_os_str().to_owned());
        }
    };
    push_all(&mut todo, folder);
    let mut links = 0u32;
    while let Some(c) = todo.pop() {
        match std::path::Path::new(&c).components().next() {
            Some(Component::RootDir) => {
                cur = open_root().map_err(Walk::Io)?;
                st = fstat(&cur).map_err(Walk::Io)?;
                shown = std::path::PathBuf::from("/");
                continue;
            }
            Some(Component::CurDir) | None => continue,
            _ => {}
        }
        let name = c_name(&c).map_err(Walk::Io)?;
        let here = shown.join(&c);
        let opened = match open_at(Some(&cur), &name, DIR | libc::O_NOFOLLOW, 0) {
            // A folder right under `/`, missing when looked up from the root's descriptor: the
            // same open by its absolute name, which only an emulator that maps `/` to a
            // sysroot tells apart (qemu-user's `-L` falls back to the host's folder for an
            // absolute path, never for a lookup relative to a descriptor). Elsewhere both
            // name the same entry of the same folder, which no other user can swap.
            Err(e)
                if e.raw_os_error() == Some(libc::ENOENT) && shown == std::path::Path::new("/") =>
            {
                c_name(here.as_os_str())
                    .and_then(|abs| open_at(None, &abs, DIR | libc::O_NOFOLLOW, 0))
                    .map_err(|_| e)
            }
            other => other,
        };
        match opened {
            Ok(next) => {
                st = fstat(&next).map_err(Walk::Io)?;
                cur = next;
                shown = here;
                continue;
            }
            // A link (ELOOP; EMLINK on FreeBSD, ENOTDIR on some systems), or not a folder.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ELOOP | libc::EMLINK | libc::ENOTDIR)
                ) =>
            {
                let entry = lstat_at(&cur, &name).map_err(Walk::Io)?;
                links += 1;
                if links > MAX_LINKS {
                    return Err(Walk::Io(std::io::Error::from_raw_os_error(libc::ELOOP)));
                }
                match kind(&entry) {
                    libc::S_IFLNK => {}
                    // Swapped back to a folder since the open: open it again.
                    libc::S_IFDIR => {
                        todo.push(c);
                        continue;
                    }
                    _ => return Err(Walk::Io(e)),
                }
                if let Some(why) = another_users(&here, &entry, &shown, &st, "a symbolic link") {
                    return Err(Walk::Refused(why));
                }
                let target = read_link_at(&cur, &name).map_err(Walk::Io)?;
                push_all(&mut todo, &target);
            }
            Err(e) => return Err(Walk::Io(e)),
        }
    }
    Ok(Folder { fd: cur, st, shown })
}

/// The target of the symbolic link `name` in `dir` (`readlinkat`).
#[cfg(unix)]
fn read_link_at(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::CStr,
) -> std::io::Result<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` is writable for its length; `name` NUL-terminated and alive.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // A target of PATH_MAX bytes or more is not one the system would follow either.
    if n as usize >= buf.len() {
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf.truncate(n as usize);
    Ok(std::ffi::OsString::from_vec(buf).into())
}

/// What is at the destination `name` in folder `f` (`fstatat` on its descriptor, nothing
/// followed nor opened): `Ok(None)` when nothing is there or a link that may be replaced,
/// `Ok(Some(stat))` for a regular file that may be replaced, the line why not otherwise (see
/// [`refused`]).
#[cfg(unix)]
fn check_entry(f: &Folder, name: &std::ffi::OsStr) -> Result<Option<libc::stat>, String> {
    let path = f.shown.join(name);
    let c = c_name(name).map_err(|e| format!("{}: {}", path.display(), reason(&e)))?;
    let st = match lstat_at(&f.fd, &c) {
        Ok(st) => st,
        // Nothing there, or nothing that can be told: the write finds out.
        Err(_) => return Ok(None),
    };
    let what = match kind(&st) {
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFREG => "a file",
        libc::S_IFDIR => "a folder",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        _ => "not a file",
    };
    if matches!(kind(&st), libc::S_IFLNK | libc::S_IFREG) {
        if let Some(why) = another_users(&path, &st, &f.shown, &f.st, what) {
            return Err(why);
        }
        return Ok((kind(&st) == libc::S_IFREG).then_some(st));
    }
    Err(format!(
        "{} is {what}, not a regular file: refused",
        path.display()
    ))
}

/// Why entry `path` (`m`: its `lstat`; `what` it is) in `folder` (`f`: its `fstat`) may not
/// be written or followed: it is another user's (neither this process's nor the folder
/// owner's) in a sticky world-writable folder.
#[cfg(unix)]
fn another_users(
    path: &std::path::Path,
    m: &libc::stat,
    folder: &std::path::Path,
    f: &libc::stat,
    what: &str,
) -> Option<String> {
    let shared = f.st_mode & 0o1002 == 0o1002;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !shared || m.st_uid == me || m.st_uid == f.st_uid {
        return None;
    }
    Some(format!(
        "{} is {what} of another user (uid {}) in the sticky world-writable folder {}: refused",
        path.display(),
        m.st_uid,
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
/// or the new one: its folder is opened by [`open_folder`] and checked by [`check_entry`], a
/// temporary file is made in that folder's descriptor (see [`create_temp`]), written, fsynced
/// and renamed over the destination in the same descriptor, which replaces the directory
/// entry itself, a symbolic link there included, never a file it points to. A regular file of
/// this user's keeps its mode (the temporary file takes it before a byte is written). Every
/// failure removes the temporary file, and so does a signal's report given up
/// ([`remove_temporaries`]). What [`refused`] refuses is an error; the [`special`] paths are
/// written as they are.
#[cfg(unix)]
pub(crate) fn write_file(
    path: &std::path::Path,
    fill: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    if let Some(s) = special(path) {
        return write_special(path, s, fill);
    }
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::other(format!(
            "{} does not name a file",
            path.display()
        )));
    };
    let folder = match open_folder(folder_of(path)) {
        Ok(f) => f,
        Err(Walk::Refused(why)) => return Err(std::io::Error::other(why)),
        Err(Walk::Io(e)) => return Err(e),
    };
    let old = check_entry(&folder, name).map_err(std::io::Error::other)?;
    let c_dest = c_name(name)?;
    let (tmp, f) = create_temp(&folder.fd, name)?;
    let Some(_registered) = Registered::new(folder.fd.as_raw_fd(), &tmp) else {
        // A signal's report was given up: the process is ending, and leaves no file behind.
        // SAFETY: the temporary name, NUL-terminated, in the folder it was made in.
        unsafe { libc::unlinkat(folder.fd.as_raw_fd(), tmp.as_ptr(), 0) };
        return Err(std::io::Error::other("the process is ending"));
    };
    let written = (|| {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if let Some(old) = old.filter(|o| o.st_uid == me) {
            // The permission bits only: a report is no program to run set-user-ID.
            let mode = old.st_mode & 0o777;
            // SAFETY: fchmod of the temporary file's descriptor, owned by `f`.
            if unsafe { libc::fchmod(f.as_raw_fd(), mode) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        let mut f = std::io::BufWriter::with_capacity(64 << 10, f);
        fill(&mut f)?;
        let f = f.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        drop(f);
        // SAFETY: both names NUL-terminated and alive; the one folder descriptor, borrowed.
        let r = unsafe {
            libc::renameat(
                folder.fd.as_raw_fd(),
                tmp.as_ptr(),
                folder.fd.as_raw_fd(),
                c_dest.as_ptr(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })();
    if written.is_err() {
        // SAFETY: the temporary name, NUL-terminated, in the folder it was made in.
        unsafe { libc::unlinkat(folder.fd.as_raw_fd(), tmp.as_ptr(), 0) };
    }
    written
}

/// The temporary files being written, by folder descriptor and name: a signal's report given
/// up at its deadline removes them ([`remove_temporaries`]). An entry is taken out before its
/// folder descriptor is closed, under the lock, so a descriptor here is always open.
#[cfg(unix)]
static TEMPORARIES: std::sync::Mutex<Temporaries> = std::sync::Mutex::new(Temporaries {
    given_up: false,
    files: Vec::new(),
});

/// See [`TEMPORARIES`].
#[cfg(unix)]
struct Temporaries {
    /// Set by [`remove_temporaries`]: no new temporary file is kept after it.
    given_up: bool,
    files: Vec<(libc::c_int, std::ffi::CString)>,
}

#[cfg(unix)]
impl Temporaries {
    /// Lists temporary file `name` in folder `fd`; false once [`Temporaries::remove_all`] ran
    /// (the caller removes its file).
    fn add(&mut self, fd: libc::c_int, name: &std::ffi::CStr) -> bool {
        if !self.given_up {
            self.files.push((fd, name.to_owned()));
        }
        !self.given_up
    }

    /// Takes out the file listed for folder `fd`.
    fn take(&mut self, fd: libc::c_int) {
        self.files.retain(|(f, _)| *f != fd);
    }

    /// Removes every listed file (`unlinkat`), and keeps no new one from now on.
    fn remove_all(&mut self) {
        self.given_up = true;
        for (fd, name) in &self.files {
            // SAFETY: `fd` is open while its entry is listed (see TEMPORARIES); `name` is
            // NUL-terminated.
            unsafe { libc::unlinkat(*fd, name.as_ptr(), 0) };
        }
    }
}

/// One entry of [`TEMPORARIES`], taken out when dropped.
#[cfg(unix)]
struct Registered {
    fd: libc::c_int,
}

#[cfg(unix)]
impl Registered {
    /// `None` once the report was given up (the caller removes its file).
    fn new(fd: libc::c_int, name: &std::ffi::CStr) -> Option<Registered> {
        let mut t = TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner());
        t.add(fd, name).then_some(Registered { fd })
    }
}

#[cfg(unix)]
impl Drop for Registered {
    fn drop(&mut self) {
        TEMPORARIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(self.fd);
    }
}

/// Removes every temporary file still being written (a signal's report given up: the process
/// ends next, and must leave none behind). The writers go on into unlinked files; their
/// renames then fail, and a write that starts after this keeps no temporary file.
#[cfg(unix)]
pub(crate) fn remove_temporaries() {
    TEMPORARIES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove_all();
}

/// A signal's report given up while a file of it is being written: the file is removed, the
/// write that goes on fails, and a later write keeps no temporary file. On a `Temporaries` of
/// the test's own (the process's list would stop every other test's reports).
#[cfg(all(test, unix))]
#[test]
fn a_report_given_up_leaves_no_temporary_file() {
    use std::os::fd::AsRawFd;
    let dir = std::env::temp_dir().join(format!("profpoint-giveup-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let folder = open_folder(&dir).ok().unwrap();
    let (tmp, mut f) = create_temp(&folder.fd, std::ffi::OsStr::new("r.json")).unwrap();
    std::io::Write::write_all(&mut f, b"half a report").unwrap();
    let mut t = Temporaries {
        given_up: false,
        files: Vec::new(),
    };
    assert!(t.add(folder.fd.as_raw_fd(), &tmp));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    t.remove_all();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "removed");
    // The writer goes on: its bytes go into the unlinked file; its rename fails.
    std::io::Write::write_all(&mut f, b", the rest").unwrap();
    // SAFETY: names NUL-terminated; the folder's descriptor, open.
    let r = unsafe {
        libc::renameat(
            folder.fd.as_raw_fd(),
            tmp.as_ptr(),
            folder.fd.as_raw_fd(),
            c"r.json".as_ptr(),
        )
    };
    assert_ne!(r, 0);
    assert!(!t.add(folder.fd.as_raw_fd(), &tmp), "no new file kept");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// Elsewhere: the temporary file beside the destination, written, renamed over it.
#[cfg(not(unix))]
pub(crate) fn write_file(
    path: &std::path::Path,
    fill: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(why) = refused(path) {
        return Err(std::io::Error::other(why));
    }
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::other(format!(
            "{} does not name a file",
            path.display()
        )));
    };
    let (tmp, mut f) = create_temp_beside(folder_of(path), name)?;
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
            let f = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
                .open(path)?;
            // Never on 0, 1 or 2: see `low_fds`.
            let mut f = crate::runtime::low_fds::above_stdio_as(f);
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

/// Makes the temporary file for the destination `name` in the folder `dir`: created new
/// (`openat` with `O_CREAT | O_EXCL`, which follows no symbolic link; `O_NOFOLLOW`,
/// `O_CLOEXEC` too), under a name nobody can guess ([`temp_name`]); a name taken already is
/// tried again with other random bits.
#[cfg(unix)]
fn create_temp(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
) -> std::io::Result<(std::ffi::CString, std::fs::File)> {
    let mut last = None;
    for _ in 0..16 {
        let tmp = c_name(&temp_name(name, random_u64()))?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        match open_at(Some(dir), &tmp, flags, 0o666) {
            Ok(fd) => return Ok((tmp, fd.into())),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::ErrorKind::AlreadyExists.into()))
}

/// Elsewhere: the same, by path, beside the destination.
#[cfg(not(unix))]
fn create_temp_beside(
    folder: &std::path::Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let mut last = None;
    for _ in 0..16 {
        let tmp = folder.join(temp_name(name, random_u64()));
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
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
