//! Helpers shared by the integration tests: CPU-burning workloads with known names, the perf
//! availability check (tests that need it print SKIPPED and why, never pass silently), and the
//! lock that keeps tests of one binary from racing for the one process-wide sampler.

#![allow(dead_code, unreachable_pub, unused_imports)]

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises the tests of one binary: there is one SIGPROF disposition per process.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The current SIGPROF disposition (a handler's address, `SIG_DFL` or `SIG_IGN`).
pub fn sigprof_disposition() -> libc::sighandler_t {
    // SAFETY: an all-zero sigaction is a valid out-parameter; a null `act` only queries.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(libc::SIGPROF, std::ptr::null(), &mut old),
            0
        );
        old.sa_sigaction
    }
}

/// CPU time of the calling thread.
pub use profpoint_test_support::cpu::thread_cpu;

/// A tight loop of `n` iterations in inline assembly: all its time is spent inside the
/// calling function whatever the optimisation level (a debug build would otherwise spend it in
/// un-inlined iterator and arithmetic helpers).
#[inline(always)]
pub fn spin(n: u64) {
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a register-only countdown loop; touches no memory and no other register.
    unsafe {
        std::arch::asm!("2:", "dec {0}", "jnz 2b", inout(reg) n => _, options(nomem, nostack));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above.
    unsafe {
        std::arch::asm!("2:", "subs {0}, {0}, #1", "b.ne 2b", inout(reg) n => _, options(nomem, nostack));
    }
}

/// Burns `cpu` of this thread's CPU time in a loop with a recognisable name.
#[inline(never)]
pub fn burn_cpu_alpha(cpu: Duration) {
    let end = thread_cpu() + cpu;
    while thread_cpu() < end {
        spin(200_000);
    }
}

/// The same as `burn_cpu_alpha`, under another name (to tell threads apart in a report). Its
/// loop count differs by one: optimised builds merge functions whose code is identical into
/// one address, which would then carry only one of the two names.
#[inline(never)]
pub fn burn_cpu_beta(cpu: Duration) {
    let end = thread_cpu() + cpu;
    while thread_cpu() < end {
        spin(200_001);
    }
}

/// Burns `first` of this thread's CPU in `burn_cpu_alpha`, then more in 50 ms steps until `s`
/// has counted `min` samples or `cap` of CPU is spent. For the `setitimer` source: ITIMER_PROF
/// expires on the process's tick-based CPU clock (each 4 ms tick is charged to the thread it
/// interrupts), which beside busy loops and a test suite advanced 100 to 330 ms while a thread
/// used 300 ms, and sometimes next to nothing: a fixed burn guarantees no sample.
pub fn burn_cpu_alpha_until(
    s: &profpoint_heatmap::Sampler,
    first: Duration,
    min: u64,
    cap: Duration,
) {
    let end = thread_cpu() + cap;
    burn_cpu_alpha(first);
    while s.snapshot().total_samples() < min && thread_cpu() < end {
        burn_cpu_alpha(Duration::from_millis(50));
    }
}

/// Samples attributed to functions whose name ends with `suffix`.
pub fn samples_in(report: &profpoint_heatmap::Report, suffix: &str) -> u64 {
    report
        .rows
        .iter()
        .filter(|r| r.function.ends_with(suffix))
        .map(|r| r.nr)
        .sum()
}

/// Samples in the vDSO (its functions by their symbols, and `[vdso]`).
pub fn samples_in_vdso(report: &profpoint_heatmap::Report) -> u64 {
    report
        .rows
        .iter()
        .filter(|r| r.library.as_deref() == Some("[vdso]"))
        .map(|r| r.nr)
        .sum()
}

/// A full report (every row).
pub fn full_report(p: &profpoint_heatmap::Profile) -> profpoint_heatmap::Report {
    p.report(&profpoint_heatmap::ReportOptions {
        top: usize::MAX,
        ..profpoint_heatmap::ReportOptions::default()
    })
}

/// Starts a perf-sourced sampler, or prints why the calling test is SKIPPED and returns None.
pub fn start_perf_or_skip(
    test: &str,
    config: profpoint_heatmap::Config,
) -> Option<profpoint_heatmap::Sampler> {
    match profpoint_heatmap::start(config.source(profpoint_heatmap::Source::PerfTaskClock)) {
        Ok(s) => Some(s),
        Err(profpoint_heatmap::StartError::PerfUnavailable(e)) => {
            println!("SKIPPED {test}: perf_event_open(task-clock) is not available here: {e}");
            eprintln!("SKIPPED {test}: perf_event_open(task-clock) is not available here: {e}");
            None
        }
        Err(e) => panic!("{test}: start failed: {e}"),
    }
}

/// Starting binaries of this build through the target's runner (qemu under
/// scripts/test-aarch64): test-support's, shared by every crate's tests.
pub use profpoint_test_support::runner::target_command;
