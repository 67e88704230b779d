//! The overhead budget: points that cost less than it are timed on every call; a hot point is
//! timed on one call in N, counted only or (where the user opted in) timed in bursts, its count
//! exact unless in bursts (then estimated), its estimated total inside its error bar; a point
//! that cools down is timed fully again; the user's own choices stand. Each test runs in its own process (nextest's, or a child
//! of its own under a plain `cargo test`: `in_own_process`), so each has the process's budget
//! to itself.

use profpoint::{PointReport, Report};
use profpoint_test_support::cpu::thread_cpu;
use profpoint_test_support::runner::in_own_process;
use std::time::{Duration, Instant};

/// Work that takes at least `d` (a busy loop on the clock).
fn busy(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// ~2 us a call: too dear to time on every call under a 1% budget (a timed call costs tens of
/// nanoseconds: BENCHMARKS.md, "Profile points"), cheap enough to sample (an untimed call
/// costs a fraction of a timed one).
#[profpoint::profile_point]
fn hot() {
    busy(Duration::from_micros(2));
}

/// Calls `hot` 100 times: its self time is its own loop only.
#[profpoint::profile_point]
fn outer() {
    for _ in 0..100 {
        hot();
    }
}

/// Nothing but the call: too hot even to count under a tiny budget.
#[profpoint::profile_point]
fn tiny(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_add(1)
}

/// Work of its own (~250 multiplications through memory, a few hundred ns) and four calls of
/// `tiny`: a parent too hot to count under a tiny budget, whose self time is most of its
/// time, far beyond what compensation's figure a call may be off by (a short body timed
/// alone can read a fraction of its cost in the windows).
#[profpoint::profile_point]
fn parent_of_tiny(mut x: u64) -> u64 {
    for _ in 0..4 {
        x = tiny(x);
        for _ in 0..64 {
            x = std::hint::black_box(x).wrapping_mul(3);
        }
    }
    x
}

/// ~50 us of CPU a call: cheap to time on every call under any budget of these tests. CPU
/// time, not wall
/// time: the budget is a share of the process's CPU time, and beside two busy loops and the
/// rest of the suite a wall-clock spin got so little CPU that the controller's first round
/// priced this point at more than 2% of it (it throttled it in 2 of 6 such runs).
#[profpoint::profile_point]
fn cold() {
    spin_cpu(Duration::from_micros(50));
}

/// ~250 us of CPU a call, as `cold` but five times longer: the point that a 2% budget times on
/// every call, even under qemu (the aarch64 run), where a timed call costs so much more that
/// `cold`'s calls went over 2% of the CPU (throttled once in a run).
#[profpoint::profile_point]
fn slow() {
    spin_cpu(Duration::from_micros(250));
}

/// Spins for `d` of this thread's CPU time.
fn spin_cpu(d: Duration) {
    let end = thread_cpu() + d;
    while thread_cpu() < end {
        std::hint::spin_loop();
    }
}

fn point(r: &Report, name: &str) -> PointReport {
    r.points
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no point {name}"))
}

/// Runs `step` until `done` holds for a snapshot (checked every ~20 ms), at most `cap`; the
/// last snapshot, or a panic naming `what`.
fn until(
    what: &str,
    cap: Duration,
    mut step: impl FnMut(),
    done: impl Fn(&Report) -> bool,
) -> Report {
    let t = Instant::now();
    loop {
        let round = Instant::now();
        while round.elapsed() < Duration::from_millis(20) {
            step();
        }
        let r = profpoint::snapshot();
        // Whatever the budget did to its timing, no report holds an impossible figure.
        let bad = r.impossible();
        assert!(bad.is_empty(), "impossible figures: {bad:#?}");
        if done(&r) {
            return r;
        }
        assert!(
            t.elapsed() < cap,
            "waited {cap:?} for {what}; budget section: {:?}",
            r.budget
        );
    }
}

#[test]
fn points_that_cost_less_than_the_budget_are_timed_on_every_call() {
    if !in_own_process("points_that_cost_less_than_the_budget_are_timed_on_every_call") {
        return;
    }
    assert_eq!(profpoint::budget(), Some(2.0), "the default budget is 2%");
    let mut calls = 0u64;
    let r = until(
        "five budget rounds",
        Duration::from_secs(30),
        || {
            slow();
            calls += 1;
        },
        |r| r.budget.rounds >= 5,
    );
    assert!(r.budget.running, "{:?}", r.budget);
    assert!(r.budget.throttled.is_empty(), "{:?}", r.budget);
    assert!(r.budget.events.is_empty(), "{:?}", r.budget);
    let c = point(&r, "budget::slow");
    assert_eq!(c.nr, calls);
    assert_eq!(c.timed, calls, "every call timed");
    assert!(!c.estimated);
    assert_eq!(c.total_ci95_ns, 0);
    assert_eq!(c.sampling, None);
}

#[test]
fn a_hot_point_is_sampled_with_an_exact_count_and_an_estimate_inside_its_error_bar() {
    if !in_own_process(
        "a_hot_point_is_sampled_with_an_exact_count_and_an_estimate_inside_its_error_bar",
    ) {
        return;
    }
    profpoint::set_budget(Some(1.0));
    let mut calls = 0u64;
    let (started, cpu_at_start) = (Instant::now(), thread_cpu());
    until(
        "the budget to throttle budget::hot",
        Duration::from_secs(30),
        || {
            outer();
            calls += 100;
        },
        |r| point(r, "budget::hot").sampling.is_some(),
    );
    // Some more rounds under the throttle.
    let r = until(
        "five more rounds",
        Duration::from_secs(30),
        || {
            outer();
            calls += 100;
        },
        {
            let from = profpoint::snapshot().budget.rounds;
            move |r| r.budget.rounds >= from + 5
        },
    );
    let wall = started.elapsed();
    // Wall time this thread did not run (preempted by other processes): see `outer` below.
    let lost = wall.saturating_sub(thread_cpu() - cpu_at_start).as_nanos() as f64;
    let h = point(&r, "budget::hot");
    assert_eq!(h.nr, calls, "every call counted: {:?}", r.budget);
    // One calibration: the header's overhead and the budget's price of a timed call agree.
    let o = r
        .overhead
        .as_ref()
        .expect("the controller measured the overhead");
    assert!(
        (o.per_call_ns - r.budget.cost_timed_ns).abs() <= 1e-9 * o.per_call_ns.max(1.0),
        "header {} ns, budget {} ns",
        o.per_call_ns,
        r.budget.cost_timed_ns
    );
    assert!(h.enabled, "never switched off: {:?}", r.budget);
    assert!(h.timed < calls, "some calls untimed");
    assert!(h.estimated && h.total_ci95_ns > 0, "{h:?}");
    let event = r
        .budget
        .events
        .iter()
        .find(|e| e.point == "budget::hot")
        .unwrap_or_else(|| panic!("no event for budget::hot: {:?}", r.budget));
    assert_eq!(event.from, "on");
    assert!(event.calls_per_s > 0.0);
    // Each call takes at least 2 us, so every stratum's estimate is at least its calls times
    // 2 us; all of them took at most the loop's wall time, which the estimate may pass by
    // its error. Three 95% half-widths (~6 standard errors): on a busy machine a timed call
    // that was preempted for milliseconds stands for N calls, and the durations are so
    // heavy-tailed that the normal approximation under the error bar is loose; with m such
    // calls sampled, the excess grows like m and the error bar like the square root of m.
    let floor = calls as f64 * 2_000.0;
    let (total, ci) = (h.total_ns as f64, h.total_ci95_ns as f64);
    assert!(total >= 0.99 * floor, "total {total} under {floor}");
    assert!(
        total - 3.0 * ci <= wall.as_nanos() as f64,
        "total {total} ± {ci} over the wall time {wall:?}"
    );
    // Untimed calls of `hot` count in `outer`'s intervals as `hot`'s mean call: `outer`'s
    // self time is its loop (~1% of it), not its untimed children (a share 1 - 1/N of it
    // without that). The margin (at most 70% of what no attribution would leave) is for the
    // mean, a noisy estimate of heavy-tailed calls. A preemption is another matter: a 4 ms
    // time slice of another process lands in one call of `hot`, timed with chance 1/N, and
    // the few that are timed (often none) say little of the many that are not. The wall time
    // this thread did not run is allowed on top: quiet, it is next to nothing and the bound
    // is as strict as ever (beside two busy loops outer's self read 46-71% of its total).
    let o = point(&r, "budget::outer");
    let n = match h.sampling {
        Some(n) if n > 1 => f64::from(n),
        _ => 2.0,
    };
    let bound = (0.7 * (1.0 - 1.0 / n)).max(0.3) * o.total_ns as f64 + lost;
    assert!(
        (o.self_ns.unwrap() as f64) <= bound,
        "outer self {:?} of total {} (bound {bound:.0} ns, {lost:.0} of it preempted): {o:?} {h:?} {:?}",
        o.self_ns,
        o.total_ns,
        r.budget
    );
    // The table says what the budget did.
    let table = r.to_table();
    assert!(table.contains("Overhead budget 1% of CPU time"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.contains("budget::hot") && l.trim_start().starts_with(['1', 'c'])),
        "{table}"
    );
    // The JSON report carries the section.
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["budget"]["percent"], 1.0);
    assert!(
        json["budget"]["events"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
    );
}

/// A throttled point's time comes from the wall sampler, and the tree holds no impossible
/// figure by construction: `hot` (~2 us of work a call, 100 calls in each `outer`) is timed
/// one call in 16 (set by the user, so that a loaded machine's budget cannot count it instead,
/// which keeps its calls out of the tree), `outer` on every call. The truth brackets `hot`'s
/// sampled total: each call takes at least 2 us, and all of them lie inside `outer`'s timed
/// calls.
#[test]
fn a_throttled_point_s_time_is_sampled_within_its_parent_s() {
    if !in_own_process("a_throttled_point_s_time_is_sampled_within_its_parent_s") {
        return;
    }
    profpoint::set_budget(Some(2.0));
    profpoint::set_sampling("budget::hot", 16);
    let mut calls = 0u64;
    // A second of samples (250 at the sampler's period).
    let r = until(
        "a second of wall samples",
        Duration::from_secs(60),
        || {
            outer();
            calls += 100;
        },
        |r| {
            r.budget
                .wall_sampler
                .as_ref()
                .is_some_and(|w| w.periods >= 250)
        },
    );
    let w = r
        .budget
        .wall_sampler
        .as_ref()
        .unwrap_or_else(|| panic!("no wall sampler: {:?}", r.budget));
    assert!(w.samples > 0, "{w:?}");
    let (h, o) = (point(&r, "budget::hot"), point(&r, "budget::outer"));
    assert_eq!(h.nr, calls, "every call counted");
    assert!(
        h.timed < calls && h.estimated && h.total_ci95_ns > 0,
        "{h:?}"
    );
    assert!(
        !o.estimated && o.timed == o.nr,
        "outer timed on every call: {o:?}"
    );
    let tree = r.tree.as_ref().expect("a tree");
    let hot_nodes: Vec<_> = tree
        .nodes
        .iter()
        .filter(|n| n.name == "budget::hot")
        .collect();
    assert!(
        !hot_nodes.is_empty() && hot_nodes.iter().all(|n| n.sampled && n.total_ci95_ns > 0),
        "{hot_nodes:?}"
    );
    // The row is its paths' sum.
    let sum: u64 = hot_nodes.iter().map(|n| n.total_ns).sum();
    assert_eq!(h.total_ns, sum, "{h:?} {hot_nodes:?}");
    // Below its parent by construction; above what its calls surely took, within sampling's
    // spread (its interval, three times over for a loaded machine's late looks).
    assert!(h.total_ns <= o.total_ns, "hot {h:?} above outer {o:?}");
    let floor = calls as f64 * 2_000.0;
    let (total, ci) = (h.total_ns as f64, h.total_ci95_ns as f64);
    assert!(
        total + 3.0 * ci >= floor,
        "hot {total} ± {ci} ns under the {floor} ns its calls took at least"
    );
    let own = o.self_ns.expect("a self time");
    assert!(own <= o.total_ns, "{o:?}");
}

#[test]
fn a_point_that_cools_down_is_timed_on_every_call_again() {
    if !in_own_process("a_point_that_cools_down_is_timed_on_every_call_again") {
        return;
    }
    profpoint::set_budget(Some(1.0));
    until(
        "the budget to throttle budget::hot",
        Duration::from_secs(30),
        || {
            for _ in 0..100 {
                hot();
            }
        },
        // Sampled or counted; or in bursts where a counted call costs more than the budget
        // allows at this rate (under emulation: qemu-aarch64 prices a counted call ~10x
        // higher than the function it counts): its bursts tell when it cools down too.
        |r| {
            let p = point(r, "budget::hot");
            p.sampling.is_some() || !p.enabled
        },
    );
    // Now rare: one call per ~200 us of other work.
    let r = until(
        "budget::hot to be timed fully again",
        Duration::from_secs(60),
        || {
            hot();
            busy(Duration::from_micros(200));
        },
        // The controller's state, not the point's live status alone: a point in bursts is on
        // inside each burst's window, and a snapshot taken there read "timed fully again"
        // before the controller had said so (under qemu, where `hot` goes to bursts). And the
        // live status too: a snapshot reads the points before the budget's section, and under
        // qemu one read `hot` sampled 1 in 4 and the controller's "on" of the round between.
        |r| {
            let p = point(r, "budget::hot");
            p.enabled
                && p.sampling.is_none()
                && r.budget
                    .throttled
                    .iter()
                    .any(|t| t.point == "budget::hot" && t.now == "on")
        },
    );
    assert!(
        r.budget
            .events
            .iter()
            .any(|e| e.point == "budget::hot" && e.to == "on"),
        "{:?}",
        r.budget
    );
    let t = r
        .budget
        .throttled
        .iter()
        .find(|t| t.point == "budget::hot")
        .expect("listed as throttled at some time");
    assert_eq!(t.now, "on");
    assert!(t.changes >= 2);
}

#[test]
fn a_point_too_hot_even_to_count_is_timed_in_bursts_with_estimated_calls() {
    if !in_own_process("a_point_too_hot_even_to_count_is_timed_in_bursts_with_estimated_calls") {
        return;
    }
    // 0.1% of the CPU time: `tiny` at ~10 M calls a second cannot even be counted (~2.5 ns a
    // call: 2.5%), and the user opted in to bursts (without them, counting is the floor).
    // The bounds at the end are relative to it.
    const BUDGET_PERCENT: f64 = 0.1;
    profpoint::set_budget(Some(BUDGET_PERCENT));
    profpoint::set_budget_bursts(true);
    // `tiny`'s calls, counted here: the truth its estimate is held to.
    let mut x = 0;
    let r = until(
        "budget::tiny to be in bursts for 40 of them",
        Duration::from_secs(60),
        || {
            // A thousand calls of `tiny` every ~100 us: a burst of a few hundred microseconds
            // sees several of these phases. At most ~10,000 calls a second of `cold`: ~0.03%
            // of a CPU, under the budget.
            for _ in 0..1000 {
                x = tiny(x);
            }
            cold();
            cold();
        },
        // `cold` is the reference the estimate is taken against, counted all the time: timed
        // on every call here, counted only under emulation (qemu-aarch64 prices a timed call
        // at ~120 ns, and its ~14,000 calls a second then cost more than 0.1%).
        |r| !point(r, "budget::tiny").enabled && r.budget.bursts >= 40,
    );
    let t = r
        .budget
        .throttled
        .iter()
        .find(|t| t.point == "budget::tiny")
        .unwrap_or_else(|| panic!("{:?}", r.budget));
    assert_eq!(t.worst, "burst");
    assert!(
        t.off_calls_per_s > 10_000.0,
        "rate when put in bursts {}",
        t.off_calls_per_s
    );
    // Its calls between bursts are estimated from its count windows (a window of 1 ms at a
    // random moment of every 10-100 ms, its calls there over its share of the slot: see
    // `budget/sample.rs`); benches/burst_coverage measures how often the interval covers the
    // truth (BENCHMARKS.md, "Estimates in bursts"). What is asserted is what holds on any
    // machine: the count says it is an estimate, with its interval or as a lower bound; a
    // lower bound holds the calls seen only, never more than the truth; an estimate holds at
    // least the calls seen, and is not the seen calls alone (~0.1x): a bound that wide tells
    // the two apart. A 95% interval is not held to the truth here (one run in twenty may
    // miss it); the bench is where that is counted.
    let p = point(&r, "budget::tiny");
    assert!(p.estimated && p.nr_estimated, "{p:?}");
    assert!(p.nr >= p.timed, "{p:?}");
    let ratio = p.nr as f64 / x as f64;
    eprintln!(
        "budget::tiny: {} calls estimated of {x} ({ratio:.3}x), interval {:?}; cost {:.3}% of a {BUDGET_PERCENT}% budget, {:?}",
        p.nr, p.nr_ci95, r.budget.cost_percent, r.budget.over
    );
    // Bursts have a least length, so a hot point may take the run above so small a budget:
    // the report then says how the cost was paid (the parts add up to it) and why.
    if r.budget.cost_percent > profpoint_report::OVER_SAID * BUDGET_PERCENT {
        let over = r.budget.over.as_ref().expect("the budget not kept is said");
        let parts: f64 = over.parts.iter().map(|p| p.percent).sum();
        assert!(
            (parts - r.budget.cost_percent).abs() < 1e-6 * r.budget.cost_percent.max(1.0),
            "{:?}",
            r.budget
        );
        assert!(!over.why.is_empty(), "{over:?}");
    }
    match p.nr_ci95 {
        None => assert!(p.nr <= x, "a lower bound of {} over {x} calls", p.nr),
        Some(_) => {
            assert!(
                (0.3..=3.0).contains(&ratio),
                "estimated {} calls of {x}: {ratio:.2}x; {:?}",
                p.nr,
                r.budget
            );
            assert!(p.total_ci95_ns > 0, "{p:?}");
        }
    }
    // The tree saw `tiny` only in its bursts; its nodes are scaled to its row, so a flame
    // graph drawn from them gives it its row's calls and time (unscaled: its bursts' calls
    // alone, ~0.3% of them).
    let tree = r.tree.as_ref().expect("the report has a tree");
    let nodes: Vec<_> = tree
        .nodes
        .iter()
        .filter(|n| n.name == "budget::tiny")
        .collect();
    assert!(
        !nodes.is_empty() && nodes.iter().all(|n| n.estimated),
        "{nodes:?}"
    );
    let calls: u64 = nodes.iter().map(|n| n.calls).sum();
    let own: u64 = nodes.iter().map(|n| n.est_self_ns()).sum();
    let row_self = p.self_ns.expect("a synchronous point");
    assert!(
        calls.abs_diff(p.nr) <= nodes.len() as u64,
        "tree {calls} calls, row {}",
        p.nr
    );
    // Within the rounding of a node's stored ns per timed call (half a ns times its calls per
    // timed call), far under the 100x of the unscaled nodes.
    let rounding: f64 = nodes
        .iter()
        .map(|n| 0.5 * n.calls as f64 / n.timed.max(1) as f64 + 1.0)
        .sum();
    assert!(
        own.abs_diff(row_self) as f64 <= rounding,
        "tree {own} ns of self time, row {row_self} (rounding {rounding:.0})"
    );
    // The cheap point, the estimate's reference, was never off nor in bursts, where the
    // budget can hold it counted. Under emulation it cannot: qemu-aarch64 prices a counted
    // call at ~58 ns, and `cold`'s ~16,000 calls a second then cost ~0.09% of a CPU, nearly
    // the whole 0.1%, on top of `tiny`'s bursts; the controller is right to put it in bursts
    // then, and the estimate above holds without it.
    let cold_peak = r
        .budget
        .events
        .iter()
        .filter(|e| e.point == "budget::cold")
        .map(|e| e.calls_per_s)
        .fold(0.0, f64::max);
    let cold_share = r.budget.cost_counted_ns * cold_peak / 1e9 * 100.0;
    // And only where the budget was nearly kept. Natively the run's points cost ~0.3% of a
    // CPU (its first rounds are timed fully, and a burst lasts at least 50 us); under
    // qemu-aarch64 on a loaded machine a timed call cost ~380 ns and the points 1.7%: there
    // `tiny`'s shortest bursts alone are over the budget many times, and the controller must
    // squeeze every point, `cold` too. Over 10x the budget is taken as that case.
    let kept = r.budget.cost_percent <= 10.0 * BUDGET_PERCENT;
    if cold_share < BUDGET_PERCENT / 2.0 && kept {
        assert!(
            r.budget
                .events
                .iter()
                .all(|e| e.point != "budget::cold" || (e.to != "off" && e.to != "burst")),
            "{:?}",
            r.budget
        );
    } else {
        eprintln!(
            "budget::cold counted costs {cold_share:.3}% of a CPU at its peak rate \
             ({cold_peak:.0} calls/s at {:.1} ns a call), and the points {:.3}%, against \
             the {BUDGET_PERCENT}% budget: whether it stays counted is checked only where the \
             first is under half the budget and the second within 10x it, not on this run",
            r.budget.cost_counted_ns, r.budget.cost_percent
        );
    }
}

#[test]
fn a_throttled_parent_s_self_time_comes_from_its_calls_timed_alone() {
    if !in_own_process("a_throttled_parent_s_self_time_comes_from_its_calls_timed_alone") {
        return;
    }
    profpoint::set_budget(Some(0.1));
    profpoint::set_budget_bursts(true);
    let mut x = 0;
    let has_isolated_mean = |r: &Report, name: &str| {
        r.budget
            .throttled
            .iter()
            .any(|t| t.point == name && t.isolated_avg_ns.is_some())
    };
    let r = until(
        "budget::parent_of_tiny to have an isolated mean",
        Duration::from_secs(60),
        || {
            for _ in 0..1000 {
                x = parent_of_tiny(x);
            }
            cold();
            cold();
        },
        |r| has_isolated_mean(r, "budget::parent_of_tiny"),
    );
    std::hint::black_box(x);
    assert!(r.budget.isolations > 0, "{:?}", r.budget);
    // The leaf is priced from its bursts, never timed alone (its bursts have no nested call's
    // cost to take out).
    assert!(!has_isolated_mean(&r, "budget::tiny"), "{:?}", r.budget);
    // The parent's total is its isolated mean call times its calls, with an error bar from
    // its windows' spread; its self time is that less its four calls of `tiny` a call at
    // `tiny`'s mean in the bursts, within the total. Its share of the isolated figure read
    // 0.82-1.0 here, 0.56-1.0 in 50 runs two at a time beside two busy loops, 0.24 once in
    // an earlier ten such runs (a preempted burst prices `tiny` dearer); the bound tells a
    // self time made so from none (a clamped 0, or no isolation at all). Not run under
    // qemu-aarch64, where it read 0 in 2 of 50 loaded runs (scripts/test-aarch64 says why).
    let p = point(&r, "budget::parent_of_tiny");
    let own = p.self_ns.expect("a self time") as f64;
    let iso = r
        .budget
        .throttled
        .iter()
        .find(|t| t.point == "budget::parent_of_tiny")
        .and_then(|t| t.isolated_avg_ns)
        .expect("an isolated mean");
    let alone = iso * p.nr as f64;
    eprintln!(
        "budget::parent_of_tiny: self {own:.0} ns, its isolated mean {iso:.1} ns x {} calls = \
         {alone:.0}, total {} ns, {} isolation windows",
        p.nr, p.total_ns, r.budget.isolations
    );
    assert!(
        (p.total_ns as f64 - alone).abs() <= 1e-3 * alone + 2.0 && p.total_ci95_ns > 0,
        "{p:?}\n{:?}",
        r.budget.throttled
    );
    assert!(
        own > 0.1 * alone && own <= p.total_ns as f64,
        "{p:?}\n{:?}\n{:?}",
        point(&r, "budget::tiny"),
        r.budget.throttled
    );
}

#[test]
fn the_users_own_choices_stand() {
    if !in_own_process("the_users_own_choices_stand") {
        return;
    }
    profpoint::set_budget(Some(0.01));
    assert_eq!(profpoint::set_sampling("budget::tiny", 8), 1);
    assert_eq!(profpoint::disable("budget::hot"), 1);
    let mut x = 0;
    let r = until(
        "ten budget rounds",
        Duration::from_secs(30),
        || {
            for _ in 0..1000 {
                x = tiny(x);
                hot();
            }
        },
        |r| r.budget.rounds >= 10,
    );
    assert_eq!(point(&r, "budget::tiny").sampling, Some(8));
    assert!(!point(&r, "budget::hot").enabled);
    assert!(
        r.budget
            .events
            .iter()
            .all(|e| e.point != "budget::tiny" && e.point != "budget::hot"),
        "{:?}",
        r.budget
    );
}

#[test]
fn without_a_budget_throttled_points_are_timed_fully_again() {
    if !in_own_process("without_a_budget_throttled_points_are_timed_fully_again") {
        return;
    }
    profpoint::set_budget(Some(0.01));
    let mut x = 0;
    until(
        "budget::tiny to be throttled",
        Duration::from_secs(30),
        || {
            for _ in 0..1000 {
                x = tiny(x);
            }
        },
        |r| point(r, "budget::tiny").sampling.is_some() || !point(r, "budget::tiny").enabled,
    );
    profpoint::set_budget(None);
    assert_eq!(profpoint::budget(), None);
    let r = until(
        "budget::tiny to be timed again",
        Duration::from_secs(30),
        || {
            for _ in 0..1000 {
                x = tiny(x);
            }
        },
        |r| {
            let t = point(r, "budget::tiny");
            t.enabled && t.sampling.is_none()
        },
    );
    assert_eq!(r.budget.percent, None);
    // From now on every call is timed.
    let before = point(&r, "budget::tiny");
    for _ in 0..1000 {
        x = tiny(x);
    }
    let after = point(&profpoint::snapshot(), "budget::tiny");
    assert_eq!(after.timed - before.timed, 1000);
}

#[cfg(unix)]
#[test]
fn a_forked_child_restarts_the_controller_only_with_a_new_thread() {
    if !in_own_process("a_forked_child_restarts_the_controller_only_with_a_new_thread") {
        return;
    }
    profpoint::set_budget(Some(0.01));
    let mut x = 0;
    until(
        "budget::tiny to be throttled",
        Duration::from_secs(30),
        || {
            for _ in 0..1000 {
                x = tiny(x);
            }
        },
        |r| !r.budget.throttled.is_empty(),
    );
    // SAFETY: the child runs profiled code, a thread and a snapshot, then leaves with `_exit`
    // (no at-exit report, no unwinding into the test harness).
    let child = unsafe { libc::fork() };
    assert!(child >= 0);
    if child == 0 {
        let r = profpoint::snapshot();
        let ok_before = !r.budget.running
            && r.budget
                .note
                .as_deref()
                .is_some_and(|n| n.contains("forked child"));
        // A new thread that calls a point starts the child's own controller.
        std::thread::spawn(cold).join().unwrap();
        let t = Instant::now();
        let mut ok_after = false;
        while t.elapsed() < Duration::from_secs(20) {
            cold();
            let r = profpoint::snapshot();
            if r.budget.running && r.budget.rounds > 0 {
                ok_after = true;
                break;
            }
        }
        // SAFETY: ends the child at once.
        unsafe {
            libc::_exit(if ok_before && ok_after {
                0
            } else if ok_before {
                2
            } else {
                3
            })
        };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    assert!(libc::WIFEXITED(status), "child status {status}");
    match libc::WEXITSTATUS(status) {
        0 => {}
        2 => panic!("the child's controller did not restart with its new thread"),
        3 => panic!("the child's report did not say its controller is not running"),
        s => panic!("child exit status {s}"),
    }
    // The parent's controller runs on.
    assert!(profpoint::snapshot().budget.running);
}
