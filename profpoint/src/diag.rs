//! Every line profpoint prints on stderr, and the raw writes of a report to fd 1 and fd 2: a
//! guest's output that can never fail, stop or kill its host.
//!
//! # Mechanism
//! - [`warn_line!`] formats its line into one buffer (a `Display` that fails leaves its part out;
//!   nothing panics) and [`write_fd`]s it to fd 2 with its newline, in one piece where the
//!   system allows: no `eprintln!`, which panics when stderr fails (`/dev/full`, a closed
//!   descriptor), and a panic before `main` skips the rest of start-up, or aborts a host built
//!   with `panic = "abort"`.
//! - [`write_fd`] writes straight to the descriptor, looping on partial writes and `EINTR`,
//!   and returns the error it ends with (the report's writers want to know; a warning ignores
//!   it: `EPIPE`, `ENOSPC`, `EBADF`, anything).
//! - SIGPIPE: before `main` (and in a host that is not a Rust program) its disposition is the
//!   default, which ends the process when a write meets a pipe whose reader has gone. While it
//!   writes, [`write_fd`] blocks SIGPIPE in the calling thread; a SIGPIPE its write raised (the
//!   write failed with `EPIPE` and none was pending before) is taken off the pending set
//!   (`sigtimedwait` with a zero timeout; `sigwait` where that is missing, the signal being
//!   pending), then the thread's mask is put back. Every call in it is a system call that
//!   allocates nothing, so a signal handler may use it too.

/// Prints one line on stderr, formatted as `format!` does; never fails, never panics.
macro_rules! warn_line {
    ($($t:tt)*) => {
        $crate::diag::line(format_args!($($t)*))
    };
}
pub(crate) use warn_line;

/// Writes `args` and a newline to stderr (see [`warn_line!`]).
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    let mut s = String::new();
    // A Display that fails leaves its part out: the rest of the line still goes.
    let _ = s.write_fmt(args);
    s.push('\n');
    let _ = write_fd(2, s.as_bytes());
}

/// Writes `bytes` to descriptor `fd` (borrowed, never closed), whole unless an error stops
/// it; SIGPIPE is held off while it writes (see the module's documentation).
#[cfg(unix)]
pub(crate) fn write_fd(fd: libc::c_int, bytes: &[u8]) -> std::io::Result<()> {
    let guard = PipeGuard::new();
    let mut rest = bytes;
    let mut result = Ok(());
    while !rest.is_empty() {
        // SAFETY: `rest` is a live buffer of `rest.len()` bytes; write only reads it.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            result = Err(e);
            break;
        }
        if n == 0 {
            result = Err(std::io::ErrorKind::WriteZero.into());
            break;
        }
        rest = &rest[(n as usize).min(rest.len())..];
    }
    let epipe = matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EPIPE));
    guard.restore(epipe);
    result
}

/// Elsewhere: through std (which reports a failed write as an error, never a panic).
#[cfg(not(unix))]
pub(crate) fn write_fd(fd: i32, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    match fd {
        1 => {
            let mut o = std::io::stdout().lock();
            o.write_all(bytes)?;
            o.flush()
        }
        _ => std::io::stderr().lock().write_all(bytes),
    }
}

/// SIGPIPE blocked in this thread for the guard's life: the mask before, and whether a
/// SIGPIPE was already pending (not ours to take).
#[cfg(unix)]
struct PipeGuard {
    old: libc::sigset_t,
    was_pending: bool,
}

#[cfg(unix)]
impl PipeGuard {
    fn new() -> PipeGuard {
        let set = sigpipe_set();
        // SAFETY: an all-zero sigset_t is a valid value for the calls below to overwrite.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` and `old` are valid sigset_t values alive across the call.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        PipeGuard {
            old,
            was_pending: sigpipe_pending(),
        }
    }

    /// Takes away a SIGPIPE this guard's write raised (`raised`: the write failed with
    /// `EPIPE`) and puts the thread's mask back.
    fn restore(self, raised: bool) {
        if raised && !self.was_pending && sigpipe_pending() {
            let set = sigpipe_set();
            #[cfg(any(target_os = "linux", target_os = "android"))]
            {
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: valid set and timespec; a null siginfo is allowed. With a zero
                // timeout it returns at once, the signal taken or EAGAIN.
                unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) };
            }
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            {
                let mut sig = 0;
                // SAFETY: valid set and output; SIGPIPE is pending and blocked here, so
                // sigwait returns at once.
                unsafe { libc::sigwait(&set, &mut sig) };
            }
        }
        // SAFETY: `self.old` is the mask read by `new`; a null old-set pointer is allowed.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// The set holding SIGPIPE alone.
#[cfg(unix)]
fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid value for sigemptyset to initialise.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
    }
    set
}

/// Whether SIGPIPE is pending for this thread or the process.
#[cfg(unix)]
fn sigpipe_pending() -> bool {
    // SAFETY: an all-zero sigset_t is a valid value for sigpending to overwrite.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t; sigismember only reads it.
    unsafe { libc::sigpending(&mut set) == 0 && libc::sigismember(&set, libc::SIGPIPE) == 1 }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_without_reader_is_an_error_and_leaves_no_signal() {
        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the read end, ours, closed once.
        unsafe { libc::close(fds[0]) };
        let e = write_fd(fds[1], b"x\n").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
        assert!(!sigpipe_pending());
        // SAFETY: the write end, ours, closed once.
        unsafe { libc::close(fds[1]) };
        // A closed descriptor: an error, no panic.
        assert!(write_fd(fds[1], b"x\n").is_err());
    }
}
