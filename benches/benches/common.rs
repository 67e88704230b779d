// Workloads shared by the `points` and `point_targets` benches: the same tiny function bare,
// under a profpoint point (on, sampled, off), under fastrace and under hotpath.

use std::hint::black_box;

#[inline(never)]
pub(crate) fn bare(x: u64) -> u64 {
    black_box(x) + 1
}

#[profpoint::profile_point]
#[inline(never)]
pub(crate) fn pp_on(x: u64) -> u64 {
    black_box(x) + 1
}

#[profpoint::profile_point]
#[inline(never)]
pub(crate) fn pp_sampled(x: u64) -> u64 {
    black_box(x) + 1
}

#[profpoint::profile_point]
#[inline(never)]
pub(crate) fn pp_counted(x: u64) -> u64 {
    black_box(x) + 1
}

#[profpoint::profile_point]
#[inline(never)]
pub(crate) fn pp_off(x: u64) -> u64 {
    black_box(x) + 1
}

#[hotpath::measure]
#[inline(never)]
pub(crate) fn hp_work(x: u64) -> u64 {
    black_box(x) + 1
}

#[inline(never)]
pub(crate) fn fr_work(x: u64) -> u64 {
    let _s = fastrace::local::LocalSpan::enter_with_local_parent("fr_work");
    black_box(x) + 1
}

/// Sets up the points (sampled one in 16, off) and both peers' collectors.
pub(crate) fn setup() -> hotpath::HotpathGuard {
    // These benches measure what each mode costs: the overhead budget would change the modes
    // under them (what the budget itself does is measured by compensation_split's last column).
    profpoint::set_budget(None);
    assert_eq!(profpoint::set_sampling("*::pp_sampled", 16), 1);
    assert_eq!(profpoint::disable("*::pp_off"), 1);
    assert_eq!(profpoint::count_only("*::pp_counted"), 1);
    set_fastrace_reporter();
    let out = std::env::temp_dir().join(format!("hotpath-bench-{}.json", std::process::id()));
    hotpath::HotpathGuardBuilder::new("bench")
        .format(hotpath::Format::Json)
        .output_path(out.to_string_lossy().as_ref())
        .build()
}

/// Gives fastrace a reporter that receives every span and drops it (its production set-up:
/// spans are collected and handed over). Without one, fastrace does less work per span.
pub(crate) fn set_fastrace_reporter() {
    struct Discard;
    impl fastrace::collector::Reporter for Discard {
        fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
            black_box(spans);
        }
    }
    fastrace::set_reporter(Discard, fastrace::collector::Config::default());
}

/// Calls `fr_work` `n` times under fastrace roots of 1,000 spans each (fastrace collects local
/// spans per root), then flushes the collector.
pub(crate) fn fastrace_calls(n: u64) {
    let mut left = n;
    while left > 0 {
        let batch = left.min(1_000);
        let root = fastrace::Span::root("root", fastrace::collector::SpanContext::random());
        {
            let _g = root.set_local_parent();
            for i in 0..batch {
                fr_work(i);
            }
        }
        drop(root);
        left -= batch;
    }
    fastrace::flush();
}

/// Process CPU time (all threads) of `f`, plus what background threads spend right after it:
/// hotpath and fastrace hand records to a worker thread, whose work belongs to the call.
pub(crate) fn process_cpu_of(f: impl FnOnce()) -> std::time::Duration {
    let c0 = profpoint_benches::process_cpu();
    f();
    std::thread::sleep(std::time::Duration::from_millis(20));
    profpoint_benches::process_cpu() - c0
}

/// Per-thread wall time of `iters` calls of `pp_on` when `n` threads call it at once (the
/// mean over the threads).
pub(crate) fn per_thread(n: usize, iters: u64) -> std::time::Duration {
    let barrier = std::sync::Barrier::new(n);
    let total: std::time::Duration = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let t = std::time::Instant::now();
                    for i in 0..iters {
                        black_box(pp_on(i));
                    }
                    t.elapsed()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    total / n as u32
}
