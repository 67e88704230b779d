//! The allocation: given each point's calls in a round and the cost of each mode, the modes that
//! keep the points' cost under the budget, and how fast a point may move back towards timing.

use super::*;

/// Where a point goes from `cur` when the allocation wants `want`: at once when `want` is more
/// throttled; by at most [`MAX_RELAX`] a round when less (a point in bursts counts first).
pub(super) fn relax_limited(cur: Mode, want: Mode) -> Mode {
    if want.rank() >= cur.rank() {
        return want;
    }
    match cur {
        Mode::Off => Mode::Off,
        Mode::Burst => Mode::Count,
        Mode::Count => match want {
            // From counting to timing one call in 64 at most, then down 4x a round.
            Mode::Sampled(n) => sampled(n.max(MAX_RELAX.pow(3))),
            Mode::On => sampled(MAX_RELAX.pow(3)),
            _ => want,
        },
        Mode::Sampled(n) => {
            let floor = match want {
                Mode::Sampled(w) => w,
                _ => 1,
            };
            sampled((n / MAX_RELAX).max(floor))
        }
        Mode::On => want,
    }
}

/// `Sampled(n)`, or `On` for n <= 1.
pub(super) fn sampled(n: u32) -> Mode {
    if n <= 1 { Mode::On } else { Mode::Sampled(n) }
}

/// The states for points called `n[i]` times in a round so that their predicted cost is at
/// most `target` ticks (see the module docs): every point gets the same number `k` of timed
/// calls (all of its calls if fewer); the hottest count only if `k = 1` is too dear, and the
/// hottest counting points go to bursts if counting is too dear.
pub(super) fn allocate(n: &[u64], c: &ModeCosts, target: f64, bursts: bool) -> Vec<Mode> {
    let mut order: Vec<usize> = (0..n.len()).collect();
    order.sort_by(|&a, &b| n[b].cmp(&n[a]));
    let nf = |i: usize| n[i] as f64;
    let count_cost =
        |counted: &[usize]| -> f64 { counted.iter().map(|&i| nf(i) * c.counted).sum() };
    // Cost of the points in `rest` all sampled to k timed calls each.
    let sampled_cost = |rest: &[usize], k: f64| -> f64 {
        rest.iter()
            .map(|&i| {
                if nf(i) <= k {
                    nf(i) * c.timed
                } else {
                    nf(i) * c.skipped + k * (c.timed - c.skipped)
                }
            })
            .sum()
    };
    // The smallest `x` in 0..=len for which `ok(x)` holds (`ok` is monotone), or len.
    let least = |len: usize, ok: &dyn Fn(usize) -> bool| {
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if ok(mid) { hi = mid } else { lo = mid + 1 }
        }
        lo
    };
    let mut modes = vec![Mode::On; n.len()];
    // Last resort: the fewest hottest points whose counting alone does not fit, so that the
    // rest can at least count. Where the user opted in to bursts, they go to bursts (off
    // between them, their calls there estimated). Without bursts, counting is the floor: they
    // count every call, whatever that costs, and the rest share the budget as if they were
    // not there (their counting is a cost no state short of off avoids; charging it to the
    // others would leave the coldest untimed for nothing).
    let off = least(order.len(), &|o| count_cost(&order[o..]) <= target);
    for &i in &order[..off] {
        modes[i] = if bursts { Mode::Burst } else { Mode::Count };
    }
    let order = &order[off..];
    // Then the fewest hottest counting only so that the rest fit with one timed call each.
    let m = least(order.len(), &|m| {
        count_cost(&order[..m]) + sampled_cost(&order[m..], 1.0) <= target
    });
    for &i in &order[..m] {
        modes[i] = Mode::Count;
    }
    let rest = &order[m..];
    let fixed = count_cost(&order[..m]);
    // The largest k that fits (cost grows with k).
    let max_n = rest.first().map_or(1.0, |&i| nf(i).max(1.0));
    let (mut lo, mut hi) = (1.0f64, max_n);
    if fixed + sampled_cost(rest, hi) <= target {
        lo = hi;
    } else {
        for _ in 0..64 {
            let mid = (lo + hi) / 2.0;
            if fixed + sampled_cost(rest, mid) <= target {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo < 0.5 {
                break;
            }
        }
    }
    let k = lo.max(1.0);
    for &i in rest {
        if nf(i) > k {
            let every = (nf(i) / k).ceil().min(f64::from(MAX_EVERY)) as u32;
            modes[i] = sampled(every.next_power_of_two().min(MAX_EVERY));
        }
    }
    modes
}
