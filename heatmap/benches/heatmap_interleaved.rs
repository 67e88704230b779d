//! Sampling overhead measured by interleaving: rounds of the same CPU-bound workload with no
//! sampler, then at 1 kHz, then at 10 kHz, repeated, so a neighbour's load (this machine's two
//! cores are shared) hits every configuration alike. Prints the median time per workload call
//! of each configuration, the overhead relative to no sampling, and the cost per sample
//! (extra time divided by samples taken), with the achieved rates.
//!
//! Run: `cargo bench -p profpoint-heatmap --bench heatmap_interleaved` (optionally `-- ROUNDS`).

#[cfg(target_os = "linux")]
use profpoint_test_support::workload;

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use super::workload;
    use workload::{median, workload};

    /// Runs the workload for about `d`, returns (calls, elapsed).
    fn round(buf: &[u8], d: Duration) -> (u64, Duration) {
        let t = Instant::now();
        let mut n = 0;
        while t.elapsed() < d {
            black_box(workload(black_box(buf)));
            n += 1;
        }
        (n, t.elapsed())
    }

    /// The cost of one SIGPROF round trip into our handler without any timer: `tgkill` to the
    /// calling thread (delivered on return from the system call), handler, `sigreturn`.
    fn signal_round_trip() -> Duration {
        let s = profpoint_heatmap::start(
            profpoint_heatmap::Config::new()
                .hz(1)
                .source(profpoint_heatmap::Source::Setitimer),
        )
        .expect("start");
        // SAFETY: getpid/gettid have no arguments.
        let (pid, tid) = unsafe {
            (
                libc::getpid(),
                libc::syscall(libc::SYS_gettid) as libc::pid_t,
            )
        };
        let n = 200_000u32;
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: SIGPROF to this thread; our handler is installed.
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGPROF) };
        }
        let per = t.elapsed() / n;
        let p = s.stop();
        assert!(
            p.total_samples() >= u64::from(n),
            "every raise reached the handler"
        );
        // Baseline: the same system call with signal 0 (permission check only, no delivery).
        let t = Instant::now();
        for _ in 0..n {
            // SAFETY: signal 0 delivers nothing.
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, 0) };
        }
        let base = t.elapsed() / n;
        println!(
            "SIGPROF round trip (tgkill + delivery + handler + sigreturn): {:.2} us; tgkill(sig 0) alone: {:.2} us",
            per.as_secs_f64() * 1e6,
            base.as_secs_f64() * 1e6
        );
        per
    }

    pub(super) fn main() {
        let rounds = workload::rounds_arg(15);
        let buf = workload::input();
        // (rate, source): no sampler, perf at 1 and 10 kHz, and setitimer (250 Hz here, the
        // tick) as the baseline cost of a bare SIGPROF delivery without perf's hrtimer.
        let configs: [Option<(u32, profpoint_heatmap::Source)>; 6] = [
            None,
            Some((1000, profpoint_heatmap::Source::PerfTaskClock)),
            Some((10_000, profpoint_heatmap::Source::PerfTaskClock)),
            Some((1000, profpoint_heatmap::Source::Setitimer)),
            Some((1000, profpoint_heatmap::Source::Tgkill)),
            Some((10_000, profpoint_heatmap::Source::Tgkill)),
        ];
        let n = configs.len();
        let mut per_call: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut samples = vec![0u64; n];
        let mut calls = vec![0u64; n];
        let mut achieved: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut watcher = vec![0f64; n];
        let mut wall = vec![0f64; n];
        let d = Duration::from_millis(300);
        for _ in 0..rounds {
            for (i, hz) in configs.iter().enumerate() {
                let s = hz.map(|(hz, source)| {
                    profpoint_heatmap::start(profpoint_heatmap::Config::new().hz(hz).source(source))
                        .expect("sampling (this bench needs perf_event_open)")
                });
                let (n, el) = round(&buf, d);
                per_call[i].push(el.as_secs_f64() / n as f64);
                calls[i] += n;
                if let Some(s) = s {
                    let p = s.stop();
                    samples[i] += p.total_samples();
                    watcher[i] += p.watcher_cpu_seconds();
                    wall[i] += p.wall_seconds();
                    if let Some(a) = p.achieved_hz() {
                        achieved[i].push(a);
                    }
                }
            }
        }
        signal_round_trip();
        // The tgkill source's watcher while every thread sleeps (it looks less often when idle).
        let s = profpoint_heatmap::start(
            profpoint_heatmap::Config::new()
                .hz(1000)
                .source(profpoint_heatmap::Source::Tgkill),
        )
        .expect("the tgkill source needs no perf event");
        std::thread::sleep(Duration::from_secs(1));
        let p = s.stop();
        println!(
            "tgkill at 1000 Hz, every thread asleep for 1 s: watcher thread {:.2}% of a core",
            100.0 * p.watcher_cpu_seconds() / p.wall_seconds()
        );
        let base = median(&per_call[0]);
        println!("interleaved: {rounds} rounds of {d:?} per configuration");
        println!("no sampling: {:.1} us per workload call", base * 1e6);
        for i in 1..n {
            let m = median(&per_call[i]);
            let per_call_samples = samples[i] as f64 / calls[i] as f64;
            let cost = (m - base) / per_call_samples;
            println!(
                "{} at {} Hz: {:.1} us per call, overhead {:+.2}%, {:.2} samples per call, ~{:.1} us per sample, achieved median {:.0} Hz per user-CPU second; watcher thread {:.2}% of a core",
                match configs[i].unwrap().1 {
                    profpoint_heatmap::Source::Setitimer => "setitimer",
                    profpoint_heatmap::Source::Tgkill => "tgkill",
                    _ => "perf task-clock",
                },
                configs[i].unwrap().0,
                m * 1e6,
                (m / base - 1.0) * 100.0,
                per_call_samples,
                cost * 1e6,
                median(&achieved[i]),
                100.0 * watcher[i] / wall[i].max(1e-9),
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
        "SKIPPED heatmap_interleaved: the heatmap and per-function metrics samplers run on Linux only"
    );
}
