//! Time in the vDSO, by function: a loop of `Instant::now()` spends its time in the vDSO's
//! `clock_gettime`, and the by-function table shows that time as one row named by the vDSO's
//! own symbol (not one `[vdso]` row per bucket). SKIPPED, with the reason, where the process
//! has no vDSO or no sampler can start.

// Linux only: the samplers it tests run on Linux only.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::Config;

/// Reads the monotonic clock in a loop until `cpu` of this thread's CPU time has passed.
#[inline(never)]
fn read_the_clock(cpu: Duration) -> u64 {
    let end = thread_cpu() + cpu;
    let mut n = 0u64;
    while thread_cpu() < end {
        for _ in 0..10_000 {
            std::hint::black_box(Instant::now());
            n += 1;
        }
    }
    n
}

#[test]
fn clock_reads_are_one_vdso_row_named_by_its_symbol() {
    let _g = serial();
    let test = "clock_reads_are_one_vdso_row_named_by_its_symbol";
    // SAFETY: getauxval only reads the auxiliary vector; 0 means the kernel mapped no vDSO.
    if unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } == 0 {
        println!("SKIPPED {test}: this process has no vDSO (AT_SYSINFO_EHDR is 0)");
        return;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    if !maps.lines().any(|l| l.trim_end().ends_with("[vdso]")) {
        println!(
            "SKIPPED {test}: the vDSO is not listed in /proc/self/maps (an emulator's?), so its \
             symbols cannot be read"
        );
        return;
    }
    let sampler = match profpoint_heatmap::start(Config::new().hz(1000)) {
        Ok(s) => s,
        Err(e) => {
            println!("SKIPPED {test}: no sampler starts here: {e}");
            return;
        }
    };
    // At least 200 samples, within 5 s of CPU whatever the load.
    let cap = thread_cpu() + Duration::from_secs(5);
    let mut reads = read_the_clock(Duration::from_millis(500));
    while sampler.snapshot().total_samples() < 200 && thread_cpu() < cap {
        reads += read_the_clock(Duration::from_millis(100));
    }
    let p = sampler.stop();
    let r = full_report(&p);
    let vdso: Vec<&profpoint_heatmap::Row> = r
        .rows
        .iter()
        .filter(|r| r.library.as_deref() == Some("[vdso]"))
        .collect();
    println!(
        "{test}: {reads} reads, {} samples (base {}), vDSO rows: {:?}",
        r.total_samples,
        r.base,
        vdso.iter()
            .map(|r| (r.function.as_str(), r.nr))
            .collect::<Vec<_>>()
    );
    let mut names: Vec<&str> = vdso.iter().map(|r| r.function.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "a vDSO function in two rows: {vdso:?}");
    let clock = vdso
        .iter()
        .find(|r| r.function.contains("clock_gettime"))
        .unwrap_or_else(|| panic!("no vDSO row named clock_gettime: {vdso:?}"));
    // One-sided and generous: the loop does little else than read the clock.
    assert!(
        clock.nr * 5 >= r.base,
        "{} of {} samples in {}",
        clock.nr,
        r.base,
        clock.function
    );
}
