//! The heatmap sampler beside pprof-rs on the same CPU-bound workload, interleaved: rounds of
//! no sampling, heatmap (perf task-clock) at 1 kHz, pprof-rs at 1 kHz (it uses setitimer),
//! and heatmap forced to setitimer at 1 kHz, repeated so a neighbour's load hits all alike.
//! Prints, per configuration, the median time per workload call, the overhead against no
//! sampling, and the samples per CPU second (user + system, from getrusage) actually taken.
//!
//! Run: `cargo bench -p profpoint-benches --bench heatmap_vs_pprof` (optionally `-- ROUNDS`).

#[cfg(target_os = "linux")]
use profpoint_test_support::workload;

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use profpoint::heatmap;

    use super::workload;
    use workload::{median, workload};

    fn cpu_seconds() -> f64 {
        // SAFETY: an all-zero rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a live rusage.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        s(ru.ru_utime) + s(ru.ru_stime)
    }

    enum Running {
        None,
        Heatmap(Box<heatmap::Sampler>),
        Pprof(pprof::ProfilerGuard<'static>),
    }

    impl Running {
        /// Stops sampling; returns the samples taken.
        fn stop(self) -> u64 {
            match self {
                Running::None => 0,
                Running::Heatmap(s) => (*s).stop().total_samples(),
                Running::Pprof(g) => {
                    let n = g
                        .report()
                        .build()
                        .map(|r| r.data.values().map(|&c| c as u64).sum())
                        .unwrap_or(0);
                    drop(g);
                    n
                }
            }
        }
    }

    const NAMES: [&str; 4] = [
        "no sampling",
        "heatmap perf task-clock 1000 Hz",
        "pprof-rs 1000 Hz (setitimer)",
        "heatmap setitimer 1000 Hz",
    ];

    fn start(i: usize) -> Running {
        match i {
            0 => Running::None,
            1 => Running::Heatmap(Box::new(
                heatmap::start(
                    heatmap::Config::new()
                        .hz(1000)
                        .source(heatmap::Source::PerfTaskClock),
                )
                .expect("heatmap with perf (this bench needs perf_event_open)"),
            )),
            2 => Running::Pprof(
                pprof::ProfilerGuardBuilder::default()
                    .frequency(1000)
                    .build()
                    .expect("pprof-rs starts"),
            ),
            _ => Running::Heatmap(Box::new(
                heatmap::start(
                    heatmap::Config::new()
                        .hz(1000)
                        .source(heatmap::Source::Setitimer),
                )
                .expect("heatmap with setitimer"),
            )),
        }
    }

    pub(super) fn main() {
        let rounds = workload::rounds_arg(11);
        let buf = workload::input();
        let d = Duration::from_millis(300);
        let mut per_call = vec![Vec::new(); NAMES.len()];
        let mut samples = vec![0u64; NAMES.len()];
        let mut cpu = vec![0f64; NAMES.len()];
        // HEATMAP_VS_PPROF_ONLY=0,1 runs a subset (to check that configurations do not disturb
        // each other).
        let only: Vec<usize> = std::env::var("HEATMAP_VS_PPROF_ONLY")
            .ok()
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
            .unwrap_or_else(|| (0..NAMES.len()).collect());
        for _ in 0..rounds {
            for &i in &only {
                let running = start(i);
                let c0 = cpu_seconds();
                let t = Instant::now();
                let mut n = 0u64;
                while t.elapsed() < d {
                    black_box(workload(black_box(&buf)));
                    n += 1;
                }
                let el = t.elapsed();
                cpu[i] += cpu_seconds() - c0;
                per_call[i].push(el.as_secs_f64() / n as f64);
                samples[i] += running.stop();
            }
        }
        let base = median(&per_call[0]);
        println!("heatmap_vs_pprof: {rounds} interleaved rounds of {d:?} per configuration");
        for &i in &only {
            let m = median(&per_call[i]);
            println!(
                "{:34} {:8.1} us per call, overhead {:+6.2}%, {:6.0} samples per CPU second",
                NAMES[i],
                m * 1e6,
                (m / base - 1.0) * 100.0,
                samples[i] as f64 / cpu[i],
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
        "SKIPPED heatmap_vs_pprof: profpoint's benches measure its Linux build (perf counters, callgrind, Linux peers)"
    );
}
