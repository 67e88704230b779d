//! What the alternating-window sampler costs, beside uniform sampling, measured by interleaving
//! rounds of one CPU-bound workload under each configuration (so a neighbour's load on this
//! two-core machine hits all of them alike):
//!
//! - no sampler (the baseline);
//! - the windows in the software mode at its defaults (a 200 us window every ~5 ms of CPU);
//! - the windows in the hardware mode at its defaults, where a PMU exists;
//! - uniform sampling (the heatmap's perf task-clock source) at the window's rate, 5 kHz:
//!   the short period that would give every sample a window's resolution;
//! - uniform sampling at the long period's rate, 200 Hz.
//!
//! For each: the median time per workload call, the overhead against no sampler, and the
//! signals taken per second of CPU (two per window: its start and its end).
//!
//! Run: `cargo bench -p profpoint-heatmap --bench pmu_interleaved` (optionally `-- ROUNDS`).

#[cfg(target_os = "linux")]
use profpoint_test_support::workload;

#[cfg(target_os = "linux")]
mod linux {
    use profpoint_heatmap::pmu::{self, PmuConfig};
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use super::workload;
    use workload::{median, process_cpu, workload};

    #[derive(Clone, Copy, Debug)]
    enum Setup {
        None,
        Windows(&'static str),
        Uniform(u32),
    }

    enum Running {
        None,
        Windows(pmu::PmuSampler),
        Uniform(profpoint_heatmap::Sampler),
    }

    fn start(s: Setup) -> Running {
        match s {
            Setup::None => Running::None,
            Setup::Windows(mode) => {
                let config = if mode == "software" {
                    PmuConfig::software()
                } else {
                    PmuConfig::default()
                };
                let mut s = pmu::start(config).expect("checked before the rounds");
                // Steady state: the calibration's ~100 ms runs before the timed round.
                s.calibrated();
                Running::Windows(s)
            }
            Setup::Uniform(hz) => Running::Uniform(
                profpoint_heatmap::start(
                    profpoint_heatmap::Config::new()
                        .hz(hz)
                        .source(profpoint_heatmap::Source::PerfTaskClock),
                )
                .expect("uniform sampling (this bench needs perf_event_open)"),
            ),
        }
    }

    /// Stops the sampler; returns the signals it took since `windows_before` were recorded.
    fn stop(r: Running, windows_before: usize) -> u64 {
        match r {
            Running::None => 0,
            // Two signals per window: its start and its end.
            Running::Windows(s) => 2 * (s.stop().windows.len() - windows_before) as u64,
            Running::Uniform(s) => s.stop().total_samples(),
        }
    }

    pub(super) fn main() {
        let rounds = workload::rounds_arg(15);
        let buf = workload::input();
        let mut setups = vec![Setup::None, Setup::Windows("software")];
        match pmu::available() {
            Ok(()) => setups.push(Setup::Windows("hardware")),
            Err(e) => println!("hardware mode not measured: {e}"),
        }
        setups.extend([Setup::Uniform(5000), Setup::Uniform(200)]);
        let n = setups.len();
        let mut per_call: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut signals = vec![0u64; n];
        let mut cpu = vec![0f64; n];
        let d = Duration::from_millis(400);
        for _ in 0..rounds {
            for (i, &s) in setups.iter().enumerate() {
                let running = start(s);
                // The windows' calibration ran inside `start`: only what follows is counted.
                let before = match &running {
                    Running::Windows(w) => w.recorded(),
                    _ => 0,
                };
                let cpu0 = process_cpu();
                let t = Instant::now();
                let mut calls = 0u64;
                while t.elapsed() < d {
                    black_box(workload(black_box(&buf)));
                    calls += 1;
                }
                let el = t.elapsed().as_secs_f64();
                cpu[i] += process_cpu() - cpu0;
                signals[i] += stop(running, before);
                per_call[i].push(el / calls as f64);
            }
        }
        let base = median(&per_call[0]);
        println!("interleaved: {rounds} rounds of {d:?} per configuration");
        println!("no sampler: {:.1} us per workload call", base * 1e6);
        for i in 1..n {
            let m = median(&per_call[i]);
            let name = match setups[i] {
                Setup::None => unreachable!(),
                Setup::Windows(mode) => format!("windows, {mode} defaults"),
                Setup::Uniform(hz) => format!("uniform task-clock at {hz} Hz"),
            };
            println!(
                "{name}: {:.1} us per call, overhead {:+.2}%, {:.0} signals per CPU second",
                m * 1e6,
                (m / base - 1.0) * 100.0,
                signals[i] as f64 / cpu[i],
            );
        }
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "SKIPPED pmu_interleaved: the heatmap and per-function metrics samplers run on Linux only"
    );
}
