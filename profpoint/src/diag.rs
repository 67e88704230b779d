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
//! - A reader that takes nothing cannot hold the host: before each write, [`write_fd`] waits
//!   (`poll`) until the descriptor takes bytes, at most [`STALL`] without progress, and then
//!   writes at most [`CHUNK`] bytes (a pipe that polls writable has room for that many, so
//!   the write does not block). A parent that reads its child's stderr only after the child
//!   exits, its pipe full, used to hold the exit report, and the exit, for ever. Past
//!   [`STALL`] the write ends with `TimedOut`, and the standard stream is marked stalled:
//!   later writes to it wait no more than one `poll` that returns at once, so a process waits
//!   on a stalled stream once in its life. A descriptor made non-blocking by the program
//!   (`EAGAIN`) waits in the same `poll`.
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

/// How long a write waits for its reader to take anything before it gives up (see the
/// module's documentation).
pub(crate) const STALL: std::time::Duration = std::time::Duration::from_secs(10);

/// The most bytes one `write` is given: `PIPE_BUF`, the room a pipe that polls writable has
/// at least (4,096 bytes on Linux; 512 on macOS and the BSDs).
#[cfg(any(target_os = "linux", target_os = "android"))]
const CHUNK: usize = 4096;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
const CHUNK: usize = 512;

/// Standard streams (bit `fd`, descriptors 0 to 2) on which a write waited [`STALL`] in vain.
#[cfg(unix)]
static STALLED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Writes `bytes` to descriptor `fd` (borrowed, never closed), whole unless an error stops
/// it or its reader takes nothing for [`STALL`]; SIGPIPE is held off while it writes (see
/// the module's documentation).
#[cfg(unix)]
pub(crate) fn write_fd(fd: libc::c_int, bytes: &[u8]) -> std::io::Result<()> {
    write_fd_within(fd, bytes, STALL)
}

/// [`write_fd`], giving up once its reader took nothing for `stall` (system calls only, no
/// allocation: a signal handler may call it).
#[cfg(unix)]
pub(crate) fn write_fd_within(
    fd: libc::c_int,
    bytes: &[u8],
    stall: std::time::Duration,
) -> std::io::Result<()> {
    use std::sync::atomic::Ordering;
    if fd < 0 {
        // `poll` ignores a negative descriptor: it would wait out the stall.
        return Err(std::io::Error::from_raw_os_error(libc::EBADF));
    }
    let guard = PipeGuard::new();
    let bit = u8::try_from(fd).ok().filter(|&f| f < 3).map(|f| 1u8 << f);
    // Relaxed: a hint; the worst a stale read costs is one more wait.
    let stalled = bit.is_some_and(|b| STALLED.load(Ordering::Relaxed) & b != 0);
    let stall = if stalled {
        std::time::Duration::ZERO
    } else {
        stall
    };
    let mut rest = bytes;
    let mut result = Ok(());
    // The stall is counted from the last byte taken: a descriptor that polls writable and
    // then refuses (`EAGAIN`, another writer took the room) waits against the same deadline.
    let mut until = monotonic_ms().saturating_add(stall.as_millis() as u64);
    while !rest.is_empty() {
        match wait_writable(fd, until) {
            Ok(true) => {}
            Ok(false) => {
                if let Some(b) = bit {
                    STALLED.fetch_or(b, Ordering::Relaxed);
                }
                // A bare kind: a message would allocate (a signal handler may be here).
                result = Err(std::io::ErrorKind::TimedOut.into());
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
        let len = rest.len().min(CHUNK);
        // SAFETY: `rest` is a live buffer of at least `len` bytes; write only reads it.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), len) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // EWOULDBLOCK is EAGAIN on Linux. Polled writable, then refused: a
                // millisecond's pause before the next poll, so that it cannot spin.
                Some(libc::EAGAIN) => {
                    // SAFETY: poll of no descriptor: a sleep, async-signal-safe.
                    unsafe { libc::poll(std::ptr::null_mut(), 0, 1) };
                    continue;
                }
                _ => {}
            }
            result = Err(e);
            break;
        }
        if n == 0 {
            result = Err(std::io::ErrorKind::WriteZero.into());
            break;
        }
        rest = &rest[(n as usize).min(rest.len())..];
        until = monotonic_ms().saturating_add(stall.as_millis() as u64);
    }
    let epipe = matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EPIPE));
    guard.restore(epipe);
    result
}

/// Waits until `fd` takes bytes (true), at most until `until` (CLOCK_MONOTONIC, ms; false:
/// it took nothing); `poll` interrupted by a signal waits again for what is left. An error or
/// a hang-up is for the write to tell (true); a descriptor that is not open is `EBADF`.
#[cfg(unix)]
fn wait_writable(fd: libc::c_int, until: u64) -> std::io::Result<bool> {
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        let left = until.saturating_sub(monotonic_ms());
        // SAFETY: one valid pollfd, alive across the call.
        let n = unsafe { libc::poll(&mut p, 1, left.min(i32::MAX as u64) as libc::c_int) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) && left > 0 {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(false);
        }
        if p.revents & libc::POLLNVAL != 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EBADF));
        }
        return Ok(true);
    }
}

/// CLOCK_MONOTONIC in milliseconds (`clock_gettime`, async-signal-safe).
#[cfg(unix)]
fn monotonic_ms() -> u64 {
    crate::os_clock::monotonic_ns() / 1_000_000
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
        // A descriptor that is not open (not the one just closed: a test beside this one
        // may have been given its number): an error, no panic.
        assert!(write_fd(-1, b"x\n").is_err());
    }

    /// A pipe whose reader never reads: the write fills it, waits `stall` for room, and gives
    /// up with `TimedOut` (it used to block for ever); what fitted was written, in pieces the
    /// pipe had room for.
    #[test]
    fn a_reader_that_takes_nothing_ends_the_write_after_its_stall() {
        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let big = vec![b'x'; 1 << 20];
        let stall = std::time::Duration::from_millis(300);
        let t = std::time::Instant::now();
        let e = write_fd_within(fds[1], &big, stall).unwrap_err();
        let took = t.elapsed();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        // Its clock is read in whole milliseconds.
        assert!(
            took + std::time::Duration::from_millis(2) >= stall,
            "{took:?}"
        );
        // The bound is the stall, not the load: minutes would mean a blocked write.
        assert!(took < std::time::Duration::from_secs(30), "{took:?}");
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD on our pipe's read end writes one int.
        let r = unsafe { libc::ioctl(fds[0], libc::FIONREAD, &mut queued) };
        assert_eq!(r, 0);
        assert!(queued > 0 && (queued as usize) < big.len(), "{queued}");
        // A reader that reads again: the next write goes through whole.
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            let mut total = 0usize;
            loop {
                // SAFETY: reads into a live buffer of its length from our read end.
                let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                total += n as usize;
            }
            // SAFETY: the read end, ours, closed once.
            unsafe { libc::close(fds[0]) };
            total
        });
        // Long enough that a loaded machine does not starve the reader past it.
        write_fd_within(fds[1], &big, std::time::Duration::from_secs(20))
            .expect("a reader that reads");
        // SAFETY: the write end, ours, closed once.
        unsafe { libc::close(fds[1]) };
        assert_eq!(reader.join().unwrap(), queued as usize + big.len());
    }

    /// A non-blocking descriptor (as a program may leave its stderr) that is full: `EAGAIN`
    /// waits in `poll` as a blocking one does, and a reader's progress lets the write finish.
    #[test]
    fn a_non_blocking_descriptor_waits_instead_of_failing() {
        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe to fill.
        let r = unsafe { libc::pipe(fds.as_mut_ptr()) };
        assert_eq!(r, 0);
        // SAFETY: fcntl on our pipe's write end.
        let r = unsafe {
            libc::fcntl(
                fds[1],
                libc::F_SETFL,
                libc::fcntl(fds[1], libc::F_GETFL) | libc::O_NONBLOCK,
            )
        };
        assert_eq!(r, 0);
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            let mut total = 0usize;
            while total < 1 << 20 {
                std::thread::sleep(std::time::Duration::from_micros(200));
                // SAFETY: reads into a live buffer of its length from our read end.
                let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
                if n > 0 {
                    total += n as usize;
                } else if n == 0 {
                    break;
                }
            }
            // SAFETY: the read end, ours, closed once.
            unsafe { libc::close(fds[0]) };
            total
        });
        let big = vec![b'y'; 1 << 20];
        write_fd_within(fds[1], &big, std::time::Duration::from_secs(20)).expect("written");
        // SAFETY: the write end, ours, closed once.
        unsafe { libc::close(fds[1]) };
        assert_eq!(reader.join().unwrap(), big.len());
    }
}
