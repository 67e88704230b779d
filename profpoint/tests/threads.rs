//! Many threads hammering shared points: exact counts, bounded memory, consistent snapshots.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use profpoint_test_support::runner::in_own_process;

// The points the threads share. Each test has its own (the tests of this file run side by side
// in one process under `cargo test`, and each counts its own points' calls exactly).

#[profpoint::profile_point]
fn shared_a() -> u64 {
    std::hint::black_box(1)
}

#[profpoint::profile_point]
fn shared_b() -> u64 {
    std::hint::black_box(2)
}

#[profpoint::profile_point]
fn churned() -> u64 {
    std::hint::black_box(3)
}

#[profpoint::profile_point]
fn stormed() -> u64 {
    std::hint::black_box(4)
}

#[profpoint::profile_point]
fn toggled() -> u64 {
    std::hint::black_box(5)
}

#[profpoint::profile_point]
fn beside_toggled() -> u64 {
    std::hint::black_box(6)
}

fn find(name: &str) -> profpoint::PointReport {
    profpoint::snapshot()
        .points
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
}

/// `threads` threads call both points `a` and `b`; every third thread exits after a tenth of
/// its calls.
fn hammer(a: fn() -> u64, b: fn() -> u64, threads: usize, calls: u64) -> u64 {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let n = if t % 3 == 2 { calls / 10 } else { calls };
                for _ in 0..n {
                    a();
                    b();
                }
                n
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

#[test]
fn exact_counts_from_2_to_16_threads_including_early_exits() {
    // Every call timed: this test checks the timed path's counters (the budget's sampled,
    // count-only and off states have their own tests, tests/budget.rs).
    profpoint::set_budget(None);
    let mut expected = 0;
    for threads in [2, 3, 4, 8, 16] {
        expected += hammer(shared_a, shared_b, threads, 20_000);
        let a = find("threads::shared_a");
        let b = find("threads::shared_b");
        assert_eq!(a.nr, expected, "{threads} threads");
        assert_eq!(b.nr, expected, "{threads} threads");
        assert_eq!(a.timed, expected);
        assert!(a.total_ns > 0 && a.min_ns <= a.p50_ns && a.p99_ns <= a.max_ns);
    }
}

#[test]
fn thread_churn_does_not_grow_memory() {
    // The shards counted are the process's: no other test's threads may add theirs.
    if !in_own_process("thread_churn_does_not_grow_memory") {
        return;
    }
    // 300 short-lived threads, at most 4 alive at once.
    for _ in 0..75 {
        let hs: Vec<_> = (0..4).map(|_| std::thread::spawn(churned)).collect();
        for h in hs {
            h.join().unwrap();
        }
    }
    let r = profpoint::snapshot();
    assert_eq!(find("threads::churned").nr, 300);
    // One shard per thread alive at the same time (plus the test's main thread and the
    // harness): not one per thread ever created.
    assert!(r.run.shards <= 8, "{} shards for 300 threads", r.run.shards);
}

#[test]
fn snapshots_taken_during_the_storm_are_consistent() {
    // Every call timed: this test checks the timed path's counters (the budget's sampled,
    // count-only and off states have their own tests, tests/budget.rs).
    profpoint::set_budget(None);
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a stop flag; a few extra iterations are fine.
                while !stop.load(Ordering::Relaxed) {
                    stormed();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut last = 0;
    for _ in 0..50 {
        let p = find("threads::stormed");
        // Within one point, a snapshot agrees with itself and only moves forward.
        assert_eq!(p.nr, p.timed, "no recursion or sampling here");
        assert!(p.nr >= last);
        last = p.nr;
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let total: u64 = workers.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(find("threads::stormed").nr, total);
}

#[test]
fn toggling_status_while_threads_run_loses_nothing_once_on() {
    // Every call timed: this test checks the timed path's counters (the budget's sampled,
    // count-only and off states have their own tests, tests/budget.rs).
    profpoint::set_budget(None);
    let stop = Arc::new(AtomicBool::new(false));
    let toggler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0u32;
            // Relaxed: a stop flag.
            while !stop.load(Ordering::Relaxed) {
                if i.is_multiple_of(2) {
                    profpoint::disable("threads::toggled");
                } else {
                    profpoint::enable("threads::toggled");
                }
                i += 1;
            }
            profpoint::enable("threads::toggled");
        })
    };
    let made = hammer(toggled, beside_toggled, 4, 50_000);
    stop.store(true, Ordering::Relaxed);
    toggler.join().unwrap();
    let during = find("threads::toggled").nr;
    assert!(during <= made, "counted {during} of {made} calls");
    // Once the status settles on "on", every call counts exactly.
    let after = hammer(toggled, beside_toggled, 4, 10_000);
    assert_eq!(find("threads::toggled").nr, during + after);
}
