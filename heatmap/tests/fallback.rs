//! `Source::Auto` falls back to `setitimer` when `perf_event_open` is refused, and says so;
//! `Source::PerfTaskClock` fails with an error naming the cause and the fix.
//!
//! The refusal is real: a child process (this test binary, re-run on one test) installs a
//! seccomp filter that makes `perf_event_open` fail with `EACCES`, as a container's default
//! seccomp profile or `perf_event_paranoid` 3 would. The filter stays in the child.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]
#![cfg(target_arch = "x86_64")]

mod common;

use std::time::Duration;

use common::*;
use profpoint_heatmap::{Config, Source, SourceUsed, StartError};

const CHILD_ENV: &str = "HEATMAP_TEST_FALLBACK_CHILD";

/// Makes `perf_event_open` fail with EACCES for this thread and the threads it creates.
fn deny_perf_event_open() {
    // Classic BPF: load the syscall number (offset 0 of seccomp_data), compare with
    // perf_event_open, return ERRNO(EACCES) on a match, ALLOW otherwise.
    const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const BPF_JMP_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    let filter = [
        libc::sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: BPF_JMP_JEQ_K,
            jt: 0,
            jf: 1,
            k: libc::SYS_perf_event_open as u32,
        },
        libc::sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EACCES as u32,
        },
        libc::sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers; PR_SET_SECCOMP reads the live `prog`
    // (and the filter it points to) during the call only.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const _
            ),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Runs only inside the child (with CHILD_ENV set); elsewhere it has nothing to check and
/// says so.
#[test]
fn child_with_perf_denied() {
    if std::env::var_os(CHILD_ENV).is_none() {
        println!(
            "child_with_perf_denied: runs only as the child of auto_falls_back_when_perf_is_denied"
        );
        return;
    }
    let _g = serial();
    deny_perf_event_open();

    let e = profpoint_heatmap::start(Config::new().source(Source::PerfTaskClock)).unwrap_err();
    assert!(matches!(e, StartError::PerfUnavailable(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("perf_event_open(task-clock) failed: Permission denied"),
        "{msg}"
    );
    assert!(msg.contains("Source::Auto"), "{msg}");

    let s = profpoint_heatmap::start(Config::new().hz(1000)).unwrap();
    assert_eq!(s.source(), SourceUsed::Setitimer);
    // The bound below needs samples, whatever the load (see burn_cpu_alpha_until).
    burn_cpu_alpha_until(&s, Duration::from_millis(300), 20, Duration::from_secs(10));
    let p = s.stop();
    let alpha = samples_in(&full_report(&p), "burn_cpu_alpha");
    println!(
        "CHILD-OK fallback: {alpha} samples, warnings {:?}",
        p.warnings()
    );
    // setitimer's tick-based ITIMER_PROF accounting delivers well under its 250 Hz when the
    // CPUs are oversubscribed (a third of it seen under load): the bound proves sampling, not
    // the rate.
    assert!(alpha >= 10, "{alpha}");
    assert!(
        p.warnings()
            .iter()
            .any(|w| w.contains("perf_event_open(task-clock) failed")
                && w.contains("fell back to setitimer")),
        "{:?}",
        p.warnings()
    );
}

#[test]
fn auto_falls_back_when_perf_is_denied() {
    let out = common::target_command(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_with_perf_denied",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("CHILD-OK fallback"),
        "the child did not run its checks:\n{stdout}"
    );
}
