//! Counting is the budget's floor: under the default budget, every call of every point the user
//! did not switch off is counted exactly, whatever the budget does to its timing, on programs
//! shaped to provoke it (hot phases beside quiet ones, a parent of a hot leaf, a second thread
//! with its own hot function, rounds of an empty point). Where counting alone costs more than
//! the budget, the points stay counted and the report says so. Every report taken here holds
//! no impossible figure (`Report::impossible`). Each test runs in its own process.

use profpoint::{PointReport, Report};
use profpoint_test_support::runner::in_own_process;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Nothing but the call: tens of millions a second, too hot to time and, under a small
/// budget, too hot even to count within it.
#[profpoint::profile_point]
fn tiny(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_add(1)
}

/// Calls `tiny` 100 times.
#[profpoint::profile_point]
fn parent(mut x: u64) -> u64 {
    for _ in 0..100 {
        x = tiny(x);
    }
    x
}

/// The second thread's own hot function.
#[profpoint::profile_point]
fn other(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(3)
}

/// An empty point, called in rounds.
#[profpoint::profile_point]
fn empty() {}

fn point(r: &Report, name: &str) -> PointReport {
    r.points
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no point {name}"))
}

/// Busy for `d` without calling any point (a quiet phase).
fn quiet(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The report holds no impossible figure.
fn possible(r: &Report) {
    let bad = r.impossible();
    assert!(bad.is_empty(), "impossible figures: {bad:#?}");
}

/// The first row of what a phased program did to the budget: `tiny` at tens of millions of
/// calls a second in some phases and none in others, `parent` calling it 100 times, and a
/// second thread with its own hot function. Every count exact, none estimated.
#[test]
fn a_phased_program_s_counts_are_exact_under_the_default_budget() {
    if !in_own_process("a_phased_program_s_counts_are_exact_under_the_default_budget") {
        return;
    }
    assert_eq!(profpoint::budget(), Some(2.0), "the default budget is 2%");
    assert!(!profpoint::budget_bursts(), "bursts are opt-in");
    let stop = AtomicBool::new(false);
    let (mut tiny_calls, mut parent_calls) = (0u64, 0u64);
    let other_calls = std::thread::scope(|s| {
        let second = s.spawn(|| {
            let mut n = 0u64;
            let mut x = 0;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..1000 {
                    x = other(x);
                }
                n += 1000;
            }
            n
        });
        let mut x = 0;
        // Hot phases of ~150 ms beside quiet ones of ~100 ms, for the controller's rounds
        // (every 10-100 ms) to see both; parents in every other hot phase.
        for phase in 0..8 {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(150) {
                for _ in 0..10_000 {
                    x = tiny(x);
                }
                tiny_calls += 10_000;
                if phase % 2 == 1 {
                    x = parent(x);
                    parent_calls += 1;
                    tiny_calls += 100;
                }
            }
            quiet(Duration::from_millis(100));
        }
        stop.store(true, Ordering::Relaxed);
        second.join().unwrap()
    });
    let r = profpoint::snapshot();
    possible(&r);
    for (name, calls) in [
        ("budget_counts::tiny", tiny_calls),
        ("budget_counts::parent", parent_calls),
        ("budget_counts::other", other_calls),
    ] {
        let p = point(&r, name);
        eprintln!(
            "{name}: {} calls of {calls}, {} timed, status {:?}, total {} ns +- {}",
            p.nr, p.timed, p.sampling, p.total_ns, p.total_ci95_ns
        );
        assert_eq!(p.nr, calls, "{name}: every call counted; {:?}", r.budget);
    }
    // The budget throttled the hot points (tens of millions of timed calls a second cost far
    // more than 2%), never to bursts or off.
    assert!(
        r.budget
            .throttled
            .iter()
            .any(|t| t.point == "budget_counts::tiny"),
        "{:?}",
        r.budget
    );
    for t in &r.budget.throttled {
        assert!(t.worst != "burst" && t.worst != "off", "{t:?}");
    }
    assert!(
        r.budget
            .events
            .iter()
            .all(|e| e.to != "burst" && e.to != "off"),
        "no bursts without opting in: {:?}",
        r.budget.events
    );
}

/// An empty point called a million times in each of 9 rounds, other work between rounds:
/// its count is exact.
#[test]
fn rounds_of_an_empty_point_are_counted_exactly() {
    if !in_own_process("rounds_of_an_empty_point_are_counted_exactly") {
        return;
    }
    for _ in 0..9 {
        for _ in 0..1_000_000 {
            empty();
        }
        quiet(Duration::from_millis(60));
    }
    let r = profpoint::snapshot();
    possible(&r);
    let p = point(&r, "budget_counts::empty");
    assert_eq!(p.nr, 9_000_000, "{p:?}");
    // An estimate carries an interval; an exact figure has none.
    assert!(!p.estimated || p.total_ci95_ns > 0 || p.timed == 0, "{p:?}");
}

/// Under a budget too small even to count `tiny`, it is still counted on every call, and the
/// report says that counting alone cost more than the budget, names `tiny` first and the knobs
/// that would help.
#[test]
fn when_counting_alone_is_over_the_budget_the_report_says_so_and_counts_stay_exact() {
    if !in_own_process(
        "when_counting_alone_is_over_the_budget_the_report_says_so_and_counts_stay_exact",
    ) {
        return;
    }
    // 0.01% of the CPU time: `tiny` at millions of calls a second costs far more to count.
    profpoint::set_budget(Some(0.01));
    let mut x = 0;
    let mut calls = 0u64;
    let t = Instant::now();
    let r = loop {
        for _ in 0..100_000 {
            x = tiny(x);
        }
        calls += 100_000;
        if t.elapsed() > Duration::from_millis(200) {
            let r = profpoint::snapshot();
            if r.budget.counting_over.is_some() && r.budget.rounds >= 5 {
                break r;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "waited 60 s for the counting line: {:?}",
                r.budget
            );
        }
    };
    possible(&r);
    let p = point(&r, "budget_counts::tiny");
    assert_eq!(p.nr, calls, "{p:?}");
    // Counted only (its own status may read on: a snapshot taken inside one of the windows
    // that time the counted points).
    assert!(
        r.budget
            .throttled
            .iter()
            .any(|t| t.point == "budget_counts::tiny" && t.now == "count"),
        "counted only: {:?}",
        r.budget.throttled
    );
    let over = r.budget.counting_over.clone().unwrap();
    assert!(over.percent > 0.01, "{over:?}");
    assert_eq!(over.points[0].point, "budget_counts::tiny", "{over:?}");
    let mut table = Vec::new();
    profpoint::write_table(&r, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    let line = table
        .lines()
        .find(|l| l.starts_with("Counting alone cost"))
        .unwrap_or_else(|| panic!("no counting line in\n{table}"));
    assert!(line.contains("budget_counts::tiny"), "{line}");
    assert!(line.contains("PROFPOINT_DISABLE"), "{line}");
    assert!(line.contains(",bursts"), "{line}");
    assert!(!r.budget.bursts_allowed, "{:?}", r.budget);
    assert!(
        r.budget
            .events
            .iter()
            .all(|e| e.to != "burst" && e.to != "off"),
        "no bursts without opting in: {:?}",
        r.budget.events
    );
}

/// Calls `tiny` until the budget's section says it is `now` (`burst`, `count`), at most 60 s.
fn tiny_until_it_is(x: &mut u64, now: &str) {
    let t = Instant::now();
    loop {
        for _ in 0..100_000 {
            *x = tiny(*x);
        }
        let r = profpoint::snapshot();
        if r.budget
            .throttled
            .iter()
            .any(|t| t.point == "budget_counts::tiny" && t.now == now)
        {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "waited 60 s for budget_counts::tiny to be {now}: {:?}",
            r.budget
        );
    }
}

/// Bursts withdrawn at run time: a point in them is counted again, exactly from then on.
#[test]
fn points_in_bursts_are_counted_again_when_bursts_are_withdrawn() {
    if !in_own_process("points_in_bursts_are_counted_again_when_bursts_are_withdrawn") {
        return;
    }
    profpoint::set_budget(Some(0.01));
    profpoint::set_budget_bursts(true);
    let mut x = 0;
    tiny_until_it_is(&mut x, "burst");
    profpoint::set_budget_bursts(false);
    tiny_until_it_is(&mut x, "count");
    // From here on every call counts: the count grows by exactly the calls made.
    let before = point(&profpoint::snapshot(), "budget_counts::tiny").nr;
    for _ in 0..1_000_000 {
        x = tiny(x);
    }
    let r = profpoint::snapshot();
    let after = point(&r, "budget_counts::tiny");
    assert_eq!(after.nr - before, 1_000_000, "{after:?} {:?}", r.budget);
    std::hint::black_box(x);
}
