//! Ctrl-C and `kill` lose nothing (issue 15): a process ended by `SIGINT`, `SIGTERM` or
//! `SIGHUP` writes its at-exit report, then ends exactly as the signal would have ended it.
//!
//! # Mechanism
//! - Armed with the at-exit report (the initialiser when `PROFPOINT_REPORT` asks,
//!   [`crate::report_at_exit`] otherwise), unless `PROFPOINT_SIGNALS=0`. For each of the
//!   three signals whose disposition is `SIG_DFL` then, [`on_signal`] is installed; a
//!   signal the program ignores (`nohup`, a background job's `SIGINT`) or handles itself
//!   is left alone. A program that installs its own handler later replaces ours, and ends the
//!   process as it likes: returning from `main` or `exit` writes the report as usual; a
//!   handler that ends it otherwise calls [`crate::write_exit_report`] first.
//! - Writing a report allocates and takes locks: it cannot be done in a signal handler. One
//!   thread, `profpoint-signals`, started (never waited for: in a `dlopen`ed library the
//!   initialiser runs under the loader lock, see ARCHITECTURE.md) with the handlers, blocks
//!   in `read` on a pipe. The handler records the signal and writes one byte to the pipe;
//!   the thread writes the report (every destination), puts `SIG_DFL` back and raises the
//!   signal: the shell sees "killed by SIGINT" (status 130), as without profpoint.
//! - A second of these signals while the first one's report is being written ends the process
//!   at once (one line on stderr says the report was cut short; file destinations are
//!   replaced whole or not at all, so a reader sees the previous file or none).
//! - A signal that arrives while the program's own exit writes the report: the report is
//!   finished, then the process ends by the signal (it arrived before the process ended).
//! - A forked child has no `profpoint-signals` thread: there the handler puts `SIG_DFL` back
//!   and raises the signal at once (the child ends as without profpoint, with no report).
//! - Not on Windows yet (console control handlers): a Ctrl-C there ends the process without
//!   a report, as before.
//!
//! # Async-signal safety
//! The handler touches `errno` (saved and restored), three atomics in static memory, and calls
//! `getpid`, `write`, `sigaction` and `raise`, all async-signal-safe (POSIX.1-2008 2.4.3). It
//! allocates nothing and takes no lock; `tests/signals.rs` delivers the signals while every
//! thread allocates.

#![cfg_attr(feature = "off", allow(dead_code))]

#[cfg(unix)]
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// The signals whose default action ends the process and that a user sends to stop it.
#[cfg(unix)]
pub(crate) const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first signal received (0: none yet). The thread reads it; a second signal sees it set.
#[cfg(unix)]
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The process whose `profpoint-signals` thread reads the pipe (0: not armed).
#[cfg(unix)]
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
/// The pipe's write end (-1: none).
#[cfg(unix)]
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
/// Set by the thread when it begins the report of a signal (a second signal then ends the
/// process at once).
#[cfg(unix)]
static REPORTING: AtomicI32 = AtomicI32::new(0);

/// Installs the handlers and starts the thread, once per process.
#[cfg(unix)]
pub(crate) fn arm() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Err(e) = arm_inner() {
            eprintln!(
                "profpoint: {e}; a process ended by SIGINT, SIGTERM or SIGHUP will not write its report"
            );
        }
    });
}

/// Windows: not yet (see the module's documentation).
#[cfg(not(unix))]
pub(crate) fn arm() {}

#[cfg(unix)]
fn arm_inner() -> Result<(), String> {
    // Only the signals left at their default: the program's own choices stand.
    let ours: Vec<libc::c_int> = SIGNALS
        .iter()
        .copied()
        .filter(|&s| current_handler(s) == Some(libc::SIG_DFL))
        .collect();
    if ours.is_empty() {
        return Ok(());
    }
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe requires.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(format!(
            "could not make a pipe for its signal thread ({})",
            std::io::Error::last_os_error()
        ));
    }
    for (fd, flags) in [(fds[0], 0), (fds[1], libc::O_NONBLOCK)] {
        // SAFETY: fcntl on a descriptor we own; close-on-exec so a program that execs does not
        // pass it on, and a non-blocking write end so the handler never blocks.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            if flags != 0 {
                libc::fcntl(fd, libc::F_SETFL, libc::fcntl(fd, libc::F_GETFL) | flags);
            }
        }
    }
    let read_end = fds[0];
    // Never joined or waited for (see the module's documentation).
    let spawned = std::thread::Builder::new()
        .name("profpoint-signals".into())
        .spawn(move || watch(read_end));
    if let Err(e) = spawned {
        // SAFETY: closing the two descriptors made above, used by nothing else.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(format!("could not start its signal thread ({e})"));
    }
    // Release (both): the handler reads them with Acquire before using them.
    PIPE_W.store(fds[1], Ordering::Release);
    OWNER_PID.store(std::process::id(), Ordering::Release);
    for s in ours {
        // SAFETY: an all-zero sigaction is a valid value; the fields set below make it a
        // handler with the three-argument form's flag off (a plain `fn(c_int)`).
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SA_RESTART: the program's system calls interrupted while its report is written go
        // on as they would have had no handler run.
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset_t to initialise.
        unsafe { libc::sigemptyset(&mut act.sa_mask) };
        // SAFETY: an all-zero sigaction is a valid value to be overwritten.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: valid sigaction values; `on_signal` is async-signal-safe (module docs).
        if unsafe { libc::sigaction(s, &act, &mut old) } != 0 {
            return Err(format!(
                "could not handle signal {s} ({})",
                std::io::Error::last_os_error()
            ));
        }
        if old.sa_sigaction != libc::SIG_DFL {
            // The program installed a handler between our look and ours: its choice stands.
            // SAFETY: putting back the action just read.
            unsafe { libc::sigaction(s, &old, std::ptr::null_mut()) };
        }
    }
    Ok(())
}

/// The handler of signal `s` now (`SIG_DFL`, `SIG_IGN` or a function), `None` when it cannot
/// be read.
#[cfg(unix)]
fn current_handler(s: libc::c_int) -> Option<libc::sighandler_t> {
    // SAFETY: an all-zero sigaction is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query only (null new action).
    (unsafe { libc::sigaction(s, std::ptr::null(), &mut old) } == 0).then_some(old.sa_sigaction)
}

/// Whether signal `s`'s handler is ours.
#[cfg(unix)]
pub(crate) fn handled_here(s: libc::c_int) -> bool {
    current_handler(s) == Some(on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t)
}

/// The signal handler (async-signal-safe: see the module's documentation).
#[cfg(unix)]
extern "C" fn on_signal(s: libc::c_int) {
    let saved = errno::get();
    // SAFETY: getpid is async-signal-safe.
    let pid = unsafe { libc::getpid() } as u32;
    // Acquire: pairs with `arm_inner`'s Release stores.
    let owner = OWNER_PID.load(Ordering::Acquire);
    // AcqRel: the thread reads PENDING after reading the pipe.
    let first = PENDING
        .compare_exchange(0, s, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    if pid != owner {
        // A forked child: no thread to write its report.
        die_now(s);
    } else if first {
        let byte = 1u8;
        // SAFETY: write of one byte from a live local to the pipe's non-blocking write end; a
        // full pipe (impossible: one byte per process) would only drop a wake-up.
        unsafe {
            libc::write(
                PIPE_W.load(Ordering::Acquire),
                (&byte as *const u8).cast(),
                1,
            )
        };
    } else if REPORTING.load(Ordering::Acquire) != 0 {
        const MSG: &[u8] =
            b"profpoint: a second signal while the report was being written: ending now\n";
        // SAFETY: write of a static buffer to fd 2; its result does not matter.
        unsafe { libc::write(2, MSG.as_ptr().cast(), MSG.len()) };
        die_now(s);
    } else {
        // A second signal before the thread began (it is waiting for the program's own exit
        // report): the user insists.
        die_now(s);
    }
    errno::set(saved);
}

/// Puts `SIG_DFL` back for `s` and raises it: inside the handler it is blocked until the
/// handler returns, then its default action ends the process.
#[cfg(unix)]
fn die_now(s: libc::c_int) {
    // SAFETY: sigaction (with an all-zero action: SIG_DFL, no flags, empty mask) and raise are
    // async-signal-safe.
    unsafe {
        let dfl: libc::sigaction = std::mem::zeroed();
        libc::sigaction(s, &dfl, std::ptr::null_mut());
        libc::raise(s);
    }
}

/// The `profpoint-signals` thread: waits for the handler's byte, writes the report, ends the
/// process by the signal.
#[cfg(unix)]
fn watch(read_end: libc::c_int) {
    loop {
        let mut byte = 0u8;
        // SAFETY: read of one byte into a live local from the pipe's read end, owned here.
        let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // The write end cannot be closed while the process lives: nothing to wait for.
            return;
        }
    }
    // Acquire: the handler's compare_exchange.
    let s = PENDING.load(Ordering::Acquire);
    // Release: the handler reads it to decide about a second signal.
    REPORTING.store(s, Ordering::Release);
    crate::exit::write_exit_report();
    end_by(s);
}

/// Ends the process by signal `s` from a normal thread: `SIG_DFL` back (unless the program
/// has since installed a handler of its own: its handler then runs), `s` unblocked on this
/// thread, raised. Does not return.
#[cfg(unix)]
pub(crate) fn end_by(s: libc::c_int) -> ! {
    if handled_here(s) {
        die_now_unblocked(s);
    }
    // SAFETY: raise on the calling thread; the program's handler or the default action.
    unsafe { libc::raise(s) };
    // A program's handler that returns: the process goes on; this thread has nothing to do.
    loop {
        std::thread::park();
    }
}

#[cfg(unix)]
fn die_now_unblocked(s: libc::c_int) {
    // SAFETY: an empty set with `s` added, then unblocked on this thread only; then SIG_DFL
    // and raise (as in `die_now`): the default action ends the process.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, s);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        die_now(s);
    }
}

/// After the program's own exit wrote the report: a signal that arrived meanwhile (its
/// thread waited for that report) ends the process now, as it would have without profpoint.
#[cfg(unix)]
pub(crate) fn after_exit_report() {
    // Acquire: the handler's compare_exchange.
    let s = PENDING.load(Ordering::Acquire);
    // Relaxed: written once by `arm_inner` before any handler of ours could run.
    if s != 0 && OWNER_PID.load(Ordering::Relaxed) == std::process::id() {
        end_by(s);
    }
}

#[cfg(not(unix))]
pub(crate) fn after_exit_report() {}

/// `errno` of the calling thread, read and written without anything a signal handler may
/// not do.
#[cfg(unix)]
mod errno {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn location() -> *mut libc::c_int {
        // SAFETY: glibc/musl/bionic give each thread a fixed errno slot.
        unsafe { libc::__errno_location() }
    }

    #[cfg(any(target_vendor = "apple", target_os = "freebsd"))]
    fn location() -> *mut libc::c_int {
        // SAFETY: as above, the platform's per-thread errno slot.
        unsafe { libc::__error() }
    }

    pub(super) fn get() -> libc::c_int {
        // SAFETY: the slot is valid for the calling thread's life.
        unsafe { *location() }
    }

    pub(super) fn set(v: libc::c_int) {
        // SAFETY: as in `get`.
        unsafe { *location() = v }
    }
}
