//! The `SIGPROF` disposition is borrowed and given back: a foreign handler makes `start` fail
//! (and stays installed), `SIG_IGN` and `SIG_DFL` are restored on stop, a `SIGPROF` arriving
//! after stop does not kill a program whose disposition was `SIG_DFL` (and `stop_for_exit`
//! leaves it ignored), and a restartable
//! system call interrupted by our handler restarts.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::{Config, Source, StartError};

fn set(handler: libc::sighandler_t) {
    // SAFETY: installing SIG_DFL, SIG_IGN or a valid extern "C" handler for SIGPROF.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut()), 0);
    }
}

static FOREIGN_HITS: AtomicU64 = AtomicU64::new(0);
extern "C" fn foreign(_: libc::c_int) {
    // Relaxed: a tally read after the signal was delivered synchronously (raise).
    FOREIGN_HITS.fetch_add(1, Ordering::Relaxed);
}

#[test]
fn a_foreign_handler_is_refused_and_left_in_place() {
    let _g = serial();
    let h = foreign as extern "C" fn(libc::c_int) as libc::sighandler_t;
    set(h);
    let e = profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap_err();
    assert!(matches!(e, StartError::SignalInUse { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("SIGPROF already has a handler"), "{msg}");
    assert!(msg.contains(&format!("{h:#x}")), "{msg}");
    assert!(
        msg.contains("expected SIGPROF to be SIG_DFL or SIG_IGN"),
        "{msg}"
    );
    assert_eq!(
        sigprof_disposition(),
        h,
        "the foreign handler is still installed"
    );
    // And it still works.
    // SAFETY: raising SIGPROF, whose handler is `foreign`.
    unsafe { libc::raise(libc::SIGPROF) };
    assert_eq!(FOREIGN_HITS.load(Ordering::Relaxed), 1);
    // The refusal did not leave the sampler marked as running.
    set(libc::SIG_DFL);
    drop(profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap());
}

#[test]
fn sig_ign_and_sig_dfl_are_restored() {
    let _g = serial();
    for previous in [libc::SIG_IGN, libc::SIG_DFL] {
        set(previous);
        let s = profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap();
        assert_ne!(
            sigprof_disposition(),
            previous,
            "our handler is installed while sampling"
        );
        burn_cpu_alpha(Duration::from_millis(20));
        drop(s.stop());
        assert_eq!(sigprof_disposition(), previous);
    }
    // With SIG_DFL back, the only safe SIGPROF is none: check that no sample is left pending
    // for this thread (it would terminate the process when unblocked).
    // SAFETY: sigpending fills a live sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigpending(&mut set);
        assert_eq!(libc::sigismember(&set, libc::SIGPROF), 0);
    }
}

/// At the process's end a `SIG_DFL` stays `SIG_IGN` (an emulator's late delivery of a sample
/// queued before the stop cannot kill the exit), and `SIG_IGN` stays as it was.
#[test]
fn stop_for_exit_leaves_sigprof_ignored() {
    let _g = serial();
    for previous in [libc::SIG_DFL, libc::SIG_IGN] {
        set(previous);
        let s = profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap();
        burn_cpu_alpha(Duration::from_millis(20));
        drop(s.stop_for_exit());
        assert_eq!(sigprof_disposition(), libc::SIG_IGN, "previous {previous}");
        // A SIGPROF now is ignored (under SIG_DFL it would end this process).
        // SAFETY: raising SIGPROF, whose disposition is SIG_IGN.
        unsafe { libc::raise(libc::SIGPROF) };
    }
    set(libc::SIG_DFL);
}

/// A thread with SIGPROF blocked accumulates a pending sample while sampling; stop discards
/// it (SIG_IGN step), so unblocking it afterwards under SIG_DFL does not kill the process.
#[test]
fn a_sample_pending_at_stop_does_not_kill_the_program() {
    let _g = serial();
    set(libc::SIG_DFL);
    let s = profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap();
    // SAFETY: blocking SIGPROF in this thread only; restored below.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPROF);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        // A thread-directed SIGPROF, now pending on this thread.
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            libc::syscall(libc::SYS_gettid),
            libc::SIGPROF,
        );
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        assert_eq!(libc::sigismember(&pending, libc::SIGPROF), 1);
    }
    drop(s.stop());
    assert_eq!(sigprof_disposition(), libc::SIG_DFL);
    // SAFETY: restoring the mask saved above; a pending SIGPROF would now kill us.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    // Reaching this line is the proof (a SIG_DFL SIGPROF terminates the process).
}

/// Whether thread `tid` of this process is blocked in `read` (the system call number
/// `/proc/self/task/<tid>/syscall` starts with).
fn blocked_in_read(tid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .is_ok_and(|s| s.split_whitespace().next() == Some(libc::SYS_read.to_string().as_str()))
}

/// Waits until `done()`, for at most 60 s, then panics with `what`.
fn wait_for(what: &dyn Fn() -> String, done: &dyn Fn() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "after 60 s: {}",
            what()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `read` on a pipe, interrupted 50 times by our handler (SIGPROFs sent straight to the
/// blocked thread with tgkill), restarts each time (SA_RESTART) and returns the byte written
/// afterwards, not EINTR. The samples land in libc's read wrapper, so they are counted too.
///
/// Each signal is sent once the thread is blocked in `read` (again), and the next only after
/// the handler counted it: a signal sent while the previous one is still pending would merge
/// with it, and a loaded machine can leave the thread unscheduled for longer than any fixed
/// pause.
#[test]
fn restartable_system_calls_restart() {
    let _g = serial();
    set(libc::SIG_DFL);
    let s = profpoint_heatmap::start(Config::new().source(Source::Setitimer).hz(1)).unwrap();
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let reader = fds[0];
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        // SAFETY: gettid has no arguments.
        tid_tx
            .send(unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t)
            .unwrap();
        let mut b = [0u8; 1];
        // SAFETY: reading one byte into a live one-byte buffer.
        let n = unsafe { libc::read(reader, b.as_mut_ptr().cast(), 1) };
        (n, std::io::Error::last_os_error().raw_os_error(), b[0])
    });
    let tid = tid_rx.recv().unwrap();
    let before = s.snapshot().total_samples();
    for i in 0..50 {
        wait_for(
            &|| format!("signal {i}: the reader is not blocked in read"),
            &|| blocked_in_read(tid),
        );
        let sent = s.snapshot().total_samples();
        // SAFETY: sending SIGPROF (our handler) to a thread of this process.
        unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGPROF) };
        wait_for(
            &|| format!("signal {i}: the handler did not count the tgkill'd signal"),
            &|| s.snapshot().total_samples() > sent,
        );
    }
    // The handler interrupted a read, which restarted: the thread is back in read.
    wait_for(
        &|| "after the last signal: the reader is not back in read".to_string(),
        &|| blocked_in_read(tid),
    );
    let after = s.snapshot().total_samples();
    // SAFETY: writing one byte from a live buffer.
    assert_eq!(unsafe { libc::write(fds[1], b"z".as_ptr().cast(), 1) }, 1);
    let (n, errno, byte) = h.join().unwrap();
    drop(s.stop());
    assert_eq!((n, byte), (1, b'z'), "read returned {n} (errno {errno:?})");
    assert!(
        after - before >= 50,
        "the handler ran for the tgkill'd signals: {before} -> {after}"
    );
    // SAFETY: closing the pipe we opened.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}
