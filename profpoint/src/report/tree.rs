//! The points tree's section of the report: every thread's tree merged by path, in
//! nanoseconds, with an estimated point's nodes scaled to its row.

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
/// profpoint's own hidden points (the overhead calibrations) are left out. The nodes of a
/// point with a row in `rows` (an estimated one) are scaled to it ([`scale_to_rows`]).
pub(super) fn tree_report(clock: &ClockInfo, rows: &[Option<Row>]) -> PointsTree {
    let (raw, lost_calls) = crate::tree::merged();
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
            }
            _ => at.push(None),
        }
    }
    scale_to_rows(&mut nodes, &of, rows);
    let mut tree = PointsTree::default();
    tree.nodes = nodes;
    tree.lost_calls = lost_calls;
    tree
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
