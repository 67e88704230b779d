//! A `fork`ed child that stops the sampler it inherited (as an at-exit report would) does not
//! hang on the parent's watcher thread, which it does not have, gets the counts inherited, and
//! restores `SIGPROF`; the parent's sampler is unaffected.
//!
//! Honest note: on glibc this also passes without the fork guard in `Inner::teardown`
//! (joining a thread that the child never had returns at once there); the guard keeps us from
//! relying on that undefined behaviour.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::{Config, Source};

#[test]
fn a_forked_child_can_stop_the_inherited_sampler() {
    let _g = serial();
    let s = profpoint_heatmap::start(Config::new().hz(250).source(Source::Setitimer)).unwrap();
    // At least one sample before the fork, whatever the load (see burn_cpu_alpha_until).
    burn_cpu_alpha_until(&s, Duration::from_millis(50), 1, Duration::from_secs(10));
    // SAFETY: the child only stops the sampler (allocation is fork-safe with glibc; the
    // watcher holds no lock between scans) and leaves with _exit; alarm turns a hang into a
    // SIGALRM death that the parent reports.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork: {}", std::io::Error::last_os_error());
    if child == 0 {
        // SAFETY: in the child; plain calls, then _exit without running the parent's atexit.
        unsafe {
            libc::alarm(10);
            let p = s.stop();
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPROF, std::ptr::null(), &mut old);
            let restored = old.sa_sigaction == libc::SIG_DFL;
            libc::_exit(if p.total_samples() > 0 && restored {
                0
            } else {
                3
            });
        }
    }
    let t = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child, without blocking.
        let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if r == child {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the child did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let p = s.stop();
    assert!(p.total_samples() > 0);
    assert!(libc::WIFEXITED(status), "child died: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "child checks failed");
}
