//! `compare`'s statistics: a rank test over two latency histograms (one run a side), a t test
//! over per-run medians (repeated runs), and Holm's adjustment for many points at once. The
//! distributions (normal, Student's t) come from `statrs`.
//!
//! Why ranks: a run's mean is at the mercy of its longest calls. One 8 ms preemption among
//! 10,000 calls of 20 us moves the mean by 4%, and a few of them swamp a real 2x slowdown in
//! the variance of a mean test. In a rank test that call is one rank among 10,000: it moves the
//! statistic by 1/10,000 of its range.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// At most this many calls of a run count as independent samples. Calls within one run share
/// the machine's state (frequency, caches, other load), so with millions of calls any change,
/// however small, would be "significant"; the cap keeps the test from claiming more than a
/// run can tell.
pub(crate) const N_CAP: f64 = 1_000.0;

/// The fewest timed calls a side needs for the rank test (its normal approximation).
pub(crate) const MIN_CALLS: f64 = 10.0;

/// A latency distribution on a grid shared by every report: `(key, calls)`, ascending key.
///
/// Two runs' histograms hold bucket midpoints converted to nanoseconds with each run's own
/// clock calibration, so the "same" bucket reads 1000 ns in one run and 1000.4 ns in the other.
/// Ranked as they are, every call of that bucket in the first run would rank below every call
/// of it in the second: a bias toward "slower". Re-binned onto one grid they tie, as they
/// should.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Dist {
    buckets: Vec<(u32, f64)>,
}

/// The grid bucket of `ns`: exact below 64 ns, then 32 buckets per octave (the library's own
/// histogram precision, about 3% wide).
pub(crate) fn key(ns: u64) -> u32 {
    let shift = (63 - (ns | 32).leading_zeros()) - 5;
    (shift << 5) + (ns >> shift) as u32
}

impl Dist {
    /// From a report's `hist` pairs (`[value_ns, calls]`, in any order).
    pub(crate) fn from_pairs(pairs: &[[u64; 2]]) -> Dist {
        let mut v: Vec<(u32, f64)> = pairs
            .iter()
            .filter(|p| p[1] > 0)
            .map(|p| (key(p[0]), p[1] as f64))
            .collect();
        v.sort_by_key(|b| b.0);
        Dist::merged(v)
    }

    /// Rebuilt from a point's percentiles, for reports written before the histogram was in
    /// them: `known` holds `(quantile, value_ns)` pairs; the calls between two consecutive
    /// known quantiles are spread evenly over the grid buckets between their values (evenly
    /// in log scale), those below the first and above the last sit at its value. An
    /// approximation: good enough to see a shift of the median, not the shape of the tails.
    pub(crate) fn from_quantiles(calls: u64, known: &[(f64, u64)]) -> Dist {
        let calls = calls as f64;
        let mut known: Vec<(f64, u64)> = known.to_vec();
        known.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut v: Vec<(u32, f64)> = Vec::new();
        let (Some(first), Some(last)) = (known.first(), known.last()) else {
            return Dist::default();
        };
        v.push((key(first.1), first.0 * calls));
        for w in known.windows(2) {
            let ((qa, va), (qb, vb)) = (w[0], w[1]);
            let (ka, kb) = (key(va.min(vb)), key(va.max(vb)));
            let mass = (qb - qa).max(0.0) * calls;
            let n = (kb - ka + 1) as f64;
            v.extend((ka..=kb).map(|k| (k, mass / n)));
        }
        v.push((key(last.1), (1.0 - last.0).max(0.0) * calls));
        v.sort_by_key(|b| b.0);
        Dist::merged(v)
    }

    /// Sums the calls of equal keys (`v` sorted by key) and drops empty buckets.
    fn merged(v: Vec<(u32, f64)>) -> Dist {
        let mut buckets: Vec<(u32, f64)> = Vec::with_capacity(v.len());
        for (k, c) in v.into_iter().filter(|b| b.1 > 0.0) {
            match buckets.last_mut() {
                Some(last) if last.0 == k => last.1 += c,
                _ => buckets.push((k, c)),
            }
        }
        Dist { buckets }
    }

    /// The number of calls.
    pub(crate) fn calls(&self) -> f64 {
        self.buckets.iter().map(|b| b.1).sum()
    }

    /// The median call, nanoseconds, interpolated within its bucket (the calls of a bucket
    /// taken as spread evenly over it): finer than a bucket's 3%, so two runs' medians differ
    /// by what their calls differ, not by a whole bucket or nothing. `None` without calls.
    pub(crate) fn median(&self) -> Option<f64> {
        let half = self.calls() / 2.0;
        let mut below = 0.0;
        for &(k, c) in &self.buckets {
            if below + c >= half {
                let (lo, hi) = bounds(k);
                let frac = ((half - below) / c).clamp(0.0, 1.0);
                return Some(lo + frac * (hi - lo));
            }
            below += c;
        }
        None
    }
}

/// The values `[low, high)` of grid bucket `k`, nanoseconds.
fn bounds(k: u32) -> (f64, f64) {
    if k < 64 {
        return (f64::from(k), f64::from(k) + 1.0);
    }
    let shift = k / 32 - 1;
    let top = f64::from(k - shift * 32);
    let unit = 2f64.powi(shift as i32);
    (top * unit, (top + 1.0) * unit)
}

/// The rank test's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RankTest {
    /// The chance that a call of `new` is slower than a call of `base` (ties count half):
    /// 0.5 when neither side tends to be slower.
    pub(crate) prob_slower: f64,
    /// Two-sided p-value.
    pub(crate) p: f64,
}

/// The Mann-Whitney U test of `base` against `new`, ties corrected, with each side counted as
/// at most [`N_CAP`] independent calls; `None` with fewer than [`MIN_CALLS`] calls a side.
///
/// U is computed exactly from all the calls (as the probability that a call of `new` is slower
/// than one of `base`); only its variance uses the capped counts. Under the hypothesis that
/// both runs' calls come from one distribution, U is about normal with mean `na*nb/2` and
/// variance `na*nb/12 * ((n+1) - sum(t^3-t)/(n(n-1)))`, `t` the calls tied in each bucket.
pub(crate) fn rank_test(base: &Dist, new: &Dist) -> Option<RankTest> {
    let (na, nb) = (base.calls(), new.calls());
    if !(na >= MIN_CALLS && nb >= MIN_CALLS && na.is_finite() && nb.is_finite()) {
        return None;
    }
    // Walk both sides' buckets in key order: each bucket of `new` is slower than every call of
    // `base` below it, and ties with the calls of `base` in the same bucket.
    let (mut i, mut j) = (0, 0);
    let (a, b) = (&base.buckets, &new.buckets);
    let (mut below_a, mut wins, mut ties3) = (0.0, 0.0, 0.0);
    let (ea, eb) = (na.min(N_CAP), nb.min(N_CAP));
    let en = ea + eb;
    let scale = en / (na + nb);
    while i < a.len() || j < b.len() {
        let k = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => break,
        };
        let ca = if a.get(i).is_some_and(|x| x.0 == k) {
            i += 1;
            a[i - 1].1
        } else {
            0.0
        };
        let cb = if b.get(j).is_some_and(|y| y.0 == k) {
            j += 1;
            b[j - 1].1
        } else {
            0.0
        };
        wins += cb * (below_a + 0.5 * ca);
        below_a += ca;
        // The tie, in effective calls.
        let t = (ca + cb) * scale;
        ties3 += t * t * t - t;
    }
    let prob_slower = (wins / na / nb).clamp(0.0, 1.0);
    let var = ea * eb / 12.0 * ((en + 1.0) - ties3 / (en * (en - 1.0)));
    let p = if var > 0.0 && var.is_finite() {
        // In effective U units, with the continuity correction.
        let dev = ((prob_slower - 0.5).abs() * ea * eb - 0.5).max(0.0);
        (2.0 * Normal::standard().sf(dev / var.sqrt())).min(1.0)
    } else {
        // Every call in one bucket: nothing to tell apart.
        1.0
    };
    Some(RankTest { prob_slower, p })
}

/// Mean and sample variance.
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var)
}

/// The test across repeated runs: `base` and `new` hold one number per run (the logarithm of
/// the point's median call). Welch's t test with Welch-Satterthwaite degrees of freedom when
/// each side has two runs or more; with a single run on one side, the other side's spread
/// stands for both (Student's t with that side's runs less one degrees of freedom). Returns
/// the difference of the means (`new - base`) and the two-sided p-value; `None` with fewer
/// than three runs in all, or one side empty.
pub(crate) fn runs_test(base: &[f64], new: &[f64]) -> Option<(f64, f64)> {
    let (na, nb) = (base.len() as f64, new.len() as f64);
    if base.is_empty() || new.is_empty() || base.len() + new.len() < 3 {
        return None;
    }
    let ((ma, va), (mb, vb)) = (mean_var(base), mean_var(new));
    let diff = mb - ma;
    let (se2, df) = if base.len() >= 2 && new.len() >= 2 {
        let (sa, sb) = (va / na, vb / nb);
        let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
        (sa + sb, df)
    } else {
        // One run on one side: the other side's variance for both.
        let (v, df) = if base.len() >= 2 {
            (va, na - 1.0)
        } else {
            (vb, nb - 1.0)
        };
        (v * (1.0 / na + 1.0 / nb), df)
    };
    let spread = se2 > 0.0 && se2.is_finite();
    let p = if !spread || !diff.is_finite() {
        // No spread at all: equal means are no change, different ones are a certain one.
        if diff == 0.0 || !diff.is_finite() {
            1.0
        } else {
            0.0
        }
    } else {
        let t = diff.abs() / se2.sqrt();
        match StudentsT::new(0.0, 1.0, df) {
            Ok(dist) if df.is_finite() => (2.0 * dist.sf(t)).min(1.0),
            _ => (2.0 * Normal::standard().sf(t)).min(1.0),
        }
    };
    Some((diff, p))
}

/// Holm's step-down adjustment: adjusted p-values, in the same order, such that flagging every
/// point whose adjusted p-value is below alpha flags a point that did not change with
/// probability at most alpha for the whole family (Holm 1979), whatever the dependence
/// between the points.
pub(crate) fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(values: &[(u64, u64)]) -> Dist {
        Dist::from_pairs(&values.iter().map(|&(v, c)| [v, c]).collect::<Vec<_>>())
    }

    #[test]
    fn the_grid_is_exact_below_64_and_32_buckets_an_octave_above() {
        for v in 0..64 {
            assert_eq!(key(v), v as u32);
        }
        assert_eq!(key(64), 64);
        assert_eq!(key(128) - key(64), 32);
        assert_eq!(key(1 << 20) - key(1 << 19), 32);
        // Calibrations a few parts per million apart put a value in the same bucket.
        assert_eq!(key(20_000), key(20_001));
        let mut prev = 0;
        for v in (0..1_000_000u64).step_by(37) {
            assert!(key(v) >= prev);
            prev = key(v);
        }
    }

    #[test]
    fn grid_bounds_hold_their_values_and_medians_interpolate() {
        for v in [0u64, 5, 63, 64, 100, 1_000, 22_000, 1 << 40] {
            let (lo, hi) = bounds(key(v));
            assert!(lo <= v as f64 && (v as f64) < hi, "{v}: [{lo}, {hi})");
        }
        // 100 calls in one bucket: the median is the middle of the bucket.
        let (lo, hi) = bounds(key(20_000));
        let m = dist(&[(20_000, 100)]).median().unwrap();
        assert!((m - (lo + hi) / 2.0).abs() < 1e-9, "{m}");
        // 30 calls below, 70 in the bucket: half the calls are reached 2/7 of the way in.
        let m = dist(&[(10_000, 30), (20_000, 70)]).median().unwrap();
        assert!((m - (lo + (hi - lo) * 2.0 / 7.0)).abs() < 1e-6, "{m}");
        assert_eq!(Dist::default().median(), None);
    }

    #[test]
    fn the_rank_test_matches_a_textbook_case() {
        // Base 1..=10, new 11..=20: every new call is slower; exact U = 100, p (normal
        // approximation, continuity corrected) = 2 * sf((50 - 0.5) / sqrt(175)) = 0.000183.
        let base: Vec<(u64, u64)> = (1..=10).map(|v| (v, 1)).collect();
        let new: Vec<(u64, u64)> = (11..=20).map(|v| (v, 1)).collect();
        let r = rank_test(&dist(&base), &dist(&new)).unwrap();
        assert_eq!(r.prob_slower, 1.0);
        assert!((r.p - 0.000_183).abs() < 0.000_005, "{}", r.p);
        // Interleaved: 1,3,5,.. against 2,4,6,..: U = 55 of 100, p = 2 * sf(4.5 / sqrt(175)).
        let base: Vec<(u64, u64)> = (0..10).map(|v| (2 * v + 1, 1)).collect();
        let new: Vec<(u64, u64)> = (0..10).map(|v| (2 * v + 2, 1)).collect();
        let r = rank_test(&dist(&base), &dist(&new)).unwrap();
        assert!((r.prob_slower - 0.55).abs() < 1e-12);
        assert!((r.p - 0.733_8).abs() < 0.000_5, "{}", r.p);
    }

    #[test]
    fn ties_are_corrected_and_all_tied_is_no_change() {
        let same = dist(&[(1000, 500)]);
        let r = rank_test(&same, &same).unwrap();
        assert_eq!((r.prob_slower, r.p), (0.5, 1.0));
        // Two buckets, half of each side in each, plus a shift of 10% of the calls: with ties
        // the variance shrinks, so the same shift is more significant than without.
        let a = dist(&[(1000, 50), (2000, 50)]);
        let b = dist(&[(1000, 40), (2000, 60)]);
        let r = rank_test(&a, &b).unwrap();
        assert!((r.prob_slower - 0.55).abs() < 1e-12);
        let untied_var: f64 = 100.0 * 100.0 / 12.0 * 201.0;
        let untied_p = 2.0 * Normal::standard().sf((0.05 * 10_000.0 - 0.5) / untied_var.sqrt());
        assert!(r.p < untied_p, "{} vs {untied_p}", r.p);
    }

    #[test]
    fn too_few_calls_is_no_test() {
        assert_eq!(rank_test(&dist(&[(5, 9)]), &dist(&[(5, 100)])), None);
        assert_eq!(rank_test(&Dist::default(), &Dist::default()), None);
    }

    #[test]
    fn the_cap_limits_what_millions_of_calls_can_prove() {
        // 52% against 48% of calls in the slower bucket: with 10 million calls a side the
        // uncapped test would call it certain; capped at 1,000 a side it is noise.
        let a = dist(&[(1000, 5_200_000), (1100, 4_800_000)]);
        let b = dist(&[(1000, 4_800_000), (1100, 5_200_000)]);
        let r = rank_test(&a, &b).unwrap();
        assert!(r.p > 0.05, "{}", r.p);
    }

    #[test]
    fn percentiles_rebuild_a_distribution_with_the_median_in_place() {
        let d = Dist::from_quantiles(
            1000,
            &[(0.0, 100), (0.5, 200), (0.9, 300), (0.99, 900), (1.0, 5000)],
        );
        assert!((d.calls() - 1000.0).abs() < 1e-6);
        let below: f64 = d
            .buckets
            .iter()
            .filter(|b| b.0 < key(200))
            .map(|b| b.1)
            .sum();
        assert!((400.0..500.0).contains(&below), "{below}");
        assert_eq!(Dist::from_quantiles(10, &[]), Dist::default());
    }

    #[test]
    fn welch_uses_the_t_distribution_and_its_degrees_of_freedom() {
        // Means 0 and 1, each side variance 0.25 over 4 runs: t = 1 / sqrt(0.125) = 2.828,
        // df = 6, two-sided p = 0.0300 (Student's t), where the normal would give 0.0047.
        let base = [-0.5, 0.5, -0.5, 0.5].map(|x| x * (0.25f64 / (1.0 / 3.0)).sqrt());
        let new = base.map(|x| x + 1.0);
        let (diff, p) = runs_test(&base, &new).unwrap();
        assert!((diff - 1.0).abs() < 1e-12);
        assert!((p - 0.0300).abs() < 0.0005, "{p}");
        // No spread: equal means are no change, different ones certain.
        assert_eq!(runs_test(&[1.0, 1.0], &[1.0, 1.0]), Some((0.0, 1.0)));
        assert_eq!(runs_test(&[1.0, 1.0], &[2.0, 2.0]).map(|r| r.1), Some(0.0));
        // One run a side: no test; one run against three: the three's spread for both.
        assert_eq!(runs_test(&[1.0], &[2.0]), None);
        let (_, p) = runs_test(&[0.0], &[1.0, 1.1, 0.9]).unwrap();
        assert!(p > 0.0 && p < 0.05, "{p}");
    }

    #[test]
    fn holm_adjusts_step_down() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        // Sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1, made non-decreasing.
        let expected = [0.04, 0.09, 0.09, 0.5];
        for (a, e) in adj.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adj:?}");
        }
        assert!(holm(&[]).is_empty());
    }
}
