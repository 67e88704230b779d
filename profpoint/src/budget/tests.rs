use super::*;
use allocate::{allocate, relax_limited};
use burst::{BurstRound, Reference};
use controller::fold_round;
use sample::{SampleState, Sampled};

const COSTS: ModeCosts = ModeCosts {
    timed: 25.0,
    skipped: 5.0,
    counted: 2.0,
};

fn cost(n: &[u64], modes: &[Mode]) -> f64 {
    n.iter()
        .zip(modes)
        .map(|(&n, m)| {
            let n = n as f64;
            match *m {
                Mode::On => n * COSTS.timed,
                Mode::Sampled(e) => {
                    n * COSTS.skipped + n / f64::from(e) * (COSTS.timed - COSTS.skipped)
                }
                Mode::Count => n * COSTS.counted,
                Mode::Burst | Mode::Off => 0.0,
            }
        })
        .sum()
}

#[test]
fn cheap_points_stay_on() {
    let n = [10, 1000, 5];
    let modes = allocate(&n, &COSTS, 1e9, false);
    assert_eq!(modes, vec![Mode::On; 3]);
}

#[test]
fn the_hottest_point_is_sampled_and_the_cost_fits() {
    // 1M calls of one point, 100 of another; room for ~2.5M ticks.
    let n = [100, 1_000_000];
    let target = 6e6;
    let modes = allocate(&n, &COSTS, target, false);
    assert_eq!(modes[0], Mode::On, "{modes:?}");
    assert!(matches!(modes[1], Mode::Sampled(e) if e >= 2), "{modes:?}");
    assert!(
        cost(&n, &modes) <= target,
        "{} > {target}",
        cost(&n, &modes)
    );
}

#[test]
fn counting_then_bursts_as_last_resorts() {
    let n = [1_000_000, 10_000, 10];
    // Sampling the hottest is too dear (5 ticks a call), counting it fits.
    let modes = allocate(&n, &COSTS, 2.5e6, false);
    assert_eq!(modes[0], Mode::Count, "{modes:?}");
    assert!(cost(&n, &modes) <= 2.5e6);
    // Not even counting fits, bursts allowed: the hottest goes to bursts (off between them),
    // the others share what is left (the coldest is still timed on every call).
    let modes = allocate(&n, &COSTS, 1e5, true);
    assert_eq!(modes[0], Mode::Burst, "{modes:?}");
    assert_eq!(modes[2], Mode::On, "{modes:?}");
    assert!(cost(&n, &modes) <= 1e5);
}

#[test]
fn without_bursts_counting_is_the_floor() {
    let n = [1_000_000, 10_000, 10];
    // Not even counting fits, and bursts are not allowed (the default): every point still
    // counts, none is off or in bursts, whatever the cost.
    let modes = allocate(&n, &COSTS, 1e5, false);
    assert!(
        modes.iter().all(|m| !matches!(m, Mode::Burst | Mode::Off)),
        "{modes:?}"
    );
    assert_eq!(modes[0], Mode::Count, "{modes:?}");
    // The coldest is still timed on every call: the hottest's counting is a floor no state
    // avoids, and it is not charged to the others.
    assert_eq!(modes[2], Mode::On, "{modes:?}");
    // The same for any target, however small.
    for target in [0.0, 1.0, 1e3, 1e6] {
        let modes = allocate(&n, &COSTS, target, false);
        assert!(
            modes.iter().all(|m| !matches!(m, Mode::Burst | Mode::Off)),
            "{target}: {modes:?}"
        );
    }
}

#[test]
fn points_in_bursts_are_counted_again_when_bursts_are_withdrawn() {
    assert_eq!(relax_limited(Mode::Burst, Mode::Count), Mode::Count);
    assert_eq!(relax_limited(Mode::Burst, Mode::On), Mode::Count);
}

#[test]
fn relaxing_is_gradual_and_throttling_immediate() {
    assert_eq!(
        relax_limited(Mode::On, Mode::Sampled(64)),
        Mode::Sampled(64)
    );
    assert_eq!(
        relax_limited(Mode::Sampled(64), Mode::On),
        Mode::Sampled(16)
    );
    assert_eq!(relax_limited(Mode::Sampled(4), Mode::On), Mode::On);
    assert_eq!(relax_limited(Mode::Off, Mode::On), Mode::Off);
    assert_eq!(relax_limited(Mode::Burst, Mode::On), Mode::Count);
    assert_eq!(relax_limited(Mode::Count, Mode::On), Mode::Sampled(64));
}

#[test]
fn a_round_with_few_timed_calls_waits_for_more() {
    // One timed call of 1,000,000 ticks (a preemption) among 10,000 calls of ~10 ticks:
    // alone it would say 10^10. Pooled with the next rounds' 40 timed calls of 10 ticks,
    // the stratum's mean is ~24,400 ticks.
    let mut e = Est::default();
    e.fold(&Scalars {
        timed: 1,
        skipped: 9_999,
        total: 1_000_000,
        self_ticks: 1_000_000,
        ..Scalars::default()
    });
    assert_eq!(e.total, 0.0, "still pending");
    e.fold(&Scalars {
        timed: 40,
        skipped: 39_960,
        total: 400,
        self_ticks: 400,
        ..Scalars::default()
    });
    let (total, _, _) = e.resolve(41, 1_000_400, 0.0);
    let expected = 1_000_400.0 * 50_000.0 / 41.0;
    assert!((total - expected).abs() < 1.0, "{total} vs {expected}");
}

#[test]
fn a_last_stratum_with_few_timed_calls_is_priced_at_the_point_s_mean() {
    // 1,000 timed calls of 100 ticks, exact; then, sampled 1 in 2^20, 3 timed calls (one of
    // them slow: 7,000 ticks) among 2,900,003, still pending when the report closes it.
    let mut e = Est::default();
    e.fold(&calls(1000, 100));
    e.fold(&Scalars {
        timed: 3,
        skipped: 2_900_000,
        total: 7_200,
        self_ticks: 7_200,
        ..Scalars::default()
    });
    // The untimed calls at the mean of all 1,003 timed ones, not at the 3's 2,400.
    let mean = (100_000.0 + 7_200.0) / 1003.0;
    let (total, own, _) = e.resolve(1003, 107_200, 0.0);
    let expected = 107_200.0 + 2_900_000.0 * mean;
    assert!(
        (total - expected).abs() < 1e-6 * expected,
        "{total} vs {expected}"
    );
    assert!(
        (own - expected).abs() < 1e-6 * expected,
        "{own} vs {expected}"
    );
}

#[test]
fn a_stall_is_counted_once_not_scaled() {
    // 40 timed calls of 10 ticks and one of 10,000,000 (a preemption) among 41,000 calls.
    let mut e = Est::default();
    e.fold(&Scalars {
        timed: 41,
        skipped: 40_959,
        total: 10_000_400,
        self_ticks: 10_000_400,
        max: 10_000_000,
        ..Scalars::default()
    });
    let (total, _, _) = e.resolve(41, 10_000_400, 0.0);
    let expected = 10_000_000.0 + 400.0 * 40_999.0 / 40.0;
    assert!((total - expected).abs() < 1.0, "{total} vs {expected}");
    // Without a new maximum in the stratum, nothing is taken for a stall.
    let mut e = Est::default();
    e.fold(&Scalars {
        timed: 41,
        skipped: 40_959,
        total: 10_000_400,
        self_ticks: 10_000_400,
        max: 0,
        ..Scalars::default()
    });
    let (total, _, _) = e.resolve(41, 10_000_400, 0.0);
    assert!((total - 10_000_400.0 * 1000.0).abs() < 1.0, "{total}");
}

/// `n` calls of `each` ticks, all timed, all outermost, self time all theirs.
fn calls(n: u64, each: u64) -> Scalars {
    Scalars {
        timed: n,
        total: n * each,
        self_ticks: n * each,
        ..Scalars::default()
    }
}

fn round(inside: u64, all: u64, reliable: bool) -> BurstRound {
    BurstRound {
        reference: Reference {
            inside,
            all,
            warm: 0,
        },
        dt: 1e8,
        on: 1e5,
        warm: 0.0,
        reliable,
    }
}

/// What count windows that saw calls in `hits` slots told: `unseen` calls, their variance.
fn told(unseen: f64, var: f64, hits: u64) -> Sampled {
    Sampled {
        slots: hits.max(10),
        hits,
        seen: 0,
        unseen,
        var,
        sys: 0.0,
        compensated: 0.0,
    }
}

#[test]
fn a_slot_stands_for_its_calls_by_its_window_s_share_of_it() {
    // 100 calls in a window of 1e5 ticks of a slot of 1e6: ~1,000 in the slot, 900 unseen.
    let mut s = SampleState::default();
    s.add(100, [100.0; 3], 1e5, 1e6);
    assert_eq!(s.pending.unseen, 900.0);
    assert_eq!((s.pending.slots, s.pending.hits), (1, 1));
    // The first slot is uncertain by its whole estimate.
    assert_eq!(s.pending.var, 1000.0 * 1000.0);
    // A slot at the same rate adds no variance; one at twice the rate adds half the squared
    // difference of the slots' estimates.
    s.add(100, [100.0; 3], 1e5, 1e6);
    assert_eq!(s.pending.var, 1e6);
    s.add(200, [200.0; 3], 1e5, 1e6);
    assert!((s.pending.var - (1e6 + 1000.0 * 1000.0 / 2.0)).abs() < 1e-6);
    // A window that saw nothing is a slot, not a hit.
    s.add(0, [0.0; 3], 1e5, 1e6);
    assert_eq!((s.pending.slots, s.pending.hits), (4, 3));
}

#[test]
fn counting_s_slowing_is_corrected_per_thread_and_kept_in_the_interval() {
    // Between half the calibrated share and twice it, at most 0.75; the figure is the middle.
    assert_eq!(sample::slowed(0.1), (0.05, 0.125, 0.2));
    assert_eq!(sample::slowed(0.5), (0.25, 0.5, 0.75));
    assert_eq!(sample::slowed(2.0), (0.75, 0.75, 0.75));
    // Two threads in a window of 1,000 ticks, a counted call at 1 tick: the first made 100
    // calls of point 0 (a tenth of its window counting), the second 250 of point 1 and 50 of
    // point 0 (three tenths).
    let before = vec![(1, vec![10, 0]), (2, vec![5, 5])];
    let after = vec![(1, vec![110, 0]), (2, vec![55, 255])];
    let (calls, [least, mid, most]) = sample::window_calls(&before, &after, 2, 1000.0, 1.0);
    assert_eq!(calls, vec![150, 250]);
    let (l1, f1, m1) = sample::slowed(0.1);
    let (_, f2, m2) = sample::slowed(0.3);
    assert!(
        (mid[0] - (100.0 / (1.0 - f1) + 50.0 / (1.0 - f2))).abs() < 1e-9,
        "{mid:?}"
    );
    assert!((mid[1] - 250.0 / (1.0 - f2)).abs() < 1e-9, "{mid:?}");
    assert!(
        (most[0] - (100.0 / (1.0 - m1) + 50.0 / (1.0 - m2))).abs() < 1e-9,
        "{most:?}"
    );
    assert!(
        least[0] > 100.0 / (1.0 - l1) && least[0] < mid[0],
        "{least:?}"
    );
    // A thread that came during the window is found by its shard; one whose shard came first
    // counts from zero.
    let after = vec![(3, vec![7, 0]), (1, vec![110, 0]), (2, vec![5, 5])];
    let (calls, _) = sample::window_calls(&before, &after, 2, 1e9, 1.0);
    assert_eq!(calls, vec![107, 0]);
    // A slot: the corrected calls stand for the slot, the farther end of the range is in the
    // interval.
    let mut s = SampleState::default();
    s.add(100, [110.0, 125.0, 150.0], 1e5, 1e6);
    assert!((s.pending.unseen - 1150.0).abs() < 1e-9);
    assert!((s.pending.sys - 250.0).abs() < 1e-9);
    let mut s = SampleState::default();
    s.add(100, [100.0, 125.0, 130.0], 1e5, 1e6);
    assert!((s.pending.sys - 250.0).abs() < 1e-9);
}

#[test]
fn t95_is_student_s_and_tends_to_the_normal() {
    assert_eq!(sample::t95(0), f64::INFINITY);
    assert_eq!(sample::t95(2), 4.30);
    assert!((sample::t95(30) - 2.042).abs() < 0.01);
    assert!((sample::t95(1000) - 1.96).abs() < 0.01);
}

#[test]
fn unseen_calls_are_priced_at_the_bursts_mean_call() {
    // The burst: 1,000 calls of 10 ticks; the count windows: 999,000 more in the round.
    let mut e = Est::default();
    let w = calls(1000, 10);
    let got = e.fold_sampled(&w, &w, &told(999_000.0, 4e6, 20));
    assert_eq!(got, 1_000_000.0);
    assert_eq!(e.unseen(), (999_000.0, 999_000.0));
    let (total, own, ci) = e.resolve(1000, 10_000, 0.0);
    assert!((total - 10_000_000.0).abs() < 1e-6, "{total}");
    assert!((own - 10_000_000.0).abs() < 1e-6, "{own}");
    // The count's interval: Student's t for 19 degrees of freedom over the sd of 2,000; the
    // total's, the same at 10 ticks a call.
    let half = sample::t95(19) * 2000.0;
    assert!((e.unseen_ci95().unwrap() - half).abs() < 1e-6);
    assert!((ci - half * 10.0).abs() < 1e-6, "{ci}");
    // Where a timed call's instrumentation costs 2 ticks, the compensated mean is uncertain
    // by that much, for every call it prices.
    let mut e = Est::default();
    let s = Sampled {
        compensated: 2.0,
        ..told(999_000.0, 4e6, 20)
    };
    e.fold_sampled(&w, &w, &s);
    let (_, _, with) = e.resolve(1000, 10_000, 0.0);
    assert!((with - ci - 999_000.0 * 2.0).abs() < 1e-3, "{with} {ci}");
}

#[test]
fn unseen_calls_before_any_timed_burst_call_are_priced_at_the_point_s_mean() {
    let mut e = Est::default();
    // Counted in its windows only: 500 calls seen, untimed; 9,500 unseen.
    let seen = Scalars {
        skipped: 500,
        ..Scalars::default()
    };
    e.fold_sampled(&seen, &Scalars::default(), &told(9500.0, 0.0, 10));
    // Its mean timed call over the run: 20 ticks.
    let (total, _, _) = e.resolve(10, 200, 0.0);
    assert!((total - 10_000.0 * 20.0).abs() < 1e-6, "{total}");
}

#[test]
fn a_stall_in_the_timed_calls_does_not_price_the_untimed_ones() {
    // Counted in its windows only: 10 calls timed (9 of 20 ticks, one preempted for
    // 1,000,000), 500 seen untimed, 9,500 unseen.
    let mut e = Est::default();
    let seen = Scalars {
        timed: 10,
        skipped: 500,
        total: 1_000_180,
        self_ticks: 1_000_180,
        max: 1_000_000,
        ..Scalars::default()
    };
    e.fold_sampled(&seen, &Scalars::default(), &told(9500.0, 0.0, 10));
    let c = crate::slot::Counts {
        timed: 10,
        skipped: 500,
        total: 1_000_180,
        self_ticks: 1_000_180,
        min: 20,
        max: 1_000_000,
        ..crate::slot::Counts::default()
    };
    // The stall once, every other call at 20 ticks.
    let (total, own, _) = e.resolve_counts(&c, 0.0);
    let expected = 1_000_000.0 + 10_009.0 * 20.0;
    assert!((total - expected).abs() < 1e-6, "{total} vs {expected}");
    assert!((own - expected).abs() < 1e-6, "{own} vs {expected}");
    // Priced at the mean with the stall in it, each of the 10,000 untimed calls took a tenth
    // of it: 830 times the truth.
    let (naive, _, _) = e.resolve(10, 1_000_180, 0.0);
    assert!(naive > 800.0 * expected, "{naive}");
    // Without a stall (the longest call under STALL_RATIO times the others' mean), the mean
    // is every timed call's.
    let even = crate::slot::Counts {
        total: 200,
        self_ticks: 200,
        max: 20,
        ..c.clone()
    };
    assert_eq!(e.resolve_counts(&even, 0.0), e.resolve(10, 200, 0.0));
    // After a reset the counters hold the calls since it but the run's longest call: one
    // made before it (above the total since) is no stall of these calls, and leaves nothing.
    let after_reset = crate::slot::Counts {
        total: 200,
        self_ticks: 200,
        max: 1_000_000,
        ..c
    };
    assert_eq!(usual_stall(&after_reset), None);
    assert_eq!(e.resolve_counts(&after_reset, 0.0), e.resolve(10, 200, 0.0));
}

#[test]
fn too_few_windows_that_saw_a_call_make_a_lower_bound() {
    let mut e = Est::default();
    let w = calls(1000, 10);
    // Two slots of ten saw a call: the count is the calls seen, with no interval.
    e.fold_sampled(&w, &w, &told(50_000.0, 1e8, 2));
    assert!(e.count_unknown());
    assert_eq!(e.unseen(), (0.0, 0.0));
    assert_eq!(e.unseen_ci95(), None);
    let (total, _, _) = e.resolve(1000, 10_000, 0.0);
    assert_eq!(total, 10_000.0);
    // A third: an estimate, with its interval.
    e.fold_sampled(&Scalars::default(), &Scalars::default(), &told(0.0, 0.0, 1));
    assert!(!e.count_unknown());
    assert_eq!(e.unseen().1, 50_000.0);
    assert!((e.unseen_ci95().unwrap() - sample::t95(2) * 1e4).abs() < 1e-6);
    // Never in bursts: exact, no interval.
    assert_eq!(Est::default().unseen_ci95(), None);
    assert!(!Est::default().count_unknown());
}

/// A point put in bursts is off between them from that moment: until a slot ends, its calls
/// since are unseen, and a report taken then gives its count as a lower bound, not as exact
/// (the phased bench's parent, put in bursts a round before the exit, read 3.8 M calls of 4.3
/// M, unmarked); with slots, the calls since the last one are estimated at its rate.
#[test]
fn a_point_in_bursts_with_no_slot_yet_has_a_lower_bound() {
    let mut e = Est {
        open: true,
        ..Est::default()
    };
    assert!(e.count_unknown());
    assert_eq!(e.unseen_ci95(), None);
    let mut s = SampleState::default();
    assert_eq!(
        s.open(1000.0),
        None,
        "no slot: no rate to estimate the calls since"
    );
    // One slot of 10,000 ticks whose 100-tick window saw 5 calls: 500 calls, 0.05 a tick.
    s.add(5, [5.0; 3], 100.0, 10_000.0);
    assert_eq!(s.open(2000.0), Some(100.0));
    for _ in 0..3 {
        e.fold_sampled(
            &Scalars::default(),
            &Scalars::default(),
            &told(100.0, 10.0, 1),
        );
    }
    assert!(!e.count_unknown());
    assert!(e.unseen_ci95().is_some());
}

/// A program that calls a point at `rate(t)` calls a microsecond (`t` in microseconds),
/// sampled as `sample::sleep_counting` samples it: slots of 10 ms, a window of 1 ms at a
/// uniform moment of each, seeded by `seed`. Returns (true calls, estimate, half-width:
/// `None` for a lower bound).
fn simulate(rate: &dyn Fn(u64) -> f64, end_us: u64, seed: u64) -> (f64, f64, Option<f64>) {
    let (slot, window) = (10_000u64, 1000u64);
    let mut x = seed | 1;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let calls = |from: u64, to: u64| (from..to).map(rate).sum::<f64>();
    let truth = calls(0, end_us);
    let (mut s, mut seen) = (SampleState::default(), 0.0);
    let mut start = 0;
    while start + slot <= end_us {
        let open = start + next(slot - window);
        let c = calls(open, open + window).round();
        seen += c;
        s.add(c as u64, [c; 3], window as f64, slot as f64);
        start += slot;
    }
    let mut e = Est::default();
    let seen_calls = Scalars {
        skipped: seen as u64,
        ..Scalars::default()
    };
    e.fold_sampled(&seen_calls, &Scalars::default(), &s.pending);
    let est = seen + e.unseen().1;
    (truth, est, e.unseen_ci95())
}

#[test]
fn count_windows_intervals_cover_phased_programs() {
    // The shapes of the burst_coverage bench, as rates: 2 s of 250 ms phases (hot, quiet,
    // a parent's slower calls); 9 bursts of 3 ms every 103 ms; 200 ms on, 200 ms off.
    let phased = |t: u64| match (t / 250_000) % 3 {
        0 => 40.0,
        1 => 0.0,
        _ => 25.0,
    };
    let rounds = |t: u64| if t % 103_000 < 3000 { 300.0 } else { 0.0 };
    let halves = |t: u64| {
        if (t / 200_000).is_multiple_of(2) {
            1.0
        } else {
            0.0
        }
    };
    let steady_noise = |t: u64| 10.0 + ((t * 2_654_435_761) % 7) as f64;
    type Rate<'a> = &'a dyn Fn(u64) -> f64;
    let shapes: [(&str, Rate, u64); 4] = [
        ("phased", &phased, 2_250_000),
        ("rounds", &rounds, 927_000),
        ("halves", &halves, 2_400_000),
        ("steady", &steady_noise, 1_000_000),
    ];
    for (name, rate, end) in shapes {
        let (mut covered, mut bounds) = (0, 0);
        for seed in 1..=40u64 {
            let (truth, est, half) = simulate(rate, end, seed * 0x9e37_79b9);
            match half {
                Some(h) => covered += usize::from((est - truth).abs() <= h),
                None => {
                    // A lower bound holds the calls seen, never more than the truth.
                    assert!(est <= truth, "{name}: lower bound {est} over {truth}");
                    bounds += 1;
                    covered += 1;
                }
            }
        }
        eprintln!("{name}: {covered} of 40 covered ({bounds} lower bounds)");
        // 95% intervals: at least 38 of 40 (a miss or two is chance).
        assert!(
            covered >= 37,
            "{name}: {covered} of 40 covered ({bounds} lower bounds)"
        );
    }
}

#[test]
fn a_stalled_burst_is_counted_once_not_as_the_mean_call() {
    let mut e = Est::default();
    let w = calls(1000, 10);
    e.fold_sampled(&w, &w, &told(999_000.0, 0.0, 10));
    let before = e.resolve(0, 0, 0.0).0;
    // A burst whose 1,000 calls took 10,000 ticks each (a preemption in it): taken once.
    let stalled = calls(1000, 10_000);
    e.fold_sampled(&stalled, &stalled, &told(999_000.0, 0.0, 10));
    assert_eq!(e.burst_stalls, 1);
    let added = e.resolve(0, 0, 0.0).0 - before;
    // Its own 10,000,000 ticks, and the unseen calls at the usual mean (10 ticks).
    assert!(
        (added - (10_000_000.0 + 999_000.0 * 10.0)).abs() < 1.0,
        "{added}"
    );
}

#[test]
fn a_preempted_call_in_a_burst_is_counted_once_not_priced_into_the_unseen_calls() {
    // Calls of 1,000 ticks; the second burst's 300 calls hold one of 4,000,000 (the thread
    // preempted inside it): the burst's mean is 14x the usual, under the whole-burst rule's
    // 20x, but the call is 4,000x the others.
    let mut e = Est::default();
    let w = calls(1000, 1000);
    e.fold_sampled(&w, &w, &told(999_000.0, 0.0, 10));
    let before = e.resolve(0, 0, 0.0);
    let stalled = Scalars {
        timed: 300,
        total: 299 * 1000 + 4_000_000,
        self_ticks: 299 * 1000 + 4_000_000,
        max: 4_000_000,
        ..Scalars::default()
    };
    e.fold_sampled(&stalled, &stalled, &told(999_000.0, 0.0, 10));
    assert_eq!(e.burst_stalls, 1);
    // The burst's own calls exactly, and its unseen calls at the usual 1,000 ticks.
    let after = e.resolve(0, 0, 0.0);
    let added = after.0 - before.0;
    let want = stalled.total as f64 + 999_000.0 * 1000.0;
    assert!((added - want).abs() < 1e-6 * want, "{added} against {want}");
    // Its self share stays the bursts' (all of it, here).
    let own = after.1 - before.1;
    assert!((own - want).abs() < 1e-6 * want, "{own} against {want}");
}

#[test]
fn a_burst_tells_what_a_timed_call_costs_in_the_program() {
    // A round of 1e8 ticks with a burst of 1e5: the reference points made 99,900 calls in
    // the 99,900,000 ticks outside it and 90 in it, where at their outside rate they would
    // have taken 90,000 ticks: the burst's 1,000 timed calls cost the other 10,000.
    let b = round(90, 99_990, true);
    let (extra, timed) = burst::burst_extra(&b, 1000).unwrap();
    assert_eq!(timed, 1000.0);
    assert!((extra / timed - 10.0).abs() < 1e-9, "{}", extra / timed);
    // Nothing to tell from: too few reference calls on a side, no timed call, a preempted
    // read.
    assert!(burst::burst_extra(&round(10, 99_010, true), 1000).is_none());
    assert!(burst::burst_extra(&round(50, 60, true), 1000).is_none());
    assert!(burst::burst_extra(&b, 0).is_none());
    assert!(burst::burst_extra(&round(90, 99_990, false), 1000).is_none());
    // With a warm-up of 1e6 ticks before the window, in which the reference points made 900
    // calls (slowed as in the window), and 98,900 calls in the 98,900,000 ticks outside
    // both: neither side of the rate holds the warm-up, and the figure is the same. Counted
    // as outside calls and ticks, it would read 9.91 a call.
    let mut warm = round(90, 90 + 900 + 98_900, true);
    warm.reference.warm = 900;
    warm.warm = 1e6;
    let (extra, _) = burst::burst_extra(&warm, 1000).unwrap();
    assert!((extra / 1000.0 - 10.0).abs() < 1e-9, "{}", extra / 1000.0);
}

/// A round of a point with the window's calls `w` and the warm-up's `u` in it, and `rest`
/// made between bursts.
fn with_warm_up(w: &Scalars, u: &Scalars, rest: &Scalars) -> Scalars {
    let mut d = *w;
    d.add(u);
    d.add(rest);
    d
}

#[test]
fn a_burst_s_warm_up_calls_are_counted_but_their_times_stand_for_nothing() {
    // The window: 1,000 calls of 10 ticks; the warm-up before it: 100 calls of 1,000 ticks
    // (the first calls after the points go on).
    let (w, u) = (calls(1000, 10), calls(100, 1000));
    let mut b = round(10, 10_000, true);
    b.reference.warm = 1;

    // In bursts: the round holds the window and the warm-up (off between bursts, but for
    // the count windows, which told 998,900 more). The warm-up's calls are counted, priced
    // at the mean call.
    let mut e = Est::default();
    let d = with_warm_up(&w, &u, &Scalars::default());
    let s = told(998_900.0, 0.0, 10);
    let (got, means, paid) = fold_round(
        Some(&b),
        Some((&w, &u)),
        Some(Mode::Burst),
        &mut e,
        Some(&s),
        &d,
    );
    assert_eq!(got, Some(1_000_000.0));
    let (total, _, _) = e.resolve(1000, 10_000, 0.0);
    assert!((total - 10_000_000.0).abs() < 1e-6, "{total}");
    assert_eq!(means, w);
    assert_eq!(paid.timed, 1100);

    // Counted only: 200,000 counted calls besides. Every call is priced at the window's.
    let mut e = Est::default();
    let counted = Scalars {
        skipped: 200_000,
        ..Scalars::default()
    };
    let d = with_warm_up(&w, &u, &counted);
    let (got, means, paid) = fold_round(
        Some(&b),
        Some((&w, &u)),
        Some(Mode::Count),
        &mut e,
        None,
        &d,
    );
    assert_eq!(got, None);
    let want = 201_100.0 * 10.0;
    let total = e.closed().total;
    assert!((total - want).abs() < 1e-6 * want, "{total} against {want}");
    assert_eq!(
        (means.timed, means.total, means.nr()),
        (1000, 10_000, 201_100)
    );
    assert_eq!(paid, d);

    // Beside the bursts (timed on every call): the warm-up's calls are its own, kept.
    let mut e = Est::default();
    let d = with_warm_up(&w, &u, &calls(5000, 10));
    fold_round(Some(&b), Some((&w, &u)), None, &mut e, None, &d);
    assert_eq!(e.closed().total, d.total as f64);
}

#[test]
fn untimed_takes_out_the_warm_up_s_times_and_its_maximum() {
    let u = Scalars {
        max: 5000,
        ..calls(3, 2000)
    };
    let d = Scalars {
        max: 5000,
        skipped: 10,
        ..with_warm_up(&calls(40, 10), &u, &Scalars::default())
    };
    let k = controller::untimed(&d, &u);
    assert_eq!(
        (k.timed, k.skipped, k.total, k.self_ticks),
        (40, 13, 400, 400)
    );
    assert_eq!(k.nr(), d.nr());
    // The round's longest call was the warm-up's: not the kept calls' stall.
    assert_eq!(k.max, 0);
    let d = Scalars { max: 9000, ..d };
    assert_eq!(controller::untimed(&d, &u).max, 9000);
}

#[test]
fn a_burst_far_above_the_recent_median_is_a_stall_and_a_lasting_change_is_not() {
    let mut e = Est::default();
    let none = told(0.0, 0.0, 10);
    for _ in 0..5 {
        e.fold_sampled(&calls(300, 1000), &calls(300, 1000), &none);
    }
    // 12x the usual mean, with no new maximum to tell which call (an earlier one was
    // longer): a stall, left out of the pool.
    let slow = calls(300, 12_000);
    e.fold_sampled(&slow, &slow, &none);
    assert_eq!(e.burst_stalls, 1);
    assert!((e.burst_pool_total / e.burst_pool_timed - 1000.0).abs() < 1e-6);
    // The program's calls of it now take 5x as long, burst after burst: once they are the
    // recent bursts' majority they are its mean.
    let changed = calls(300, 5000);
    for _ in 0..8 {
        e.fold_sampled(&changed, &changed, &none);
    }
    let stalls = e.burst_stalls;
    e.fold_sampled(&changed, &changed, &none);
    assert_eq!(e.burst_stalls, stalls, "a lasting change is kept");
    assert!(e.burst_pool_total / e.burst_pool_timed > 1500.0);
}

#[test]
fn beside_bursts_a_point_keeps_the_self_share_it_had_in_them() {
    // In the bursts, half of its time was its own (its children, in bursts, were timed);
    // around them its children were off and it read all of it as its own.
    let mut e = Est::default();
    let w = Scalars {
        timed: 10,
        total: 1000,
        self_ticks: 500,
        ..Scalars::default()
    };
    e.fold_beside_burst(&calls(100, 100), &w);
    assert_eq!(e.closed().total, 10_000.0);
    assert_eq!(e.closed().self_ticks, 5_000.0);
}

#[test]
fn strata_keep_phases_apart() {
    // Phase 1: 1,000 calls of 1,000 ticks, all timed. Phase 2: 1,000,000 calls of 10
    // ticks, 1 in 1,000 timed. A ratio over the whole run would say ~900x too much.
    let mut e = Est::default();
    e.fold(&Scalars {
        timed: 1000,
        total: 1_000_000,
        self_ticks: 1_000_000,
        ..Scalars::default()
    });
    e.fold(&Scalars {
        timed: 1000,
        skipped: 999_000,
        total: 10_000,
        self_ticks: 10_000,
        ..Scalars::default()
    });
    let (total, _, ci) = e.resolve(2000, 1_010_000, 0.0);
    assert!((total - 11_000_000.0).abs() < 1.0, "{total}");
    assert_eq!(ci, 0.0);
    assert!(e.estimated);
}

#[test]
fn the_windows_time_the_counted_points_too() {
    let mut c = Controller::EMPTY;
    c.points = vec![PointState::default(); 4];
    c.points[0].set = Some(Mode::Count);
    c.points[1].set = Some(Mode::Burst);
    c.points[2].set = Some(Mode::Sampled(8));
    // Point 3 is on, never set by the controller.
    let managed = [(0, 100), (1, 100), (2, 100), (3, 100)];
    c.plan_burst(&managed, 0.0, 1e6);
    let (points, window) = c.plan.take().expect("a window");
    // Each with the state it goes back to after the window.
    assert_eq!(points, vec![(0, Mode::Count), (1, Mode::Burst)]);
    assert_eq!(window, FIRST_WINDOW);
    // With no point in bursts, the counted points still get their windows.
    c.points[1].set = Some(Mode::Sampled(4));
    c.plan_burst(&managed, 0.0, 1e6);
    assert_eq!(c.plan.take().expect("a window").0, vec![(0, Mode::Count)]);
    // Nothing counted or in bursts: no window.
    c.points[0].set = None;
    c.plan_burst(&managed, 0.0, 1e6);
    assert!(c.plan.is_none());
}

#[test]
fn a_counted_point_is_priced_at_its_calls_in_the_windows() {
    // Timed on every call at first (the run's first rounds): 1,000 calls of 100 ticks.
    let mut e = Est::default();
    e.fold(&calls(1000, 100));
    // Then counted, 10 rounds of 100,000 calls each, 40 of them timed in the round's window,
    // where the calls now take 400 ticks. Priced at its mean before it was counted, the
    // counted calls would read 100 ticks each (1e8 in all).
    let w = calls(40, 400);
    for _ in 0..10 {
        let d = Scalars {
            skipped: 100_000 - 40,
            ..w
        };
        e.fold_beside_burst(&d, &w);
    }
    let (total, own, _) = e.resolve(1000 + 400, 1000 * 100 + 400 * 400, 0.0);
    let want = 1000.0 * 100.0 + 1_000_000.0 * 400.0;
    assert!((total - want).abs() < 1e-6 * want, "{total} against {want}");
    assert!((own - want).abs() < 1e-6 * want, "{own} against {want}");
}

/// A stratum of `timed` calls of `each` ticks among `calls`, self time all theirs.
fn stratum(timed: u64, each: u64, calls: u64) -> Scalars {
    Scalars {
        skipped: calls - timed,
        ..self::calls(timed, each)
    }
}

#[test]
fn a_stratum_far_above_the_recent_median_is_a_stall_and_a_lasting_change_is_not() {
    // Five strata of 32 timed calls of 100 ticks among 3,200 each.
    let mut e = Est::default();
    for _ in 0..5 {
        e.fold(&stratum(32, 100, 3200));
    }
    assert!((e.total - 5.0 * 320_000.0).abs() < 1e-6, "{}", e.total);
    // One whose timed calls hold a 96,800-tick interruption (mean 3,125: 31x; not a new
    // maximum, so the STALL_RATIO rule does not see it): its timed calls once, its 3,168
    // untimed ones at the median's 100 ticks. Scaled, it would read 10 M.
    let before = e.total;
    e.fold(&Scalars {
        total: 100_000,
        self_ticks: 100_000,
        ..stratum(32, 0, 3200)
    });
    let added = e.total - before;
    assert!(
        (added - (100_000.0 + 3168.0 * 100.0)).abs() < 1e-6,
        "{added}"
    );
    assert_eq!(e.strata_stalls, 1);
    // A lasting change (every call now 1,000 ticks) is kept once it is the recent majority:
    // within RECENT / 2 strata.
    for _ in 0..estimate::RECENT / 2 + 1 {
        e.fold(&stratum(32, 1000, 3200));
    }
    let before = e.total;
    e.fold(&stratum(32, 1000, 3200));
    assert!(
        (e.total - before - 3_200_000.0).abs() < 1e-6,
        "{}",
        e.total - before
    );
}

/// A merged tree node of `point` (index) under merged node `parent`.
fn node(parent: Option<usize>, point: usize) -> (Option<usize>, crate::tree::RawNode) {
    (
        parent,
        crate::tree::RawNode {
            point: point as u32 + 1,
            ..Default::default()
        },
    )
}

#[test]
fn isolation_classes_never_hold_a_point_and_one_found_inside_it() {
    // 0 -> 1 -> 2, 0 -> 3, 4 -> 2 (2 is called from two places), 5 -> 5 (recursion); 6 was
    // never seen in the tree; 7 is seen but not a window's point.
    let nodes = vec![
        node(None, 0),
        node(Some(0), 1),
        node(Some(1), 2),
        node(Some(0), 3),
        node(None, 4),
        node(Some(4), 2),
        node(None, 5),
        node(Some(6), 5),
        node(None, 7),
    ];
    let classes = isolation::isolation_classes(&[0, 1, 2, 3, 4, 5, 6], &nodes);
    let all: Vec<usize> = {
        let mut v: Vec<usize> = classes.iter().flatten().copied().collect();
        v.sort_unstable();
        v
    };
    // Only parents: 2 and 3 have no point inside them, 5 only itself, 6 was never seen.
    assert_eq!(all, vec![0, 1, 4], "{classes:?}");
    let nested = [(0, 1), (0, 2), (1, 2), (0, 3), (4, 2)];
    for c in &classes {
        for &(a, b) in &nested {
            assert!(!(c.contains(&a) && c.contains(&b)), "{a} and {b} in {c:?}");
        }
    }
    // Greedy in index order: 0 opens a class, 4 joins it (neither was found inside the
    // other); 1 cannot (inside 0).
    assert_eq!(classes, vec![vec![0, 4], vec![1]]);
}

#[test]
fn an_isolation_window_hit_by_an_interrupt_does_not_raise_the_mean_call() {
    let mut iso = isolation::Isolated::default();
    assert_eq!(iso.mean(), None);
    for _ in 0..10 {
        iso.add(160.0 * 80.0, 160.0);
    }
    // One window of 160 calls held a 30,000-tick interrupt.
    iso.add(160.0 * 80.0 + 30_000.0, 160.0);
    // Windows that read the same mean leave no spread to judge by: the whole mean.
    let same = |mean| IsolatedMean { mean, stderr: mean };
    assert_eq!(iso.mean(), Some((same(80.0), 1600.0)));
    // A window twice as slow as the median still counts (a phase of longer calls).
    iso.add(160.0 * 150.0, 160.0);
    let (m, timed) = iso.mean().unwrap();
    assert_eq!(timed, 1760.0);
    assert!((m.mean - (1600.0 * 80.0 + 160.0 * 150.0) / 1760.0).abs() < 1e-9);
    // Only the last ISOLATED_WINDOWS windows count.
    for _ in 0..isolation::ISOLATED_WINDOWS {
        iso.add(160.0 * 40.0, 160.0);
    }
    assert_eq!(
        iso.mean(),
        Some((same(40.0), 160.0 * isolation::ISOLATED_WINDOWS as f64))
    );
}

#[test]
fn an_isolated_mean_s_error_is_its_windows_spread_over_the_root_of_their_number() {
    let mut iso = isolation::Isolated::default();
    // One window: no spread to judge by, the whole mean.
    iso.add(100.0 * 50.0, 100.0);
    assert_eq!(iso.mean().unwrap().0.stderr, 50.0);
    // Two that read the same (a clock coarser than the calls): none either, never 0.
    iso.add(100.0 * 50.0, 100.0);
    assert_eq!(iso.mean().unwrap().0.stderr, 50.0);
    let mut iso = isolation::Isolated::default();
    iso.add(100.0 * 50.0, 100.0);
    // Four windows whose means are 50, 50, 60 and 40 (a sample standard deviation of
    // sqrt(200 / 3)): the error of their mean is that over 2.
    iso.add(100.0 * 50.0, 100.0);
    iso.add(100.0 * 60.0, 100.0);
    iso.add(100.0 * 40.0, 100.0);
    let (m, _) = iso.mean().unwrap();
    assert_eq!(m.mean, 50.0);
    assert!((m.stderr - (200.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-9);
    // A window the interrupt rule leaves out is no part of the spread either.
    iso.add(100.0 * 50.0 + 30_000.0, 100.0);
    assert!((iso.mean().unwrap().0.stderr - (200.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-9);
}

/// A recursive point counted only: its counted calls split as its marked rounds split them
/// (one outermost call in ten here), so that only the outermost ones are priced at its mean
/// outermost call; a point never seen recursive keeps every call outermost.
#[test]
fn a_counted_recursive_point_prices_its_outermost_calls_only() {
    let round = |timed, nested, skipped, total| Scalars {
        timed,
        nested,
        skipped,
        total,
        self_ticks: total,
        ..Scalars::default()
    };
    let mut e = Est::default();
    // Marked: 40 outermost calls of 1,000 ticks, 360 nested in them.
    let on = round(40, 360, 0, 40_000);
    e.as_marked(false, &on);
    e.fold(&on);
    // Counted: 10,005 calls, none marked; 1,000 of them outermost, carried to the tenth.
    let counted = e.as_marked(true, &round(0, 0, 10_005, 0));
    assert_eq!((counted.skipped, counted.nested), (1_000, 9_005));
    assert!((e.counted_carry - 0.5).abs() < 1e-9, "{}", e.counted_carry);
    assert_eq!(e.counted_nested, 9_005.0);
    e.fold(&counted);
    let (total, _, _) = e.resolve(40, 40_000, 0.0);
    assert!((total - 1_040_000.0).abs() < 1e-6, "{total}");
    // The half carried makes the next round's split whole.
    let next = e.as_marked(true, &round(0, 0, 5, 0));
    assert_eq!(next.skipped, 1);
    // Never seen recursive: every counted call stays outermost.
    let mut flat = Est::default();
    flat.as_marked(false, &round(40, 0, 0, 40_000));
    let same = flat.as_marked(true, &round(0, 0, 10_005, 0));
    assert_eq!((same.skipped, same.nested), (10_005, 0));
    assert_eq!(flat.counted_nested, 0.0);
}
