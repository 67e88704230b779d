use super::*;
use allocate::{allocate, relax_limited};
use burst::{BurstRound, Reference};
use controller::fold_round;

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

fn round(inside: u64, all: u64, saw: bool, reliable: bool) -> BurstRound {
    BurstRound {
        reference: Reference {
            inside,
            all,
            warm: 0,
        },
        reference_set: 0,
        reference_changed: false,
        dt: 1e8,
        on: 1e5,
        warm: 0.0,
        saw,
        ran: false,
        reliable,
    }
}

#[test]
fn a_burst_stands_for_its_round_by_its_ratio_to_the_reference_points() {
    // In the burst: 1,000 calls of 10 ticks, and 10 of the reference points'; in the
    // whole round, 10,000 of theirs: the point made ~1,000,000 calls in the round.
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let w = calls(1000, 10);
    let got = round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    assert_eq!(got, Some(1_000_000.0));
    assert_eq!(e.unseen(), (999_000.0, 999_000.0));
    // The unseen calls at the bursts' mean call: 10 ticks each.
    assert!((e.closed().total - 10_000_000.0).abs() < 1e-6, "{e:?}");
    assert!(e.estimated);
    // The first burst has nothing to compare with: its whole estimate is its error.
    assert!(e.burst_var > 0.0);
}

#[test]
fn a_changed_reference_set_starts_the_pool_again() {
    // Two bursts against a reference of 10 calls each (100 of the point's per reference
    // call); then a point of the reference moved into bursts and the reference is 5 calls a
    // burst, 5,000 a round: the point made 1,000 per burst all along, so 1,000,000 a round.
    let third = |changed: bool| {
        let (mut e, mut st) = (Est::default(), BurstState::default());
        let w = calls(1000, 10);
        round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
        round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
        let mut r = round(5, 5_000, true, true);
        r.reference_changed = changed;
        r.fold(&mut e, &mut st, &w, &w, &Scalars::default())
            .unwrap()
    };
    assert_eq!(third(true), 1_000_000.0);
    // Pooled with the old set's counts: 2,950 calls over 24.5 reference calls, times 5,000.
    let biased = third(false);
    assert!(biased < 0.65e6, "{biased}");
}

#[test]
fn without_reference_points_a_burst_stands_for_its_share_of_the_round() {
    // No reference calls: the round (1e8 ticks) over the burst (1e5) is 1,000 times it.
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let w = calls(100, 10);
    let got = round(0, 0, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    assert_eq!(got, Some(100_000.0));
}

#[test]
fn a_burst_that_tells_nothing_waits_for_one_that_does() {
    let (mut e, mut st) = (Est::default(), BurstState::default());
    // Preempted reads: nothing pooled, the round kept (its 5 calls seen are exact).
    let seen = calls(5, 10);
    assert_eq!(
        round(10, 10_000, true, false).fold(&mut e, &mut st, &seen, &seen, &Scalars::default()),
        None
    );
    assert_eq!(st.pool, (0.0, 0.0));
    assert_eq!((st.seen, st.reference), (5, 10_000));
    // Until a burst tells, the count is a lower bound: estimated, with no interval.
    assert!(
        e.estimated && e.count_unknown() && e.unseen_ci95().is_none(),
        "{e:?}"
    );
    // The next burst tells for both rounds: 100 per reference call, 20,000 of theirs.
    let w = calls(1000, 10);
    let got = round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    assert_eq!(got, Some(2_000_000.0));
    assert_eq!(e.unseen().1, 2_000_000.0 - 1005.0);
    assert_eq!((st.seen, st.reference, st.ticks), (0, 0, 0.0));
    assert!(!e.count_unknown() && e.unseen_ci95().is_some(), "{e:?}");
}

#[test]
fn a_burst_that_saw_no_call_while_the_program_ran_tells_a_quiet_round() {
    // No reference points, no call in the burst: the program did not run (a loaded
    // machine), and the round waits; or it ran and did not call the point (a quiet phase),
    // and the round had none but those seen before the burst.
    let none = Scalars::default();
    let seen = calls(5, 10);
    let (mut e, mut st) = (Est::default(), BurstState::default());
    assert_eq!(
        round(0, 0, false, true).fold(&mut e, &mut st, &seen, &none, &none),
        None
    );
    assert!(e.count_unknown());
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let mut quiet = round(0, 0, false, true);
    quiet.ran = true;
    assert_eq!(quiet.fold(&mut e, &mut st, &seen, &none, &none), Some(0.0));
    assert!(!e.count_unknown(), "{e:?}");
    assert_eq!(e.unseen().1, 0.0);
}

#[test]
fn estimated_calls_carry_an_interval_from_the_rounds_spread() {
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let w = calls(1000, 10);
    // Never in bursts: exact, no interval.
    assert_eq!(e.unseen_ci95(), None);
    // One round: its estimate over the calls it saw (999,000 unseen, 1,000 seen).
    round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    let first = e.unseen_ci95().unwrap();
    assert!(
        (first - 1.96 * 999_000.0 / 1000f64.sqrt()).abs() < 1.0,
        "{first}"
    );
    // A second round at the same rate adds nothing; one at twice the rate adds its spread.
    round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    assert!((e.unseen_ci95().unwrap() - first).abs() < 1e-6);
    round(10, 20_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    assert!(e.unseen_ci95().unwrap() > first * 1.5, "{e:?}");
}

#[test]
fn a_stalled_burst_is_counted_once_not_as_the_mean_call() {
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let w = calls(1000, 10);
    round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    let before = e.closed().total;
    // A burst whose 1,000 calls took 10,000 ticks each (a preemption in it): taken once.
    let stalled = calls(1000, 10_000);
    round(10, 10_000, true, true).fold(&mut e, &mut st, &stalled, &stalled, &Scalars::default());
    assert_eq!(e.burst_stalls, 1);
    let added = e.closed().total - before;
    // Its own 10,000,000 ticks, and the unseen calls at the usual mean (10 ticks).
    let unseen = e.unseen().0 - 999_000.0;
    assert!(
        (added - (10_000_000.0 + unseen * 10.0)).abs() < 1.0,
        "{added} {unseen}"
    );
}

#[test]
fn a_preempted_call_in_a_burst_is_counted_once_not_priced_into_the_unseen_calls() {
    // Calls of 1,000 ticks; the second burst's 300 calls hold one of 4,000,000 (the thread
    // preempted inside it): the burst's mean is 14x the usual, under the whole-burst rule's
    // 20x, but the call is 4,000x the others.
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let w = calls(1000, 1000);
    round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w, &Scalars::default());
    let before = e.closed().total;
    let stalled = Scalars {
        timed: 300,
        total: 299 * 1000 + 4_000_000,
        self_ticks: 299 * 1000 + 4_000_000,
        max: 4_000_000,
        ..Scalars::default()
    };
    round(10, 10_000, true, true).fold(&mut e, &mut st, &stalled, &stalled, &Scalars::default());
    assert_eq!(e.burst_stalls, 1);
    // The burst's own calls exactly, and its unseen calls at the usual 1,000 ticks.
    let unseen = e.unseen().0 - 999_000.0;
    let added = e.closed().total - before;
    let want = stalled.total as f64 + unseen * 1000.0;
    assert!((added - want).abs() < 1e-6 * want, "{added} against {want}");
    // Its self share stays the bursts' (all of it, here).
    let own = e.closed().self_ticks - before;
    assert!((own - want).abs() < 1e-6 * want, "{own} against {want}");
}

#[test]
fn a_burst_tells_what_a_timed_call_costs_in_the_program() {
    // A round of 1e8 ticks with a burst of 1e5: the reference points made 99,900 calls in
    // the 99,900,000 ticks outside it and 90 in it, where at their outside rate they would
    // have taken 90,000 ticks: the burst's 1,000 timed calls cost the other 10,000.
    let b = round(90, 99_990, true, true);
    let (extra, timed) = burst::burst_extra(&b, 1000).unwrap();
    assert_eq!(timed, 1000.0);
    assert!((extra / timed - 10.0).abs() < 1e-9, "{}", extra / timed);
    // Nothing to tell from: too few reference calls on a side, no timed call, a preempted
    // read.
    assert!(burst::burst_extra(&round(10, 99_010, true, true), 1000).is_none());
    assert!(burst::burst_extra(&round(50, 60, true, true), 1000).is_none());
    assert!(burst::burst_extra(&b, 0).is_none());
    assert!(burst::burst_extra(&round(90, 99_990, true, false), 1000).is_none());
    // With a warm-up of 1e6 ticks before the window, in which the reference points made 900
    // calls (slowed as in the window), and 98,900 calls in the 98,900,000 ticks outside
    // both: neither side of the rate holds the warm-up, and the figure is the same. Counted
    // as outside calls and ticks, it would read 9.91 a call.
    let mut warm = round(90, 90 + 900 + 98_900, true, true);
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
    // (the first calls after the points go on); 10 reference calls in the window, 10,000 in
    // the round.
    let (w, u) = (calls(1000, 10), calls(100, 1000));
    let mut b = round(10, 10_000, true, true);
    b.reference.warm = 1;

    // In bursts: the round holds the window and the warm-up (off between bursts). The
    // warm-up's calls are estimated with those between bursts, at the window's 10 ticks.
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let d = with_warm_up(&w, &u, &Scalars::default());
    let (got, means, paid) = fold_round(
        Some(&b),
        Some((&w, &u)),
        Some(Mode::Burst),
        &mut e,
        &mut st,
        &d,
    );
    assert_eq!(got, Some(1_000_000.0));
    assert!((e.closed().total - 10_000_000.0).abs() < 1e-6, "{e:?}");
    assert_eq!(means, w);
    assert_eq!(paid.timed, 1100);

    // Counted only: 200,000 counted calls besides. Every call is priced at the window's.
    let (mut e, mut st) = (Est::default(), BurstState::default());
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
        &mut st,
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
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let d = with_warm_up(&w, &u, &calls(5000, 10));
    fold_round(Some(&b), Some((&w, &u)), None, &mut e, &mut st, &d);
    assert_eq!(e.closed().total, d.total as f64);
}

#[test]
fn a_burst_s_warm_up_counts_in_the_ratio_to_the_reference_points() {
    // A window at its shortest: 3 reference calls in it, 3 in its warm-up, 3,000 in the
    // round; the point made 500 calls in each part. With the window's alone the pool holds 3
    // reference calls (under MIN_REFERENCE), and the estimate would fall back to the burst's
    // share of the round's time; with the warm-up's, 6: still under for the first burst,
    // enough from the second on, and the ratio (1,000 per 6) stands for the round.
    let (w, u) = (calls(500, 10), calls(500, 1000));
    let mut b = round(3, 3000, true, true);
    b.reference.warm = 3;
    let (mut e, mut st) = (Est::default(), BurstState::default());
    let d = with_warm_up(&w, &u, &Scalars::default());
    b.fold(&mut e, &mut st, &d, &w, &u);
    assert_eq!(st.pool, (1000.0, 6.0));
    let got = b.fold(&mut e, &mut st, &d, &w, &u).unwrap();
    assert!((got - 500_000.0).abs() < 1e-6, "{got}");
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
    let (mut e, mut st) = (Est::default(), BurstState::default());
    for _ in 0..5 {
        round(10, 10_000, true, true).fold(
            &mut e,
            &mut st,
            &calls(300, 1000),
            &calls(300, 1000),
            &Scalars::default(),
        );
    }
    // 12x the usual mean, with no new maximum to tell which call (an earlier one was
    // longer): a stall, left out of the pool.
    let slow = calls(300, 12_000);
    round(10, 10_000, true, true).fold(&mut e, &mut st, &slow, &slow, &Scalars::default());
    assert_eq!(e.burst_stalls, 1);
    assert!((e.burst_pool_total / e.burst_pool_timed - 1000.0).abs() < 1e-6);
    // The program's calls of it now take 5x as long, burst after burst: once they are the
    // recent bursts' majority they are its mean.
    let changed = calls(300, 5000);
    for _ in 0..8 {
        round(10, 10_000, true, true).fold(
            &mut e,
            &mut st,
            &changed,
            &changed,
            &Scalars::default(),
        );
    }
    let stalls = e.burst_stalls;
    round(10, 10_000, true, true).fold(&mut e, &mut st, &changed, &changed, &Scalars::default());
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
    let same = |mean| IsolatedMean { mean, stderr: 0.0 };
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
