//! What the command writes: its output file (`-o`), opened as a careful daemon opens one, and
//! its lines on stderr, which never panic and never pass a control character through.

use std::io::Write;
use std::path::Path;

/// Writes the output file `path` with `fill`. Opened without following a symbolic link
/// (another user's link in a shared folder would make it overwrite the file it points to),
/// without waiting (a FIFO without a reader does not hold the open), and written only if it
/// is a regular file (a FIFO or a device is refused); an existing file is truncated once it
/// is known to be one. `/dev/stdout`, `/dev/stderr` (and their `/dev/fd/N` and
/// `/proc/self/fd/N` names, links all) and `/dev/null` are written as they are. A folder on
/// the way is followed as the system follows it. The error names the file and what is wrong.
pub(crate) fn write_output(
    path: &Path,
    fill: &dyn Fn(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), String> {
    let name = path.display();
    let failed =
        |e: std::io::Error| format!("{name}: cannot write: {}", crate::input::io_words(&e));
    match path.as_os_str().as_encoded_bytes() {
        b"/dev/stdout" | b"/dev/fd/1" | b"/proc/self/fd/1" => {
            return fill(&mut std::io::stdout().lock()).map_err(failed);
        }
        b"/dev/stderr" | b"/dev/fd/2" | b"/proc/self/fd/2" => {
            return fill(&mut std::io::stderr().lock()).map_err(failed);
        }
        b"/dev/null" => return fill(&mut std::io::sink()).map_err(failed),
        _ => {}
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let f = o.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return format!(
                "{name}: is a symbolic link, not followed: name the file it points to, or remove it"
            );
        }
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ENXIO) {
            return format!("{name}: is a FIFO without a reader, not a regular file: refused");
        }
        failed(e)
    })?;
    let m = f.metadata().map_err(failed)?;
    if !m.is_file() {
        return Err(format!("{name}: is not a regular file: refused"));
    }
    f.set_len(0).map_err(failed)?;
    // Blocking again: a regular file's writes do not wait on anyone.
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe {
            let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    fill(&mut std::io::BufWriter::with_capacity(1 << 16, f)).map_err(failed)
}

/// The longest line [`say`] prints, in characters (a report's text may be of any length).
const LONGEST: usize = 2000;

/// Prints `profpoint: {line}` on stderr: control characters (a report's program name or CPU
/// model, which anyone may have written) shown escaped, the line cut at [`LONGEST`]
/// characters, and a failing stderr ignored (no panic: `eprintln!` panics on `/dev/full`).
pub(crate) fn say(line: &str) {
    let mut s = String::from("profpoint: ");
    for (i, c) in line.chars().enumerate() {
        if i == LONGEST {
            s.push_str("...");
            break;
        }
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    s.push('\n');
    let _ = std::io::stderr().lock().write_all(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("pp-cli-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_regular_file_is_written_and_an_old_one_replaced_whole() {
        let d = dir("file");
        let p = d.join("out.txt");
        std::fs::write(&p, "an older and longer content").unwrap();
        write_output(&p, &|w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_and_a_fifo_are_refused_and_nothing_is_written() {
        let d = dir("refused");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = d.join("out.svg");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = write_output(&link, &|w| w.write_all(b"overwritten")).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path alive across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No reader: refused at once, not an open that waits for one.
        let e = write_output(&fifo, &|w| w.write_all(b"x")).unwrap_err();
        assert!(e.contains("FIFO"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
