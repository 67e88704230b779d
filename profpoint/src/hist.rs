//! The latency distribution: a log-linear histogram of raw ticks, cheap to record into.
//!
//! # Concept
//! Each octave `[2^k, 2^(k+1))` is split into [`SUB`] equal buckets, so a bucket is at most
//! 1/32 of its value wide. Reporting a bucket's midpoint puts any recorded value within 1/64
//! (1.6%) of the reported one: the "about 2%" the percentiles promise. Values below [`SUB`]
//! ticks get one exact bucket each.
//!
//! # Mechanism
//! Recording is a leading-zero count, two shifts and an increment: no loop, no table, no
//! floating point. HdrHistogram does the same maths with a configurable precision; we fix the
//! precision at compile time so the index is a handful of instructions, and compute
//! percentiles straight from the buckets at report time (an `hdrhistogram::Histogram` would
//! only be a second copy of the same counts).
//!
//! # Extending
//! More precision: raise [`SUB_BITS`] (memory per point and thread grows as `2^SUB_BITS`).

/// log2 of the number of buckets per octave.
pub(crate) const SUB_BITS: u32 = 5;
/// Buckets per octave: 32 gives a worst-case midpoint error of 1/64 of the value.
pub(crate) const SUB: u64 = 1 << SUB_BITS;
/// Values are clamped below 2^48 ticks (about 30 hours at 2.6 GHz); longer calls share the
/// last bucket (their exact value still reaches `max`).
const LIMIT: u64 = (1 << 48) - 1;
/// Number of buckets: 64 exact ones for 0..64, then 32 per octave up to 2^48.
pub(crate) const BUCKETS: usize = ((48 - SUB_BITS as usize) * SUB as usize) + SUB as usize;

/// The bucket that holds `v` ticks.
///
/// With `k` the index of `v`'s top bit (at least 5) and `shift = k - 5`, `v >> shift` is in
/// `32..64`: its low five bits pick the sub-bucket. Buckets of one shift are contiguous and
/// follow the previous shift's, so the index is `shift * 32 + (v >> shift)`: no branch, no
/// table.
#[inline(always)]
pub(crate) fn index(v: u64) -> usize {
    // Not `min`: a call at opt-level 0, and this is the hot path.
    let v = if v > LIMIT { LIMIT } else { v };
    let shift = (63 - (v | SUB).leading_zeros()) - SUB_BITS;
    ((shift as usize) << SUB_BITS) + (v >> shift) as usize
}

/// The range `[low, high)` of values held by bucket `i`.
pub(crate) fn bounds(i: usize) -> (u64, u64) {
    if (i as u64) < 2 * SUB {
        return (i as u64, i as u64 + 1);
    }
    let shift = (i as u64 / SUB - 1) as u32;
    let top = i as u64 - u64::from(shift) * SUB;
    (top << shift, (top + 1) << shift)
}

/// The value at quantile `q` (0..=1) of the distribution in `counts` (bucket midpoint, in
/// ticks), or 0 when it is empty.
pub(crate) fn quantile(counts: &[u64], total: u64, q: f64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (i, &c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            let (lo, hi) = bounds(i);
            return if hi - lo == 1 {
                lo as f64
            } else {
                (lo + hi) as f64 / 2.0
            };
        }
    }
    let (lo, hi) = bounds(counts.len() - 1);
    (lo + hi) as f64 / 2.0
}

/// The standard deviation of the distribution in `counts` (bucket midpoints, in ticks), or 0
/// with fewer than two values. Good to the buckets' precision (about 2%).
pub(crate) fn stddev(counts: &[u64]) -> f64 {
    let mid = |i: usize| {
        let (lo, hi) = bounds(i);
        if hi - lo == 1 {
            lo as f64
        } else {
            (lo + hi) as f64 / 2.0
        }
    };
    let n: u64 = counts.iter().sum();
    if n < 2 {
        return 0.0;
    }
    let mean = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| c as f64 * mid(i))
        .sum::<f64>()
        / n as f64;
    let var = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, &c)| c as f64 * (mid(i) - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    var.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_exact_below_64() {
        for v in 0..64u64 {
            assert_eq!(index(v), v as usize);
        }
        let mut prev_high = 0;
        for i in 0..BUCKETS {
            let (lo, hi) = bounds(i);
            assert_eq!(
                lo,
                prev_high,
                "bucket {i} starts where {} ended",
                i.max(1) - 1
            );
            assert_eq!(index(lo), i);
            assert_eq!(index(hi - 1), i);
            prev_high = hi;
        }
        assert_eq!(prev_high, LIMIT + 1);
    }

    #[test]
    fn every_value_lands_in_a_bucket_that_holds_it() {
        let mut v = 0u64;
        while v <= LIMIT {
            let i = index(v);
            assert!(i < BUCKETS, "{v} -> {i}");
            let (lo, hi) = bounds(i);
            assert!(lo <= v && v < hi, "{v} not in [{lo},{hi}) of bucket {i}");
            v = v + 1 + v / 7;
        }
    }

    #[test]
    fn midpoints_are_within_two_percent() {
        for v in [
            33u64,
            100,
            1_000,
            12_345,
            999_999,
            1 << 30,
            (1 << 40) + 12345,
        ] {
            let (lo, hi) = bounds(index(v));
            let mid = (lo + hi) as f64 / 2.0;
            let err = (mid - v as f64).abs() / v as f64;
            assert!(err <= 1.0 / 64.0 + 1e-9, "{v}: mid {mid} err {err}");
        }
    }

    #[test]
    fn stddev_of_a_known_distribution() {
        let mut counts = vec![0u64; BUCKETS];
        // Half at 1000 ticks, half at 3000: mean 2000, sample sd ~1000.
        counts[index(1000)] += 500;
        counts[index(3000)] += 500;
        let sd = stddev(&counts);
        assert!((sd - 1000.0).abs() / 1000.0 < 0.03, "sd {sd}");
        assert_eq!(stddev(&vec![0; BUCKETS]), 0.0);
    }

    #[test]
    fn huge_values_share_the_last_bucket() {
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        assert_eq!(index(1 << 50), BUCKETS - 1);
        assert_eq!(index(LIMIT), BUCKETS - 1);
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut counts = vec![0u64; BUCKETS];
        for v in 1..=1000u64 {
            counts[index(v * 100)] += 1;
        }
        let p50 = quantile(&counts, 1000, 0.5);
        let p99 = quantile(&counts, 1000, 0.99);
        assert!((p50 - 50_000.0).abs() / 50_000.0 < 0.02, "p50 {p50}");
        assert!((p99 - 99_000.0).abs() / 99_000.0 < 0.02, "p99 {p99}");
        assert_eq!(quantile(&counts, 0, 0.5), 0.0);
    }
}
