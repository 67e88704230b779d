//! The targets for stacks in the sampler, each measured beside its baseline in one run
//! (one process, phases interleaved):
//!
//! 1. **Cost per sample of the handler body**, flat against stacks of depth 32: the handler is
//!    timed with the TSC at its entry and exit (feature `handler-timing`), in alternating
//!    phases of flat and stack sampling at 1 kHz. Target: stacks under 5 us a sample. The
//!    workload runs 24 frames below its thread's root so that stacks reach the depth.
//! 2. **Overhead at 1 kHz**: CPU per workload round in phases with no sampler, the flat
//!    heatmap, and the heatmap with stacks (depth 32), interleaved; overhead = CPU per round /
//!    CPU per round unsampled - 1. Target: stacks' overhead at most 1.2x the flat heatmap's.
//!
//! Run: `cargo bench -p profpoint-heatmap --features handler-timing --bench stacks_targets`
//! (`ROUNDS=n PHASE_MS=m` to change the 6 rounds of 1500 ms phases).

#[cfg(all(
    target_os = "linux",
    target_arch = "x86_64",
    feature = "handler-timing"
))]
mod run {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use profpoint_test_support::workload;

    fn thread_cpu_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a live timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    #[inline(never)]
    fn deep(n: u32, buf: &[u8]) -> u64 {
        if n == 0 {
            return workload::workload(buf);
        }
        black_box(deep(n - 1, buf)).wrapping_add(1)
    }

    /// Runs rounds for `phase` of wall time; returns (rounds, thread CPU ns).
    fn phase(buf: &[u8], phase: Duration) -> (u64, u64) {
        let (t0, c0) = (Instant::now(), thread_cpu_ns());
        let mut n = 0;
        while t0.elapsed() < phase {
            black_box(deep(24, black_box(buf)));
            n += 1;
        }
        (n, thread_cpu_ns() - c0)
    }

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }

    pub(super) fn main() {
        let rounds: usize = std::env::var("ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(6);
        let phase_ms: u64 = std::env::var("PHASE_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1500);
        let buf = workload::input();
        let len = Duration::from_millis(phase_ms);
        // TSC rate against the monotonic clock.
        // SAFETY: rdtsc has no side effect.
        let tsc = || unsafe { core::arch::x86_64::_rdtsc() };
        let (t0, i0) = (tsc(), Instant::now());
        let mut cpu_per_round: [Vec<f64>; 3] = Default::default();
        let mut body_ns: [Vec<f64>; 2] = Default::default();
        let mut samples = [0u64; 2];
        let mut stack_report = None;
        for _ in 0..rounds {
            for mode in 0..3 {
                let s = match mode {
                    0 => None,
                    m => {
                        let c = profpoint_heatmap::Config::new()
                            .hz(1000)
                            .source(profpoint_heatmap::Source::PerfTaskClock);
                        let c = if m == 2 { c.stacks(32) } else { c };
                        match profpoint_heatmap::start(c) {
                            Ok(s) => Some(s),
                            Err(e) => {
                                println!("SKIPPED stacks_targets: {e}");
                                return;
                            }
                        }
                    }
                };
                let _ = profpoint_heatmap::handler_timing::take();
                let (n, cpu) = phase(&buf, len);
                let timing = profpoint_heatmap::handler_timing::take();
                cpu_per_round[mode].push(cpu as f64 / n as f64);
                if let Some(s) = s {
                    let p = s.stop();
                    let (ticks, k) = timing[mode - 1];
                    samples[mode - 1] += k;
                    body_ns[mode - 1].push(ticks as f64 / k.max(1) as f64);
                    if mode == 2 {
                        stack_report = Some(p);
                    }
                }
            }
        }
        let ghz = (tsc() - t0) as f64 / i0.elapsed().as_nanos() as f64;
        let none = median(&mut cpu_per_round[0]);
        let flat = median(&mut cpu_per_round[1]);
        let stack = median(&mut cpu_per_round[2]);
        let body_flat = median(&mut body_ns[0]) / ghz;
        let body_stack = median(&mut body_ns[1]) / ghz;
        println!(
            "stacks_targets: {rounds} rounds of {phase_ms} ms phases (none, flat, stacks depth 32), 1 kHz perf task-clock, TSC {ghz:.3} GHz"
        );
        println!(
            "handler body per sample (median of the rounds' means): flat {:.2} us ({} samples), stacks depth 32 {:.2} us ({} samples): {}",
            body_flat / 1e3,
            samples[0],
            body_stack / 1e3,
            samples[1],
            if body_stack < 5000.0 {
                "under the 5 us target"
            } else {
                "ABOVE the 5 us target"
            }
        );
        let (o_flat, o_stack) = (flat / none - 1.0, stack / none - 1.0);
        println!(
            "CPU per round: none {:.1} us, flat {:.1} us ({:+.2}%), stacks {:.1} us ({:+.2}%); stacks' overhead / flat's = {:.2}x (target <= 1.2x)",
            none / 1e3,
            flat / 1e3,
            o_flat * 100.0,
            stack / 1e3,
            o_stack * 100.0,
            if o_flat > 0.0 {
                o_stack / o_flat
            } else {
                f64::NAN
            }
        );
        if let Some(p) = stack_report {
            let st = p
                .report(&profpoint_heatmap::ReportOptions::default())
                .stacks
                .expect("stacks were on");
            let frames: u64 = st
                .stacks
                .iter()
                .map(|s| s.count * s.frames.len() as u64)
                .sum();
            println!(
                "last stack phase: {} samples, {:.1} frames a stack (inline expanded), truncated {}, cuts {:?}",
                st.samples,
                frames as f64 / st.samples.max(1) as f64,
                st.truncated,
                st.cuts
            );
        }
    }
}

#[cfg(all(
    target_os = "linux",
    target_arch = "x86_64",
    feature = "handler-timing"
))]
fn main() {
    run::main();
}

#[cfg(not(all(
    target_os = "linux",
    target_arch = "x86_64",
    feature = "handler-timing"
)))]
fn main() {
    println!(
        "SKIPPED stacks_targets: needs x86_64 Linux and `--features handler-timing` \
         (cargo bench -p profpoint-heatmap --features handler-timing --bench stacks_targets)"
    );
}
