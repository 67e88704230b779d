//! Profile-point cost per call, beside its floor (two TSC reads), its baseline (the bare
//! function) and its peers (fastrace `LocalSpan`, hotpath `#[measure]`), in one run:
//!
//! ```text
//! cargo bench -p profpoint-benches --bench points
//! ```
//!
//! `wall/*` is the calling thread's time per call; `cpu/*` is the whole process's CPU time per
//! call (background threads included); `threads/*` is the per-thread time when one or two
//! threads call the same point at once.

#[cfg(target_os = "linux")]
#[path = "common.rs"]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use criterion::{Criterion, criterion_group};
    use std::hint::black_box;
    use std::time::Instant;

    use super::common;
    use common::*;

    fn wall(c: &mut Criterion) {
        let mut g = c.benchmark_group("wall");
        g.bench_function("bare_fn", |b| b.iter(|| bare(black_box(1))));
        g.bench_function("tsc_pair", |b| {
            b.iter(|| {
                let t0 = profpoint_benches::rdtsc();
                black_box(profpoint_benches::rdtsc().wrapping_sub(t0))
            })
        });
        g.bench_function("profpoint_on", |b| b.iter(|| pp_on(black_box(1))));
        g.bench_function("profpoint_sampled_16", |b| {
            b.iter(|| pp_sampled(black_box(1)))
        });
        g.bench_function("profpoint_off", |b| b.iter(|| pp_off(black_box(1))));
        g.bench_function("fastrace_local_span", |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                fastrace_calls(iters);
                t.elapsed()
            })
        });
        g.bench_function("hotpath_measure", |b| b.iter(|| hp_work(black_box(1))));
        g.finish();
    }

    fn cpu(c: &mut Criterion) {
        let mut g = c.benchmark_group("cpu");
        g.sample_size(20);
        g.bench_function("profpoint_on", |b| {
            b.iter_custom(|iters| {
                process_cpu_of(|| {
                    for i in 0..iters {
                        pp_on(i);
                    }
                })
            })
        });
        g.bench_function("fastrace_local_span", |b| {
            b.iter_custom(|iters| process_cpu_of(|| fastrace_calls(iters)))
        });
        g.bench_function("hotpath_measure", |b| {
            b.iter_custom(|iters| {
                process_cpu_of(|| {
                    for i in 0..iters {
                        hp_work(i);
                    }
                })
            })
        });
        g.finish();
    }

    fn threads(c: &mut Criterion) {
        let mut g = c.benchmark_group("threads");
        g.sample_size(20);
        g.bench_function("one_thread", |b| {
            b.iter_custom(|iters| per_thread(1, iters))
        });
        g.bench_function("two_threads_same_point", |b| {
            b.iter_custom(|iters| per_thread(2, iters))
        });
        g.finish();
    }

    fn benches(c: &mut Criterion) {
        let _guard = setup();
        wall(c);
        cpu(c);
        threads(c);
    }

    criterion_group!(group, benches);
    pub(super) fn main() {
        group();
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
        "SKIPPED points: profpoint's benches measure its Linux build (perf counters, callgrind, Linux peers)"
    );
}
