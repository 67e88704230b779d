//! `print_profile_heatmap_nr` (the Lego kernel heatmap's function) prints the table to standard
//! error: a child process (this test binary re-run on one test) samples, prints the top 3, and the
//! parent reads the child's stderr.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::*;
use profpoint_heatmap::{Config, Source};

const CHILD_ENV: &str = "HEATMAP_TEST_PRINT_CHILD";

/// The samples the child wants before it prints: enough for the burner's row to be a count.
const MIN_SAMPLES: u64 = 20;

/// The CPU time the child burns at most to get them.
const CPU_CAP: Duration = Duration::from_secs(10);

/// Runs only inside the child (with CHILD_ENV set); elsewhere it says so and returns.
#[test]
fn child_prints_the_table() {
    if std::env::var_os(CHILD_ENV).is_none() {
        println!("child_prints_the_table: runs only as the child of print_goes_to_stderr");
        return;
    }
    let s = profpoint_heatmap::start(Config::new().hz(1000).source(Source::Setitimer)).unwrap();
    // ITIMER_PROF fires on the process's tick-based CPU clock, not on the CPU time the threads
    // really used: on oversubscribed CPUs (two busy loops and the heatmap suite beside it) its
    // clock advanced 100 to 330 ms while this burner used 300 ms, every expiry a signal
    // delivered and counted (perf's itimer and signal tracepoints: 3 of 80 runs lost one,
    // already pending), and once so little that the burner got one sample. So the burner runs
    // until the timer has fired MIN_SAMPLES times, up to CPU_CAP of CPU (then the table shows
    // what it got, and the parent says what is missing).
    burn_cpu_alpha_until(&s, Duration::from_millis(300), MIN_SAMPLES, CPU_CAP);
    profpoint_heatmap::print_profile_heatmap_nr(&s.stop(), 3);
}

#[test]
fn print_goes_to_stderr() {
    let out = common::target_command(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_prints_the_table",
            "--test-threads",
            "1",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let header = stderr
        .lines()
        .find(|l| l.starts_with("Heatmap (top #"))
        .unwrap_or_else(|| panic!("no table header on stderr:\n{stderr}"));
    assert!(
        header.contains("by function") && header.contains("source setitimer"),
        "{header}"
    );
    let columns = stderr.lines().find(|l| l.contains("Address")).unwrap();
    for c in ["Address", "Function", "NR", "%"] {
        assert!(columns.contains(c), "{columns}");
    }
    let row = stderr
        .lines()
        .find(|l| l.contains("print_nr::common::burn_cpu_alpha"))
        .unwrap_or_else(|| panic!("no row for the burning function:\n{stderr}"));
    // Address, function, NR, percent: the NR is a count, the percent a share with 2 decimals.
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[0].len(), 16, "{row}");
    let nr: u64 = fields[2].parse().unwrap();
    let pct: f64 = fields[3].parse().unwrap();
    // 300 ms of CPU at setitimer's 250 Hz is ~75 samples on a quiet machine; the tick-based
    // accounting behind ITIMER_PROF delivers fewer when the CPUs are oversubscribed, and the
    // child burns on until it has MIN_SAMPLES (see there): the bound only proves the rows are
    // counts, and the burner's the largest.
    assert!(nr >= 3 && pct > 50.0, "{row}\n{header}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .all(|l| !l.starts_with("Heatmap"))
    );
}
