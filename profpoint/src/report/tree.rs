//! The points tree's section of the report: every thread's tree merged by path, in
//! nanoseconds. A throttled path's time is the wall sampler's ([`sampled_times`]); a point
//! the budget timed in bursts has its nodes scaled to its row.

use crate::clock::ClockInfo;
use crate::point::{self, Kind};
use profpoint_report::{PointsTree, TreeNode};

/// An estimated point's row, as the report gives it: what its tree nodes are scaled to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Row {
    pub(super) calls: u64,
    pub(super) total_ns: u64,
    pub(super) self_ns: Option<u64>,
}

/// The points tree of every thread, merged by path (`tree.rs`), in nanoseconds. Paths through
/// profpoint's own hidden points (the overhead calibrations) are left out. With `sampling`
/// (the wall sampler ran), a path with untimed calls has the sampler's times
/// ([`sampled_times`]; `bound_ns`: the run's wall time times its threads); the nodes of a
/// point with a row in `rows` (an estimated one: in bursts, or counted only) are scaled to
/// it ([`scale_to_rows`]). Also each node's point index.
pub(super) fn tree_report(
    clock: &ClockInfo,
    rows: &[Option<Row>],
    bound_ns: u64,
    sampling: bool,
) -> (PointsTree, Vec<usize>) {
    let (raw, lost_calls) = crate::tree::merged();
    // Each kept node's raw counters.
    let mut kept = Vec::new();
    let all = point::all();
    // Merged index -> index in `nodes` (None: left out).
    let mut at: Vec<Option<usize>> = Vec::with_capacity(raw.len());
    let mut nodes = Vec::new();
    // Each node's point index.
    let mut of = Vec::new();
    for (parent, n) in &raw {
        // The node's point and its index (a tag is the index plus one).
        let p = (n.point as usize)
            .checked_sub(1)
            .and_then(|i| Some((i, all.get(i)?)));
        let parent_at = match parent {
            None => Some(None),
            Some(q) => at.get(*q).copied().flatten().map(Some),
        };
        match (p, parent_at) {
            (Some((i, p)), Some(parent)) if p.kind() != Kind::Hidden => {
                at.push(Some(nodes.len()));
                of.push(i);
                let async_point = p.kind() == Kind::Async;
                let mut node = TreeNode::default();
                node.parent = parent;
                node.name = p.name().to_string();
                node.file = p.location().0.to_string();
                node.line = p.location().1;
                node.calls = n.timed + n.untimed;
                node.timed = n.timed;
                node.total_ns = clock.to_ns(n.total);
                node.self_ns = (!async_point)
                    .then(|| clock.to_ns_f(n.self_ticks as i64 as f64).round() as i64);
                node.estimated = false;
                nodes.push(node);
                kept.push((*n, async_point));
            }
            _ => at.push(None),
        }
    }
    if sampling {
        let period = crate::budget::wall::period_ns();
        let input: Vec<Sampling> = kept
            .iter()
            .zip(&nodes)
            .map(|((n, async_point), node)| Sampling {
                parent: node.parent,
                measured_ns: node.total_ns as f64,
                // An async point's calls overlap and are never a thread's current node: its
                // nodes keep their timed calls' figures.
                sampled: n.untimed > 0 && !async_point,
                before_ns: clock.to_ns(n.before) as f64,
                samples: n.samples,
            })
            .collect();
        let out = sampled_times(&input, period, bound_ns as f64);
        for (node, o) in nodes.iter_mut().zip(out) {
            if let Some(o) = o {
                node.total_ns = o.total_ns.round() as u64;
                if node.self_ns.is_some() {
                    node.self_ns = Some(o.self_ns.round() as i64);
                }
                node.total_ci95_ns = o.ci95_ns.round() as u64;
                node.sampled = true;
            }
        }
    }
    scale_to_rows(&mut nodes, &of, rows);
    let mut tree = PointsTree::default();
    tree.nodes = nodes;
    tree.lost_calls = lost_calls;
    (tree, of)
}

/// One path as [`sampled_times`] takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Sampling {
    /// Parent path (an index below this one's).
    pub(super) parent: Option<usize>,
    /// Total of its timed calls, ns.
    pub(super) measured_ns: f64,
    /// Whether its time is to be sampled (some of its calls untimed).
    pub(super) sampled: bool,
    /// Its measured total when sampling began, ns.
    pub(super) before_ns: f64,
    /// Its own samples (as the current node), in periods.
    pub(super) samples: u64,
}

/// A path's figures from [`sampled_times`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Sampled {
    pub(super) total_ns: f64,
    pub(super) self_ns: f64,
    /// Half-width of the total's 95% interval (0 for a total measured whole).
    pub(super) ci95_ns: f64,
}

/// The times of a tree in which some paths are throttled (`sampled`): such a path's total is
/// its `before` plus its subtree's samples times `period_ns`, with a 95% interval of
/// `1.96 sqrt(samples)` periods and one more (the grid's own step); a path timed whole keeps
/// what it measured. Then, so that no figure is impossible by construction:
/// - a sampled total is at least its lower bound: what its timed calls measured, and its
///   children's lower bounds (a path timed whole is its own);
/// - a path's children together take at most its total: where sampled children's estimates
///   over their lower bounds exceed the room left, those excesses shrink in proportion;
/// - an outermost sampled total is at most `bound_ns` (the wall time times the threads).
///
/// Each clamp moves an estimate towards a bound the truth obeys, so a clamped interval still
/// holds the truth where the unclamped one did. Self time is the total less the children's,
/// for every path that is sampled or has a sampled child (`None` for the others: their
/// measured figures stand).
pub(super) fn sampled_times(
    nodes: &[Sampling],
    period_ns: f64,
    bound_ns: f64,
) -> Vec<Option<Sampled>> {
    let len = nodes.len();
    let parent = |i: usize| nodes[i].parent.filter(|&p| p < i);
    // Subtree samples, lower bounds and children lists, leaves first (parents come first).
    let mut sub = vec![0u64; len];
    let mut lower = vec![0f64; len];
    let mut kids_lower = vec![0f64; len];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); len];
    for i in (0..len).rev() {
        let n = &nodes[i];
        sub[i] += n.samples;
        lower[i] = if n.sampled {
            n.measured_ns.max(kids_lower[i])
        } else {
            n.measured_ns
        };
        if let Some(p) = parent(i) {
            sub[p] += sub[i];
            kids_lower[p] += lower[i];
            children[p].push(i);
        }
    }
    let estimate = |i: usize| {
        let s = sub[i] as f64;
        (
            nodes[i].before_ns + s * period_ns,
            (1.96 * s.sqrt() + 1.0) * period_ns,
        )
    };
    let mut total = vec![0f64; len];
    // The totals of `group` (siblings) within `room`: measured ones as measured, sampled ones
    // at their estimates, held to their lower bounds, their excesses shrunk to fit.
    let place = |group: &[usize], room: f64, total: &mut [f64]| {
        let mut fixed = 0.0;
        let mut excess = 0.0;
        for &c in group {
            if nodes[c].sampled {
                total[c] = estimate(c).0.max(lower[c]);
                fixed += lower[c];
                excess += total[c] - lower[c];
            } else {
                total[c] = nodes[c].measured_ns;
                fixed += total[c];
            }
        }
        let free = (room - fixed).max(0.0);
        if excess > free {
            let f = if excess > 0.0 { free / excess } else { 0.0 };
            for &c in group {
                if nodes[c].sampled {
                    total[c] = lower[c] + (total[c] - lower[c]) * f;
                }
            }
        }
    };
    let roots: Vec<usize> = (0..len).filter(|&i| parent(i).is_none()).collect();
    for &r in &roots {
        // Outermost paths: each within the bound on its own (they may run on many threads).
        place(&[r], bound_ns, &mut total);
    }
    for i in 0..len {
        if !children[i].is_empty() {
            let room = total[i];
            place(&children[i], room, &mut total);
        }
    }
    (0..len)
        .map(|i| {
            let sampled_child = children[i].iter().any(|&c| nodes[c].sampled);
            if !nodes[i].sampled && !sampled_child {
                return None;
            }
            let kids: f64 = children[i].iter().map(|&c| total[c]).sum();
            let ci95_ns = if nodes[i].sampled {
                // The interval keeps at least the distance the clamps moved the estimate:
                // the truth lies between the bounds and within the sampling's spread.
                let (est, h) = estimate(i);
                h.max((est - total[i]).abs()).max(1.0)
            } else {
                0.0
            };
            Some(Sampled {
                total_ns: total[i],
                self_ns: (total[i] - kids).max(0.0),
                ci95_ns,
            })
        })
        .collect()
}

/// Scales the tree's nodes of each point that has a row in `rows` (by point index; `of`: each
/// node's point) so that, summed over its nodes, its calls, its estimated total and its
/// estimated self time ([`TreeNode::est_self_ns`]) are its row's, each node keeping its
/// share of them, and marks them `estimated`.
///
/// The tree sees a point's calls only while the point is on. One the budget puts in bursts is
/// off but for a short window a round: on base64's loop its nodes held 0.3-1% of its row's
/// calls and time (`Engine::encode::inner`: 22,671 calls against 6.6 M), so a flame graph
/// drawn from them showed the hottest functions as slivers. Scaled, each path gets the
/// share of the row that the windows saw it take. Sampled points (one call in N timed) need
/// nothing: their nodes count every call, and their shares already sum to the row.
pub(super) fn scale_to_rows(nodes: &mut [TreeNode], of: &[usize], rows: &[Option<Row>]) {
    // Per point: calls, estimated total and estimated self time over its nodes.
    let mut sums = vec![(0u64, 0f64, 0f64); rows.len()];
    let est_total = |n: &TreeNode| match n.timed {
        0 => 0.0,
        t => n.total_ns as f64 * n.calls as f64 / t as f64,
    };
    for (n, &i) in nodes.iter().zip(of) {
        let s = &mut sums[i];
        s.0 += n.calls;
        s.1 += est_total(n);
        s.2 += n.est_self_ns() as f64;
    }
    for (n, &i) in nodes.iter_mut().zip(of) {
        let (Some(row), (calls, total, own)) = (rows[i], sums[i]) else {
            continue;
        };
        if calls == 0 || calls >= row.calls {
            // Every call already in the tree (a sampled point): nothing to scale.
            continue;
        }
        let new_calls =
            ((n.calls as f64 * row.calls as f64 / calls as f64).round() as u64).max(n.calls);
        // The value to store so that `value * new_calls / timed` is `target`.
        let per_timed = |target: f64| match n.timed {
            0 => 0.0,
            t => target * t as f64 / new_calls as f64,
        };
        // A path's share of the row: of the time the windows saw, or of the calls where they
        // saw none.
        let by_calls = n.calls as f64 / calls as f64;
        let total_share = if total > 0.0 {
            est_total(n) / total
        } else {
            by_calls
        };
        let new_total = per_timed(row.total_ns as f64 * total_share).round() as u64;
        n.self_ns = match (n.self_ns, row.self_ns) {
            (Some(_), Some(row_self)) => {
                let share = if own > 0.0 {
                    n.est_self_ns() as f64 / own
                } else {
                    by_calls
                };
                Some(per_timed(row_self as f64 * share).round() as i64)
            }
            (Some(_), None) => Some(0),
            (None, _) => None,
        };
        n.total_ns = new_total;
        n.calls = new_calls;
        n.estimated = true;
    }
}
