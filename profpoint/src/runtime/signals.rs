//! Ctrl-C and `kill` lose nothing: a process ended by `SIGINT`, `SIGTERM` or
//! `SIGHUP` writes its at-exit report, then ends exactly as the signal would have ended it.
//!
//! # Mechanism
//! - Armed with the at-exit report (the initialiser when `PROFPOINT_REPORT` asks,
//!   [`crate::report_at_exit`] otherwise), unless `PROFPOINT_SIGNALS=0`. For each of the
//!   three signals whose disposition is `SIG_DFL` then, [`on_signal`] is installed; a
//!   signal the program ignores (`nohup`, a background job's `SIGINT`) or handles itself
//!   is left alone. A program that installs its own handler later replaces ours; a handler
//!   that calls the one it replaced (signal-hook, tokio) finds ours no longer installed, and
//!   ours then does nothing: the program's shutdown stands, and its exit writes the report.
//! - Writing a report allocates and takes locks: it cannot be done in a signal handler. One
//!   thread, `profpoint-signals` (started, never waited for: in a `dlopen`ed library the
//!   initialiser runs under the loader lock, see ARCHITECTURE.md; born with the asynchronous
//!   signals but the samplers' blocked, so a program's `sigwait` gets its signals), blocks in `read`
//!   on a pipe. The handler records the signal and writes one byte to the pipe; the thread
//!   writes the report (every destination; without std's stdout and stderr locks, which a
//!   program thread may hold for good), puts `SIG_DFL` back and raises the signal: the shell
//!   sees "killed by SIGINT" (status 130), as without profpoint. A report that takes over
//!   [`DEADLINE`] is abandoned, with one line, and the process ends by the signal: the files
//!   written whole by then stay, the one being written is removed (its temporary file; none
//!   is kept after that), so the destination holds its previous file or a whole new one.
//! - The same signal again within [`DUPLICATE`] is a duplicate (`timeout` signals the child
//!   and then its group; a closed terminal sends SIGHUP twice) and is dropped. Any other
//!   signal of the three while the report is pending ends the process at once, by the first
//!   signal, as without profpoint the first would already have ended it (SIGINT then SIGTERM
//!   20 ms later: killed by SIGINT); one line on stderr; file destinations are replaced whole
//!   or not at all, so a reader sees the previous file or none.
//! - A signal that arrives while the program's own exit writes the report: the report is
//!   finished, then the process ends by the signal (it arrived before the process ended).
//! - A forked (or vforked) child has no `profpoint-signals` thread: there the handler puts
//!   `SIG_DFL` back and raises the signal at once, touching nothing of the parent's.
//! - A program that closes every descriptor (daemons do) closes the pipe: the handler sees its
//!   write end is no longer the pipe it made (`fstat`) and ends the process at once, as
//!   without profpoint, and never writes into a file that reused the number.
//! - The program's system calls go on during the report; the ones `SA_RESTART` cannot restart
//!   (`poll`, `nanosleep`, timed waits: signal(7)) return `EINTR` early, as with any handler.
//! - Not on Windows yet (console control handlers): a Ctrl-C there ends the process without
//!   a report, as before.
//!
//! # Async-signal safety
//! The handler touches `errno` (saved and restored) and atomics in static memory, and calls
//! `getpid`, `sigaction`, `fstat`, `clock_gettime`, `poll`, `write`, `raise` and `kill`, and,
//! to write a line on stderr with SIGPIPE held off (`crate::diag`), `pthread_sigmask`,
//! `sigpending` and `sigtimedwait`. The first eight and `sigpending` are async-signal-safe by
//! POSIX.1-2008 2.4.3; `pthread_sigmask` is, in glibc, the `rt_sigprocmask` system call that
//! `sigprocmask` (on the list) makes, and `sigtimedwait` with a zero timeout one system call,
//! neither taking a lock nor allocating. The handler allocates
//! nothing and takes no lock; `tests/signals.rs` counts the allocations around a signal
//! handled on the test's thread.

#![cfg_attr(feature = "off", allow(dead_code))]

#[cfg(unix)]
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
#[cfg(unix)]
use std::time::Duration;

/// The signals whose default action ends the process and that a user sends to stop it.
#[cfg(unix)]
pub(crate) const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How long a signal's report may take before the process ends without it.
#[cfg(unix)]
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

/// The same signal again within this is a duplicate of the first, not a second request.
#[cfg(unix)]
pub(crate) const DUPLICATE: Duration = Duration::from_secs(1);

/// The first signal received (0: none pending).
#[cfg(unix)]
static PENDING: AtomicI32 = AtomicI32::new(0);
/// When it arrived (CLOCK_MONOTONIC, ns).
#[cfg(unix)]
static PENDING_AT: AtomicU64 = AtomicU64::new(0);
/// The process whose `profpoint-signals` thread reads the pipe (0: none).
#[cfg(unix)]
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
/// The pipe's write end (-1: none).
#[cfg(unix)]
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
/// The pipe's inode: the handler checks that `PIPE_W` still names it.
#[cfg(unix)]
static PIPE_INO: AtomicU64 = AtomicU64::new(0);

/// Installs the handlers and starts the thread, once per process.
#[cfg(unix)]
pub(crate) fn arm() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !errno::supported() {
            return;
        }
        if let Err(e) = arm_inner() {
            crate::diag::warn_line!(
                "profpoint: {e}; a process ended by SIGINT, SIGTERM or SIGHUP will not write its report"
            );
        }
    });
}

/// Windows: not yet (see the module's documentation).
#[cfg(not(unix))]
pub(crate) fn arm() {}

/// A pipe whose two ends are close-on-exec (a program that execs does not pass them on).
#[cfg(unix)]
fn cloexec_pipe() -> std::io::Result<[libc::c_int; 2]> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe/pipe2 require.
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    // SAFETY: as above; close-on-exec is set right after (a fork+exec on another thread in
    // between could pass them on: no pipe2 here).
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let r = unsafe {
        let r = libc::pipe(fds.as_mut_ptr());
        if r == 0 {
            libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fds[1], libc::F_SETFD, libc::FD_CLOEXEC);
        }
        r
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Never on 0, 1 or 2 (the initialiser runs before std fills a closed one): see `low_fds`.
    use std::os::fd::{FromRawFd, IntoRawFd};
    Ok(fds.map(|fd| {
        // SAFETY: both descriptors were just made by pipe and are owned here alone.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        super::low_fds::above_stdio(owned).into_raw_fd()
    }))
}

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
    let fds =
        cloexec_pipe().map_err(|e| format!("could not make a pipe for its signal thread ({e})"))?;
    // SAFETY: fcntl/fstat on descriptors we own; a non-blocking write end so the handler never
    // blocks; `st` is a writable stat.
    let ino = unsafe {
        libc::fcntl(
            fds[1],
            libc::F_SETFL,
            libc::fcntl(fds[1], libc::F_GETFL) | libc::O_NONBLOCK,
        );
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fds[1], &mut st);
        st.st_ino as u64
    };
    let read_end = fds[0];
    let spawned = crate::threads::spawn_quiet(
        std::thread::Builder::new()
            .name("profpoint-signals".into())
            .stack_size(256 * 1024),
        move || watch(read_end),
    );
    if let Err(e) = spawned {
        // SAFETY: closing the two descriptors made above, used by nothing else.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        return Err(format!("could not start its signal thread ({e})"));
    }
    // Release (all three): the handler reads them with Acquire before using them.
    PIPE_INO.store(ino, Ordering::Release);
    PIPE_W.store(fds[1], Ordering::Release);
    OWNER_PID.store(std::process::id(), Ordering::Release);
    for s in ours {
        // SAFETY: an all-zero sigaction is a valid value; the fields set below make it a
        // handler with the three-argument form's flag off (a plain `fn(c_int)`).
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = handler_address();
        // SA_RESTART: the program's restartable system calls interrupted by the handler go
        // on (the others return EINTR, as with any handler: module docs).
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset_t to initialise; while one of the three is
        // handled on a thread the other two wait (no nesting).
        unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            for other in SIGNALS {
                libc::sigaddset(&mut act.sa_mask, other);
            }
        }
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

#[cfg(unix)]
fn handler_address() -> libc::sighandler_t {
    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
}

/// The handler of signal `s` now (`SIG_DFL`, `SIG_IGN` or a function), `None` when it cannot
/// be read. Async-signal-safe (one `sigaction` query).
#[cfg(unix)]
fn current_handler(s: libc::c_int) -> Option<libc::sighandler_t> {
    // SAFETY: an all-zero sigaction is a valid value to be overwritten.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query only (null new action).
    (unsafe { libc::sigaction(s, std::ptr::null(), &mut old) } == 0).then_some(old.sa_sigaction)
}

/// Whether signal `s`'s handler is ours.
#[cfg(unix)]
fn handled_here(s: libc::c_int) -> bool {
    current_handler(s) == Some(handler_address())
}

/// Whether `PIPE_W` still names the pipe made by `arm_inner` (async-signal-safe: `fstat`).
#[cfg(unix)]
fn pipe_intact(fd: libc::c_int) -> bool {
    if fd < 0 {
        return false;
    }
    // SAFETY: an all-zero stat is a valid value to be overwritten; fstat only writes it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat of a descriptor number; a closed one fails with EBADF.
    (unsafe { libc::fstat(fd, &mut st) } == 0)
        && (st.st_mode & libc::S_IFMT) == libc::S_IFIFO
        && st.st_ino as u64 == PIPE_INO.load(Ordering::Acquire)
}

/// One line on stderr from a signal handler (a static buffer, one `write`), given up after
/// [`SAY_STALL`] if stderr takes nothing.
#[cfg(unix)]
fn say(msg: &'static [u8]) {
    // Its result does not matter; SIGPIPE is held off (async-signal-safe: system calls only).
    let _ = crate::diag::write_fd_within(2, msg, SAY_STALL);
}

/// How long [`say`] waits for a stderr that takes nothing: the process is ending (a second
/// signal, or a report past its deadline), and a line is not worth holding it for.
#[cfg(unix)]
const SAY_STALL: Duration = Duration::from_millis(100);

/// The signal handler (async-signal-safe: see the module's documentation).
#[cfg(unix)]
extern "C" fn on_signal(s: libc::c_int) {
    let saved = errno::get();
    handle(s);
    errno::set(saved);
}

#[cfg(unix)]
fn handle(s: libc::c_int) {
    // Called by a handler the program installed over ours and that calls the one it
    // replaced (signal-hook does): the program handles this signal now; do nothing.
    if !handled_here(s) {
        return;
    }
    // First, before touching any state: a forked or vforked child (the latter shares the
    // parent's memory) has no thread to write a report.
    // SAFETY: getpid is async-signal-safe.
    let pid = unsafe { libc::getpid() } as u32;
    // Acquire: pairs with `arm_inner`'s Release stores.
    if pid != OWNER_PID.load(Ordering::Acquire) {
        die_now(s);
        return;
    }
    // `clock_gettime`: async-signal-safe.
    let now = crate::clock::monotonic_ns();
    // AcqRel: the thread reads PENDING after reading the pipe.
    match PENDING.compare_exchange(0, s, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            PENDING_AT.store(now, Ordering::Release);
            let fd = PIPE_W.load(Ordering::Acquire);
            let byte = 1u8;
            // SAFETY: write of one byte from a live local to the pipe's non-blocking write end,
            // checked to still be our pipe.
            let wrote =
                pipe_intact(fd) && unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) } == 1;
            if !wrote {
                // The program closed our pipe: no report, the signal's default action.
                die_now(s);
            }
        }
        Err(first)
            if first == s && {
                // 0: the first is being handled on another thread right now.
                let at = PENDING_AT.load(Ordering::Acquire);
                at == 0 || now.saturating_sub(at) < DUPLICATE.as_nanos() as u64
            } => {}
        Err(first) => {
            say(
                b"profpoint: another signal while the report was pending: ending now, without it\n",
            );
            // The first signal's verdict: without profpoint the first one would have ended
            // the process before the second arrived (a shell then reports SIGINT, not SIGTERM).
            if first != s && handled_here(first) {
                die_by(first);
            } else {
                die_now(s);
            }
        }
    }
}

/// Ends the process by `first`, from the handler of another signal: `SIG_DFL` back for
/// `first`, then `first` sent to the process (`kill`, not `raise`: a thread that blocks
/// `first` does not keep it pending; any thread that accepts it, this one once the handler
/// returns, takes its default action). Async-signal-safe: `sigaction`, `getpid` and `kill`
/// (POSIX.1-2008 2.4.3).
#[cfg(unix)]
fn die_by(first: libc::c_int) {
    set_default(first);
    // SAFETY: getpid and kill are async-signal-safe; the signal goes to this process only.
    unsafe { libc::kill(libc::getpid(), first) };
}

/// Puts `SIG_DFL` back for `s` (async-signal-safe: one `sigaction`).
#[cfg(unix)]
fn set_default(s: libc::c_int) {
    // SAFETY: an all-zero sigaction is SIG_DFL with no flags and an empty mask.
    unsafe {
        let dfl: libc::sigaction = std::mem::zeroed();
        libc::sigaction(s, &dfl, std::ptr::null_mut());
    }
}

/// Puts `SIG_DFL` back for `s` and raises it: inside the handler it is blocked until the
/// handler returns, then its default action ends the process.
#[cfg(unix)]
fn die_now(s: libc::c_int) {
    set_default(s);
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(s) };
}

/// The `profpoint-signals` thread: waits for the handler's byte, writes the report, ends the
/// process by the signal.
#[cfg(unix)]
fn watch(read_end: libc::c_int) {
    loop {
        let mut byte = 0u8;
        // SAFETY: read of one byte into a live local from the pipe's read end, owned here.
        let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
        if n != 1 {
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // The program closed our descriptors: give the signals back their default.
            disarm();
            return;
        }
        // Acquire: the handler's compare_exchange.
        let s = PENDING.load(Ordering::Acquire);
        if s == 0 || !handled_here(s) {
            // The program took the signal over since: its handler decides.
            PENDING_AT.store(0, Ordering::Release);
            PENDING.store(0, Ordering::Release);
            continue;
        }
        report_then_end(s);
    }
}

/// Puts `SIG_DFL` back for each of the three signals still handled here, and forgets the pipe.
#[cfg(unix)]
fn disarm() {
    PIPE_W.store(-1, Ordering::Release);
    OWNER_PID.store(0, Ordering::Release);
    for s in SIGNALS {
        if handled_here(s) {
            set_default(s);
        }
    }
}

/// Writes the report (on a thread of its own, waited for at most [`DEADLINE`]), then ends the
/// process by `s`.
#[cfg(unix)]
fn report_then_end(s: libc::c_int) -> ! {
    super::deliver::SIGNAL_PATH.store(true, Ordering::Relaxed);
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = crate::threads::spawn_quiet(
        // 8 MiB, as the main thread that writes the exit report: the heatmap's symbols.
        std::thread::Builder::new()
            .name("profpoint-sigreport".into())
            .stack_size(8 << 20),
        move || {
            super::exit_report::write_exit_report();
            let _ = tx.send(());
        },
    );
    let finished = match writer {
        Ok(_) => rx.recv_timeout(DEADLINE).is_ok(),
        Err(_) => {
            // No thread: write it here, without a deadline.
            super::exit_report::write_exit_report();
            true
        }
    };
    if !finished {
        // What was written whole is in place; what was still being written is removed.
        super::deliver::remove_temporaries();
        say(b"profpoint: the report did not finish in 10 s: ending now, without the rest of it\n");
    }
    end_by(s);
    // The program's own handler ran instead and returned: nothing more to do here.
    loop {
        std::thread::park();
    }
}

/// Ends the process by signal `s` from a normal thread: `SIG_DFL` back (unless the program
/// has since installed a handler of its own: its handler then runs), `s` unblocked on this
/// thread, raised. Returns only if the program's handler (or `SIG_IGN`) took it.
#[cfg(unix)]
fn end_by(s: libc::c_int) {
    // Used: a later exit must not raise it again.
    PENDING.store(0, Ordering::Release);
    if handled_here(s) {
        set_default(s);
    }
    // SAFETY: an empty set with `s` added, unblocked on this thread only; then raise on this
    // thread: the default action ends the process, a handler runs and returns.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, s);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(s);
    }
}

/// After the program's own exit wrote the report: a signal that arrived meanwhile (its
/// thread waited for that report) ends the process now, as it would have without profpoint.
#[cfg(unix)]
pub(crate) fn after_exit_report() {
    // Acquire: the handler's compare_exchange.
    let s = PENDING.load(Ordering::Acquire);
    if s != 0 && OWNER_PID.load(Ordering::Acquire) == std::process::id() {
        end_by(s);
    }
}

#[cfg(not(unix))]
pub(crate) fn after_exit_report() {}

/// `errno` of the calling thread, read and written without anything a signal handler may
/// not do. Where its location is not known here, the handlers are not installed.
#[cfg(unix)]
mod errno {
    #[cfg(any(target_os = "linux", target_os = "dragonfly", target_os = "emscripten"))]
    fn location() -> *mut libc::c_int {
        // SAFETY: the C library gives each thread a fixed errno slot.
        unsafe { libc::__errno_location() }
    }

    #[cfg(any(target_vendor = "apple", target_os = "freebsd"))]
    fn location() -> *mut libc::c_int {
        // SAFETY: as above, the platform's per-thread errno slot.
        unsafe { libc::__error() }
    }

    #[cfg(any(target_os = "android", target_os = "netbsd", target_os = "openbsd"))]
    fn location() -> *mut libc::c_int {
        // SAFETY: as above.
        unsafe { libc::__errno() }
    }

    #[cfg(any(target_os = "solaris", target_os = "illumos"))]
    fn location() -> *mut libc::c_int {
        // SAFETY: as above.
        unsafe { libc::___errno() }
    }

    /// Elsewhere the location is not known here: the handlers are not installed.
    #[cfg(not(any(
        target_os = "linux",
        target_os = "dragonfly",
        target_os = "emscripten",
        target_vendor = "apple",
        target_os = "freebsd",
        target_os = "android",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "solaris",
        target_os = "illumos"
    )))]
    fn location() -> *mut libc::c_int {
        std::ptr::null_mut()
    }

    /// Whether this platform's errno is reachable (else `arm` installs nothing).
    pub(super) fn supported() -> bool {
        !location().is_null()
    }

    pub(super) fn get() -> libc::c_int {
        let p = location();
        if p.is_null() {
            return 0;
        }
        // SAFETY: the slot is valid for the calling thread's life.
        unsafe { *p }
    }

    pub(super) fn set(v: libc::c_int) {
        let p = location();
        if !p.is_null() {
            // SAFETY: as in `get`.
            unsafe { *p = v }
        }
    }
}
