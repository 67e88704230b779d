//! The alternating-period patch's benchmark for per-function hardware metrics: functions with
//! known characters, run in rotating order, measured two ways in one process:
//! 1. ground truth: a counting group read around every call;
//! 2. the alternating-period sampler (`profpoint_heatmap::pmu`), as a user would run it.
//!
//! It prints both tables. Needs a hardware PMU: elsewhere it says why and exits with 2.
//!
//! ```text
//! cargo run --release -p profpoint-heatmap --example pmu_demo
//! ```

#[cfg(target_os = "linux")]
use profpoint_test_support::seed;

#[cfg(target_os = "linux")]
mod linux {
    use profpoint_heatmap::pmu::{self, Counters, Event, PmuConfig};

    use super::seed;
    use seed::{BUF, NAMES, call, order};

    pub(super) fn main() {
        if let Err(e) = pmu::available() {
            eprintln!("pmu_demo: {e}");
            eprintln!(
                "pmu_demo: without a PMU, the software mode (PmuConfig::software(); a program \
                 profiled by profpoint asks for it itself) runs the same alternating windows on the CPU clock and \
                 counts page faults; `cargo bench -p profpoint-heatmap --bench pmu_targets` checks it against a \
                 counted ground truth"
            );
            std::process::exit(2);
        }
        let buf: Vec<u64> = (0..BUF as u64 / 8).collect();
        let mut seed = 0x1234_5678_9abc_def1u64;
        let events = PmuConfig::default().events;

        // 1. Ground truth.
        let counters = Counters::open(&events).unwrap_or_else(|e| {
            eprintln!("pmu_demo: {e}");
            std::process::exit(2)
        });
        let mut truth = vec![vec![0u64; events.len() + 1]; 6];
        for round in 0..60 {
            for f in order(round) {
                let a = counters.read();
                call(f, &buf, &mut seed);
                let b = counters.read();
                for (t, (x, y)) in truth[f].iter_mut().zip(a.iter().zip(&b)) {
                    *t += y - x;
                }
            }
        }
        drop(counters);
        println!("Ground truth (counters read around every call)");
        println!(
            "{:<20} {:>7} {:>8} {:>8} {:>6}",
            "Symbol", "CPI", "BM/KI", "CM/KI", "%CM"
        );
        let pos = |e: Event| 1 + events.iter().position(|x| *x == e).unwrap();
        for (f, t) in truth.iter().enumerate() {
            let ins = t[pos(Event::Instructions)] as f64;
            println!(
                "{:<20} {:>7.2} {:>8.2} {:>8.2} {:>6.1}",
                NAMES[f],
                t[0] as f64 / ins,
                1000.0 * t[pos(Event::BranchMisses)] as f64 / ins,
                1000.0 * t[pos(Event::CacheMisses)] as f64 / ins,
                100.0 * t[pos(Event::CacheMisses)] as f64
                    / t[pos(Event::CacheReferences)].max(1) as f64,
            );
        }

        // 2. The sampler.
        let sampler = pmu::start(PmuConfig::default()).unwrap_or_else(|e| {
            eprintln!("pmu_demo: {e}");
            std::process::exit(2)
        });
        let t = std::time::Instant::now();
        let mut round = 0;
        while t.elapsed() < std::time::Duration::from_secs(5) {
            for f in order(round) {
                call(f, &buf, &mut seed);
            }
            round += 1;
        }
        let report = sampler.stop().report(20);
        println!();
        let mut out = std::io::stdout().lock();
        report.write_table(&mut out).expect("stdout");
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIPPED pmu_demo: the samplers it demonstrates run on Linux only");
}
