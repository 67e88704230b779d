//! Recursion: every call in nr, only outermost intervals in total.

use std::time::{Duration, Instant};

#[profpoint::profile_point]
fn fib(n: u32) -> u64 {
    if n < 2 {
        std::thread::sleep(Duration::from_micros(200));
        return n as u64;
    }
    fib(n - 1) + fib(n - 2)
}

#[profpoint::profile_point]
fn ping(n: u32) {
    std::thread::sleep(Duration::from_millis(2));
    if n > 0 {
        pong(n - 1);
    }
}

#[profpoint::profile_point]
fn pong(n: u32) {
    if n > 0 {
        ping(n - 1);
    }
}

fn find(r: &profpoint::Report, name: &str) -> profpoint::PointReport {
    r.points.iter().find(|p| p.name == name).cloned().unwrap()
}

#[test]
fn recursive_total_never_exceeds_the_wall_time() {
    let t = Instant::now();
    fib(10);
    let wall = t.elapsed().as_nanos() as u64;
    let r = profpoint::snapshot();
    let p = find(&r, "recursion::fib");
    assert_eq!(p.nr, 177, "fib(10) makes 177 calls");
    assert_eq!(p.timed, 1, "one outermost call");
    assert_eq!(p.nested, 176);
    assert!(p.total_ns <= wall, "total {} > wall {wall}", p.total_ns);
    // fib(10) has 89 leaves, each asleep at least 200 us: the outermost interval holds them
    // all, whatever the instrumentation costs on this machine (under an emulator the
    // points' own cost is a large part of the wall time, and it is not the function's).
    assert!(
        p.total_ns >= 89 * 200_000,
        "total {} below the 89 leaves' sleeps (wall {wall})",
        p.total_ns
    );
    assert_eq!(
        p.avg_ns, p.total_ns,
        "avg is over the calls that contributed time"
    );
    assert!(
        r.to_table().contains("recursion::fib *"),
        "recursion is marked"
    );
}

#[test]
fn mutual_recursion_is_folded_too() {
    ping(6);
    let r = profpoint::snapshot();
    let ping = find(&r, "recursion::ping");
    let pong = find(&r, "recursion::pong");
    assert_eq!((ping.nr, ping.timed), (4, 1));
    assert_eq!((pong.nr, pong.timed), (3, 1));
    assert!(ping.total_ns >= 8_000_000);
    // pong runs inside ping: its total is within ping's.
    assert!(pong.total_ns < ping.total_ns);
    // Self times still add up to the outermost interval.
    let sum = ping.self_ns.unwrap() + pong.self_ns.unwrap();
    assert!(
        sum.abs_diff(ping.total_ns) <= 2,
        "{sum} vs {}",
        ping.total_ns
    );
}

#[profpoint::profile_point]
fn sampled_rec(n: u32) -> u32 {
    std::hint::black_box(());
    if n == 0 { 0 } else { 1 + sampled_rec(n - 1) }
}

#[test]
fn sampled_timing_picks_outermost_calls_and_keeps_total_within_wall_time() {
    assert_eq!(profpoint::set_sampling("recursion::sampled_rec", 10), 1);
    let t = Instant::now();
    for _ in 0..2_000 {
        sampled_rec(9);
    }
    let wall = t.elapsed().as_nanos() as u64;
    let r = profpoint::snapshot();
    let p = find(&r, "recursion::sampled_rec");
    assert_eq!(p.nr, 20_000, "every call counted");
    assert_eq!(
        p.nested, 18_000,
        "nine recursive calls under each outermost one"
    );
    // One outermost call in ~10 is timed: ~200 of 2,000 (never a nested call on its own).
    assert!(p.timed > 80 && p.timed < 400, "timed {}", p.timed);
    assert!(p.estimated);
    // Timed calls are outermost calls with their recursion untimed inside, so a typical
    // timed call lasts about what an average outermost call does (wall / 2,000), not several
    // times more (the bias a timed recursion would add). The median is the robust check: one
    // preempted timed call, scaled up tenfold, can move the estimated total a lot on a busy
    // machine.
    assert!(
        p.p50_ns * 2_000 <= wall * 2,
        "median timed call {} ns vs {} ns per outermost call",
        p.p50_ns,
        wall / 2_000
    );
}

profpoint::define_profile_point!(UNBALANCED);

#[test]
fn a_token_dropped_without_leave_does_not_wedge_the_point() {
    {
        let _forgotten = UNBALANCED.start(); // dropped: never left
    }
    let t = UNBALANCED.start();
    std::thread::sleep(Duration::from_millis(2));
    UNBALANCED.leave(t);
    let r = profpoint::snapshot();
    let p = find(&r, "UNBALANCED");
    assert_eq!(
        (p.nr, p.timed, p.nested),
        (1, 1, 0),
        "the later call is timed, not 'recursive'"
    );
    assert!(p.total_ns >= 2_000_000);
}
