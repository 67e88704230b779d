//! Short-lived threads (a hostile host): threads that end before the watcher's next look
//! (it lists `/proc/self/task` every 20 ms) carry no sampling event. The profile must say how
//! much CPU ran on them, and its rate warning must not blame `perf_event_max_sample_rate` for
//! what they explain.
//!
//! No timing assumption: each thread burns 1 ms of its own CPU clock, however long that takes;
//! a thread the watcher never armed ran all of its CPU unsampled, so the unsampled CPU the
//! profile reports is at least 1 ms per thread the watcher did not see (the profile counts the
//! threads it armed), and at most the process's CPU.

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::*;
use profpoint_heatmap::{Config, Source};

const THREADS: u64 = 400;

/// Spawns `THREADS` threads one after another, each burning 1 ms of its own CPU; returns the
/// CPU they ran, as each read it from its own clock.
fn churn() -> Duration {
    (0..THREADS)
        .map(|_| {
            std::thread::spawn(|| {
                let start = thread_cpu();
                burn_cpu_alpha(Duration::from_millis(1));
                thread_cpu() - start
            })
            .join()
            .unwrap()
        })
        .sum()
}

fn check(name: &str, s: profpoint_heatmap::Sampler) {
    let threads_cpu = churn();
    let p = s.stop();
    let unarmed = p.unarmed_cpu_seconds();
    let cpu = p.user_cpu_seconds() + p.sys_cpu_seconds();
    // The profile counts the main thread among the threads it armed.
    let unseen_at_least = THREADS.saturating_sub(p.threads());
    println!(
        "{name}: {} threads armed of {THREADS} spawned (+ main), {unarmed:.3} s unsampled CPU of \
         {cpu:.3} s, threads ran {:.3} s, watcher {:.1} ms CPU; warnings {:?}",
        p.threads(),
        threads_cpu.as_secs_f64(),
        p.watcher_cpu_seconds() * 1e3,
        p.warnings()
    );
    assert!(
        unarmed >= unseen_at_least as f64 * 0.001 * 0.99,
        "{name}: {unseen_at_least} threads were never armed, each ran >= 1 ms, but only \
         {unarmed:.4} s is reported unsampled"
    );
    assert!(unarmed <= cpu + 1e-9, "{name}: {unarmed} > {cpu}");
    // The report says so when it matters (a twentieth of the CPU and 20 ms).
    let matters = unarmed * 20.0 >= cpu && unarmed >= 0.020;
    let said = p
        .warnings()
        .iter()
        .any(|w| w.contains("ran on threads that carried no sampling event"));
    assert_eq!(said, matters, "{name}: {:?}", p.warnings());
    // A shortfall the unsampled threads explain is not blamed on the kernel.
    if matters {
        assert!(
            !p.warnings()
                .iter()
                .any(|w| w.contains("perf_event_max_sample_rate")),
            "{name}: {:?}",
            p.warnings()
        );
    }
}

#[test]
fn perf_source_says_how_much_cpu_short_threads_ran_unsampled() {
    let _g = serial();
    let Some(s) = start_perf_or_skip(
        "perf_source_says_how_much_cpu_short_threads_ran_unsampled",
        Config::new().hz(1000),
    ) else {
        return;
    };
    check("perf", s);
}

#[test]
fn tgkill_source_says_how_much_cpu_short_threads_ran_unsampled() {
    let _g = serial();
    let s = profpoint_heatmap::start(Config::new().hz(1000).source(Source::Tgkill)).unwrap();
    check("tgkill", s);
}

#[test]
fn setitimer_covers_every_thread_and_reports_nothing_unsampled() {
    let _g = serial();
    let s = profpoint_heatmap::start(Config::new().hz(250).source(Source::Setitimer)).unwrap();
    churn();
    let p = s.stop();
    // ITIMER_PROF counts the whole process's CPU: no thread is outside it.
    assert_eq!(p.unarmed_cpu_seconds(), 0.0);
    assert!(
        !p.warnings()
            .iter()
            .any(|w| w.contains("carried no sampling event")),
        "{:?}",
        p.warnings()
    );
}
