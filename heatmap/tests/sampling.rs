//! CPU-mode sampling against ground truth: the rate delivered (against the thread's own CPU
//! clock), attribution to the function that burned the CPU, threads created after start and
//! threads that exit before stop, the setitimer fallback, and the start-up errors.
//!
//! Bounds are generous and one-sided (a VM's timing is noisy); speed belongs to the benches.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::{Config, Source, SourceUsed, StartError};

/// At `hz`, a thread burning 1 s of CPU in `burn_cpu_alpha` is sampled about `hz` times, and
/// nearly all of those samples are attributed to `burn_cpu_alpha`.
fn rate_and_attribution(hz: u32) {
    let _g = serial();
    let name = format!("rate_and_attribution_{hz}");
    let Some(sampler) = start_perf_or_skip(&name, Config::new().hz(hz)) else {
        return;
    };
    assert_eq!(sampler.source(), SourceUsed::PerfTaskClock);
    let cpu = Duration::from_millis(1000);
    burn_cpu_alpha(cpu);
    let p = sampler.stop();
    let r = full_report(&p);
    let mine = samples_in(&r, "burn_cpu_alpha");
    let expected = f64::from(hz) * cpu.as_secs_f64();
    println!(
        "{name}: {mine} samples in burn_cpu_alpha, {} total, expected ~{expected:.0}; achieved {:?} Hz; warnings {:?}",
        p.total_samples(),
        p.achieved_hz(),
        p.warnings()
    );
    // One-sided: at least 80% of the requested rate (measured here: +0.4% at 1 kHz, +5.6%
    // at 10 kHz; the kernel may throttle, which the report would then say).
    assert!(
        mine as f64 >= 0.8 * expected,
        "{mine} samples in burn_cpu_alpha, expected at least 80% of {expected}"
    );
    // The attribution: the loop is the only user-space code running on this thread.
    assert!(
        mine as f64 >= 0.9 * p.total_samples() as f64,
        "only {mine} of {} samples in burn_cpu_alpha",
        p.total_samples()
    );
    assert!(p.achieved_hz().unwrap() >= 0.8 * f64::from(hz));
    assert_eq!(r.source, "perf task-clock");
}

#[test]
fn rate_and_attribution_1khz() {
    rate_and_attribution(1000);
}

#[test]
fn rate_and_attribution_10khz() {
    rate_and_attribution(10_000);
}

/// A thread created after start, which never calls into the profiler, is sampled within
/// 100 ms: of its 300 ms of CPU, at least 200 ms worth of samples are seen. A thread that exits
/// before stop keeps its samples.
#[test]
fn late_threads_are_sampled_and_exited_threads_keep_their_samples() {
    let _g = serial();
    let name = "late_threads_are_sampled_and_exited_threads_keep_their_samples";
    let hz = 1000;
    let Some(sampler) = start_perf_or_skip(name, Config::new().hz(hz)) else {
        return;
    };
    let t0 = Instant::now();
    let h = std::thread::spawn(|| burn_cpu_beta(Duration::from_millis(300)));
    h.join().unwrap();
    let burned = t0.elapsed();
    let p = sampler.stop();
    let r = full_report(&p);
    let beta = samples_in(&r, "burn_cpu_beta");
    println!(
        "{name}: {beta} samples in burn_cpu_beta over {burned:?}; threads {}",
        p.threads()
    );
    // 300 ms of CPU at 1 kHz = ~300 samples; missing the first 100 ms would leave ~200.
    // The bound allows 10% for rate error on top of the 100 ms.
    assert!(
        beta >= 180,
        "{beta} samples: the late thread was not sampled within 100 ms"
    );
    assert!(p.threads() >= 2, "the late thread got its own event");
}

/// Many short-lived threads: each one burns 30 ms and exits; the total is still there.
#[test]
fn thread_churn_loses_nothing_beyond_pickup_latency() {
    let _g = serial();
    let name = "thread_churn_loses_nothing_beyond_pickup_latency";
    let Some(sampler) = start_perf_or_skip(
        name,
        Config::new()
            .hz(1000)
            .scan_interval(Duration::from_millis(5)),
    ) else {
        return;
    };
    for _ in 0..10 {
        std::thread::spawn(|| burn_cpu_beta(Duration::from_millis(60)))
            .join()
            .unwrap();
    }
    let p = sampler.stop();
    let beta = samples_in(&full_report(&p), "burn_cpu_beta");
    println!("{name}: {beta} samples in burn_cpu_beta (600 ms of CPU over 10 threads)");
    // Each thread is picked up within ~5-10 ms of its 60: at least half of 600 is generous.
    assert!(beta >= 300, "{beta} samples");
}

/// The fallback source works, says what it is, and warns that it is below the request.
#[test]
fn setitimer_source_reports_itself_and_warns_when_below_the_request() {
    let _g = serial();
    let s = profpoint_heatmap::start(Config::new().hz(1000).source(Source::Setitimer)).unwrap();
    assert_eq!(s.source(), SourceUsed::Setitimer);
    // The bound below needs samples, whatever the load (see burn_cpu_alpha_until).
    burn_cpu_alpha_until(&s, Duration::from_millis(500), 20, Duration::from_secs(10));
    let p = s.stop();
    let r = full_report(&p);
    let alpha = samples_in(&r, "burn_cpu_alpha");
    let achieved = p.achieved_hz().unwrap();
    println!(
        "setitimer: {alpha} samples in burn_cpu_alpha, achieved {achieved:.0} Hz, warnings {:?}",
        p.warnings()
    );
    assert_eq!(r.source, "setitimer");
    // At least 50 Hz (the tick here is 250 Hz) and most samples in the loop.
    // setitimer's tick-based ITIMER_PROF accounting delivers well under its 250 Hz when the
    // CPUs are oversubscribed (a third of it seen under load): the bound proves sampling, not
    // the rate.
    assert!(alpha >= 10, "{alpha}");
    if achieved < 950.0 {
        assert!(
            p.warnings()
                .iter()
                .any(|w| w.contains("below the 1000 Hz requested") && w.contains("setitimer")),
            "{:?}",
            p.warnings()
        );
    }
}

#[test]
fn one_sampler_at_a_time_and_bad_config_is_named() {
    let _g = serial();
    let s = profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap();
    let e = profpoint_heatmap::start(Config::new()).unwrap_err();
    assert!(matches!(e, StartError::AlreadyRunning), "{e}");
    assert!(e.to_string().contains("already running"), "{e}");
    drop(s);
    // Drop stopped it: a new one starts.
    let s = profpoint_heatmap::start(Config::new().source(Source::Setitimer)).unwrap();
    drop(s);
    let e = profpoint_heatmap::start(Config::new().hz(0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "hz=0: expected a sampling rate in Hz between 1 and 100000"
    );
    let e = profpoint_heatmap::start(Config::new().hz(200_000)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "hz=200000: expected a sampling rate in Hz between 1 and 100000"
    );
    let e = profpoint_heatmap::start(Config::new().shift(30)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("shift=30: expected a bucket shift between 0 and 24"),
        "{e}"
    );
}

/// Snapshots grow and the final profile contains at least the last snapshot.
#[test]
fn snapshots_are_monotonic() {
    let _g = serial();
    let Some(s) = start_perf_or_skip("snapshots_are_monotonic", Config::new().hz(2000)) else {
        return;
    };
    burn_cpu_alpha(Duration::from_millis(100));
    let a = s.snapshot().total_samples();
    burn_cpu_alpha(Duration::from_millis(100));
    let b = s.snapshot().total_samples();
    let c = s.stop().total_samples();
    println!("snapshots: {a} <= {b} <= {c}");
    assert!(a > 0 && a < b && b <= c, "{a} {b} {c}");
}

/// Bucket aggregation: by bucket, every row is inside one function and the rows of the
/// function sum to its by-function row.
#[test]
fn by_bucket_rows_sum_to_the_function_row() {
    let _g = serial();
    let Some(s) = start_perf_or_skip(
        "by_bucket_rows_sum_to_the_function_row",
        Config::new().hz(5000),
    ) else {
        return;
    };
    burn_cpu_alpha(Duration::from_millis(300));
    let p = s.stop();
    let by_fn = samples_in(&full_report(&p), "burn_cpu_alpha");
    let by_bucket = samples_in(
        &p.report(&profpoint_heatmap::ReportOptions {
            top: usize::MAX,
            by: profpoint_heatmap::By::Bucket,
            exclude: vec![],
            ..profpoint_heatmap::ReportOptions::default()
        }),
        "burn_cpu_alpha",
    );
    assert!(by_fn > 0);
    assert_eq!(by_fn, by_bucket);
}

/// The tgkill source at 1 kHz, looking for new threads every 5 ms.
fn start_tgkill() -> profpoint_heatmap::Sampler {
    profpoint_heatmap::start(
        Config::new()
            .hz(1000)
            .source(Source::Tgkill)
            .scan_interval(Duration::from_millis(5)),
    )
    .expect("the tgkill source needs no perf event")
}

/// The tgkill source at 1 kHz: a thread burning 1 s of CPU gets at least 80% of 1000 samples,
/// nearly all in the function that burned it (or its clock reads: this source counts system
/// time too); a thread started later is found and sampled; it says what it is.
#[test]
fn tgkill_source_rate_attribution_and_late_threads() {
    let _g = serial();
    let s = start_tgkill();
    assert_eq!(s.source(), SourceUsed::Tgkill);
    burn_cpu_alpha(Duration::from_millis(1000));
    let late = std::thread::spawn(|| burn_cpu_beta(Duration::from_millis(300)));
    late.join().unwrap();
    let p = s.stop();
    let r = full_report(&p);
    let (alpha, beta) = (
        samples_in(&r, "burn_cpu_alpha"),
        samples_in(&r, "burn_cpu_beta"),
    );
    println!(
        "tgkill: {alpha} samples in burn_cpu_alpha (1 s of CPU), {beta} in burn_cpu_beta (300 ms, a later thread), {} total; achieved {:?} Hz; warnings {:?}",
        p.total_samples(),
        p.achieved_hz(),
        p.warnings()
    );
    assert_eq!(r.source, "tgkill");
    // The burners read their CPU clock between spins, a system call (the vDSO falls back to
    // the kernel for thread clocks). This source counts system time too, where the thread
    // returns to user space: those samples land in the vDSO, more of them on a loaded machine
    // (a preempted thread resumes there). So the rate is checked on the burners and their
    // clock reads together: 1.3 s of CPU at 1 kHz, at least 80% of it.
    let vdso = samples_in_vdso(&r);
    // The promise: the requested rate, or a report that says it fell short and why (the
    // watcher signals each thread at most once per wake-up, so a starved watcher undersamples).
    // Silence with a low rate fails.
    let shortfall = p
        .warnings()
        .iter()
        .find(|w| w.contains("below the 1000 Hz requested") && w.contains("tgkill"));
    if let Some(w) = shortfall {
        println!("rate bound not checked: the profile reports the shortfall: {w}");
    } else {
        assert!(
            alpha + beta + vdso >= 1040,
            "{} samples for 1.3 s of CPU at 1 kHz, and no warning says so",
            alpha + beta + vdso
        );
    }
    // Attribution: each burner's samples follow its CPU time (1 s against 300 ms). How many
    // land in the vDSO instead (the clock reads; a preempted thread resumes there) grows with
    // load (393 of ~1,100 stayed in burn_cpu_alpha in a stress run beside two busy loops), and
    // it shifts both burners, so they are compared, not counted: 3.3 times the CPU must get
    // more samples (ratios of 2.0-3.5 seen in stress runs; 3.3 expected).
    assert!(beta >= 30, "{beta} samples for the late thread's 300 ms");
    assert!(
        alpha > beta,
        "{alpha} samples for 1 s of CPU against {beta} for 300 ms"
    );
    assert!(
        (alpha + beta + vdso) as f64 >= 0.95 * p.total_samples() as f64,
        "only {} of {} samples in the burning functions and their clock reads",
        alpha + beta + vdso,
        p.total_samples()
    );
    assert!(p.threads() >= 2);
}

/// The tgkill source signals only threads that ran: a thread blocked in `poll` for the whole
/// run is never interrupted (no `EINTR`), while a busy thread beside it is sampled.
#[test]
fn tgkill_source_leaves_blocked_threads_alone() {
    let _g = serial();
    let s = start_tgkill();
    let blocked = std::thread::spawn(|| {
        // SAFETY: poll on no descriptors is a plain 400 ms sleep that a signal interrupts.
        let r = unsafe { libc::poll(std::ptr::null_mut(), 0, 400) };
        (r, std::io::Error::last_os_error().raw_os_error())
    });
    burn_cpu_alpha(Duration::from_millis(300));
    let (r, errno) = blocked.join().unwrap();
    let p = s.stop();
    let alpha = samples_in(&full_report(&p), "burn_cpu_alpha");
    println!("poll returned {r} (errno {errno:?}); {alpha} samples in the busy thread");
    assert_eq!(r, 0, "poll was interrupted: errno {errno:?}");
    // Sampling happened (a loaded machine can delay the watcher: the rate is checked in the
    // test above, not here).
    assert!(alpha >= 50, "{alpha} samples for 300 ms of CPU");
}

/// Two threads, each running a fixed amount of work (40 rounds of the shared workload, a
/// fraction of a second unsampled); the wall time it took.
fn two_threads_of_work() -> Duration {
    // The benches' input (`workload::input`), its multiplication wrapping (a test build checks
    // overflow).
    let buf: Vec<u8> = (0..65536u32)
        .map(|i| i.wrapping_mul(2_654_435_761) as u8)
        .collect();
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..40 {
                    std::hint::black_box(profpoint_test_support::workload::workload(
                        std::hint::black_box(&buf),
                    ));
                }
            });
        }
    });
    t.elapsed()
}

/// The largest accepted rate, 100 kHz, with stacks and the default source: the sampler samples
/// at `MAX_SERVED_HZ` and says so, and two threads' fixed work ends within 20 times its
/// unsampled wall time (unclamped, this work took a hundred times as long or did not end: each
/// thread in the handler, a sample due before the last was served; RELIABILITY.md). The bound, 20x (and at least
/// 5 s), only catches that return on a loaded machine; the overhead at this rate is a bench
/// (`heatmap_overhead`, BENCHMARKS.md).
#[test]
fn the_largest_accepted_rate_is_clamped_to_what_is_served() {
    let _g = serial();
    let plain = two_threads_of_work();
    let mut config = Config::new().hz(profpoint_heatmap::MAX_HZ);
    if profpoint_heatmap::stacks::AVAILABLE {
        config = config.stacks(profpoint_heatmap::stacks::DEFAULT_DEPTH);
    }
    let s = profpoint_heatmap::start(config).unwrap();
    let sampled = two_threads_of_work();
    let p = s.stop();
    println!(
        "two threads' work: {plain:?} unsampled, {sampled:?} at {} Hz asked ({} samples, \
         {:?})",
        profpoint_heatmap::MAX_HZ,
        p.total_samples(),
        p.source()
    );
    assert_eq!(p.requested_hz(), profpoint_heatmap::MAX_SERVED_HZ);
    let line = profpoint_heatmap::served_rate_warning(profpoint_heatmap::MAX_HZ);
    assert!(
        line.starts_with("hz=100000: sampling at 10000 Hz"),
        "{line}"
    );
    assert!(p.warnings().contains(&line), "{:?}", p.warnings());
    let bound = (plain * 20).max(Duration::from_secs(5));
    assert!(sampled < bound, "{sampled:?}, bound {bound:?}");
    assert!(p.total_samples() > 0);
}
