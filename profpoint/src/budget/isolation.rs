//! Isolation windows: a class of parent points timed alone (their children off) to price
//! their own calls, the classes (sets of points none of which runs inside another) and the
//! mean call each point keeps from its last windows.

/// The isolation windows to keep a point's mean call from.
pub(super) const ISOLATED_WINDOWS: usize = 15;

/// The fewest timed calls, pooled over isolation windows, on which a point's isolated mean
/// call stands.
const MIN_ISOLATED: f64 = 32.0;

/// A point's mean outermost call timed in isolation windows, and the standard error of that
/// mean (ticks; see [`Isolated::mean`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct IsolatedMean {
    pub(crate) mean: f64,
    pub(crate) stderr: f64,
}

/// A point's last [`ISOLATED_WINDOWS`] isolation windows: total ticks and timed calls of each.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Isolated {
    windows: [(f64, f64); ISOLATED_WINDOWS],
    count: usize,
}

impl Isolated {
    pub(super) fn add(&mut self, total: f64, timed: f64) {
        self.windows[self.count % ISOLATED_WINDOWS] = (total, timed);
        self.count += 1;
    }

    /// The mean call over the kept windows whose own mean is at most twice the median of
    /// theirs, the timed calls it rests on, and the standard error of that mean (the spread
    /// of those windows' means over the square root of their number; the whole mean when
    /// one window holds it, or all read the same, which leaves no spread to judge by). A window is a few hundred
    /// calls of a few hundred microseconds: a timer interrupt of 30 us in one (this guest's)
    /// raised its mean call by 100-200 ns and, pooled, a point's mean by 10-20 ns, under its
    /// parent's; the stall rule of single calls (1,000 times the mean) does not see it.
    pub(super) fn mean(&self) -> Option<(IsolatedMean, f64)> {
        let n = self.count.min(ISOLATED_WINDOWS);
        let mut windows: Vec<(f64, f64)> = self.windows[..n]
            .iter()
            .copied()
            .filter(|&(_, t)| t > 0.0)
            .collect();
        if windows.is_empty() {
            return None;
        }
        windows.sort_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)));
        let (s, t) = windows[windows.len() / 2];
        let median = s / t;
        windows.retain(|&(s, t)| s / t <= 2.0 * median);
        let means: Vec<f64> = windows.iter().map(|(s, t)| s / t).collect();
        let (total, timed) = windows
            .iter()
            .fold((0.0, 0.0), |(a, b), (s, t)| (a + s, b + t));
        let mean = total / timed;
        let k = means.len() as f64;
        let spread = if means.len() < 2 {
            0.0
        } else {
            let avg = means.iter().sum::<f64>() / k;
            (means.iter().map(|m| (m - avg) * (m - avg)).sum::<f64>() / (k - 1.0) / k).sqrt()
        };
        // Windows that all read the same mean (a clock coarser than the calls) have no spread
        // to judge by either: an interval of 0 would call the mean exact.
        let stderr = if spread > 0.0 { spread } else { mean };
        (timed > 0.0).then_some((IsolatedMean { mean, stderr }, timed))
    }

    /// [`Isolated::mean`] where it rests on at least [`MIN_ISOLATED`] timed calls: the mean
    /// the report makes totals and self times from and shows (`None`: too few yet).
    pub(super) fn usable_mean(&self) -> Option<IsolatedMean> {
        let (mean, timed) = self.mean()?;
        (timed >= MIN_ISOLATED).then_some(mean)
    }
}

/// The isolation classes of `points` given the tree of points (`nodes`, as
/// `tree::merged` gives it): sets none of whose points was ever found inside another of the
/// same set, so that timing one set alone times each of its points with every other point
/// of the windows off below it. Greedy: each point (in index order) joins the first class
/// it conflicts with no member of. Only parents (points some other point of `points` was
/// found inside) join: a leaf's time in the bursts has no nested call's cost to take out, so
/// the report prices it there, and its isolated mean, lower than its bursts' by a different
/// factor than its parent's, moved its share into the parent (base64's loop: 3-4 pairs out
/// of perf's order in three runs with leaves isolated, 0-2 in five without; in BENCHMARKS.md's
/// git history).
/// A point the tree never saw joins none (nothing says what it may nest); a point found
/// inside itself (recursion) may still join a class (its own nested calls are not outermost
/// and do not add to its total).
pub(super) fn isolation_classes(
    points: &[usize],
    nodes: &[(Option<usize>, crate::tree::RawNode)],
) -> Vec<Vec<usize>> {
    use std::collections::HashSet;
    let wanted: HashSet<usize> = points.iter().copied().collect();
    let point_of = |k: usize| (nodes[k].1.point as usize).checked_sub(1);
    let mut conflicts: HashSet<(usize, usize)> = HashSet::new();
    let mut parents: HashSet<usize> = HashSet::new();
    for k in 0..nodes.len() {
        let Some(p) = point_of(k).filter(|p| wanted.contains(p)) else {
            continue;
        };
        let mut up = nodes[k].0;
        while let Some(a) = up {
            if let Some(q) = point_of(a).filter(|q| *q != p && wanted.contains(q)) {
                conflicts.insert((p.min(q), p.max(q)));
                parents.insert(q);
            }
            up = nodes[a].0;
        }
    }
    let mut order: Vec<usize> = parents.into_iter().collect();
    order.sort_unstable();
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for p in order {
        let free = |c: &Vec<usize>| {
            c.iter()
                .all(|&q| !conflicts.contains(&(p.min(q), p.max(q))))
        };
        match classes.iter_mut().find(|c| free(c)) {
            Some(c) => c.push(p),
            None => classes.push(vec![p]),
        }
    }
    classes
}
