//! Benches of the heatmap sampler, each beside its baseline in one run:
//!
//! - `overhead/*`: a CPU-bound workload (~5 ms of integer hashing per iteration) with no
//!   sampler, then under perf `task-clock` sampling at 1 kHz and 10 kHz, and at the largest
//!   accepted rate (`MAX_HZ`, 100 kHz, with stacks as `PROFPOINT_HEATMAP=1` takes them), which
//!   the sampler clamps to `MAX_SERVED_HZ`. The overhead is the ratio of the medians. After each sampled group the achieved rate (samples per user-CPU
//!   second) is printed on stderr.
//! - `report/top20`: symbolise a profile of this bench binary and print its top 20 (to a
//!   buffer), the whole after-the-fact cost, files opened anew each iteration.
//!
//! Run: `cargo bench -p profpoint-heatmap --bench heatmap_overhead`.

#[cfg(target_os = "linux")]
use profpoint_test_support::workload;

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::Duration;

    use criterion::{Criterion, criterion_group};

    use super::workload;
    use workload::workload;

    fn sampler(hz: u32) -> Option<profpoint_heatmap::Sampler> {
        let mut config = profpoint_heatmap::Config::new()
            .hz(hz)
            .source(profpoint_heatmap::Source::PerfTaskClock);
        // The largest accepted rate as `PROFPOINT_HEATMAP=1` runs it: with stacks (clamped to
        // MAX_SERVED_HZ by the sampler).
        if hz == profpoint_heatmap::MAX_HZ && profpoint_heatmap::stacks::AVAILABLE {
            config = config.stacks(profpoint_heatmap::stacks::DEFAULT_DEPTH);
        }
        match profpoint_heatmap::start(config) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("SKIPPED overhead at {hz} Hz: {e}");
                None
            }
        }
    }

    fn overhead(c: &mut Criterion) {
        let buf: Vec<u8> = (0..65536u32).map(|i| (i * 2_654_435_761) as u8).collect();
        let mut g = c.benchmark_group("overhead");
        g.sample_size(60).measurement_time(Duration::from_secs(8));
        g.bench_function("no_sampling", |b| b.iter(|| workload(black_box(&buf))));
        for hz in [1000u32, 10_000, profpoint_heatmap::MAX_HZ] {
            let Some(s) = sampler(hz) else { continue };
            let name = if hz == profpoint_heatmap::MAX_HZ {
                "perf_task_clock_largest_accepted_with_stacks".to_string()
            } else {
                format!("perf_task_clock_{hz}hz")
            };
            g.bench_function(name, |b| b.iter(|| workload(black_box(&buf))));
            let p = s.stop();
            eprintln!(
                "heatmap at {hz} Hz: {} samples, achieved {:.0} Hz per user-CPU second ({:.0} per user+sys CPU second), {:.2} s user CPU, {:.2} s sys CPU, warnings {:?}",
                p.total_samples(),
                p.achieved_hz().unwrap_or(0.0),
                p.achieved_hz_per_cpu_second().unwrap_or(0.0),
                p.user_cpu_seconds(),
                p.sys_cpu_seconds(),
                p.warnings()
            );
            profpoint_heatmap::print_profile_heatmap_nr(&p, 5);
        }
        g.finish();
    }

    fn report(c: &mut Criterion) {
        let buf: Vec<u8> = (0..65536u32).map(|i| (i * 2_654_435_761) as u8).collect();
        let s = profpoint_heatmap::start(profpoint_heatmap::Config::new().hz(1000))
            .expect("start sampling");
        // A second of work spread over the workload and criterion's own code.
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_secs(1) {
            black_box(workload(black_box(&buf)));
        }
        let p = s.stop();
        let text: u64 = p.segments().iter().map(|s| s.end - s.start).sum();
        eprintln!(
            "report bench: {} samples over {} objects, {} bytes of executable segments, {} non-zero buckets",
            p.total_samples(),
            p.objects().len(),
            text,
            p.buckets().count()
        );
        let opts = profpoint_heatmap::ReportOptions::default();
        c.bench_function("report/top20", |b| {
            b.iter(|| {
                let r = p.report(&opts);
                let mut out = Vec::with_capacity(4096);
                r.write_table(&mut out).unwrap();
                out
            })
        });
    }

    criterion_group!(benches, overhead, report);
    pub(super) fn main() {
        benches();
        criterion::Criterion::default()
            .configure_from_args()
            .final_summary();
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "SKIPPED heatmap_overhead: the heatmap and per-function metrics samplers run on Linux only"
    );
}
