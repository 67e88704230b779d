//! The points tree's section of the report: the calling-context tree of profile points and
//! the caller-callee edges summed from it.

use serde::{Deserialize, Serialize};

/// The tree of profile points: a calling-context tree, one node per distinct path of points
/// from a thread's outermost point to a nested one, summed over threads.
///
/// Exact: a node's calls and times are those of its point called along exactly that path (a
/// flame graph of it needs no proportional split). A point's edges to its callers are sums
/// over nodes ([`PointsTree::edges`]). What is not in it: counted-only points (status
/// `COUNT`, e.g. throttled by the overhead budget; the points they call attach to the
/// enclosing point), and the points an async body calls (an async point is a leaf under the
/// point active at its first poll; its body's points attach to what is active on the thread
/// that polls it). A point the budget timed in bursts has its nodes scaled to its row
/// ([`TreeNode::estimated`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PointsTree {
    /// Every node, parents before their children.
    pub nodes: Vec<TreeNode>,
    /// Calls not in the tree: a thread's tree was full (32,768 paths per thread); their
    /// points' rows still count them, and the points they called attach to their parent.
    #[serde(default)]
    pub lost_calls: u64,
}

/// One path of points: its last point, its parent path, and the calls along it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TreeNode {
    /// The parent node (an index into [`PointsTree::nodes`], always smaller than this
    /// node's); `None`: the point was outermost on its thread.
    pub parent: Option<usize>,
    /// The point, as in [`PointReport`](super::PointReport).
    pub name: String,
    /// As in [`PointReport`](super::PointReport).
    pub file: String,
    /// As in [`PointReport`](super::PointReport).
    pub line: u32,
    /// Calls along this path (timed or not).
    pub calls: u64,
    /// Of them, calls timed (sampled points time one call in N).
    pub timed: u64,
    /// Sum of the timed calls' durations, nanoseconds.
    pub total_ns: u64,
    /// Their self time: duration minus the points called inside them (`None` for an async
    /// point, which has none of its own: its total is its time).
    pub self_ns: Option<i64>,
    /// The calls and times are scaled to the point's row (`calls` to its `nr`, the estimated
    /// total and self time to its `total_ns` and `self_ns`), each path keeping the share the
    /// tree saw: the overhead budget put the point in bursts, and the tree sees a point's
    /// calls only while it is on. `false` in older reports.
    #[serde(default)]
    pub estimated: bool,
    /// `total_ns` and `self_ns` are the wall sampler's for all of this path's calls, not a
    /// sum over timed calls: its point was throttled (some calls untimed), and its time is
    /// what it held before sampling began plus its subtree's samples times the period, kept
    /// between what its timed calls measured and what its parent leaves; `self_ns` is then
    /// `total_ns` less its children's. Also set on a path timed whole whose self time is
    /// made so because a child of it is sampled. `false` in older reports.
    #[serde(default)]
    pub sampled: bool,
    /// When `sampled` and its own total is sampled: the half-width of its 95% interval,
    /// nanoseconds (0 otherwise).
    #[serde(default)]
    pub total_ci95_ns: u64,
}

/// A parent -> child edge of the points tree: a sum over the nodes of `child` whose parent
/// node's point is `parent`.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TreeEdge {
    /// The calling point's name (`None`: outermost calls).
    pub parent: Option<String>,
    /// The called point's name.
    pub child: String,
    /// Calls.
    pub calls: u64,
    /// Timed calls.
    pub timed: u64,
    /// Total time of the timed calls, nanoseconds.
    pub total_ns: u64,
    /// Their self time, nanoseconds (`None` for an async child).
    pub self_ns: Option<i64>,
}

impl TreeNode {
    /// The time of this path's calls as a flame graph shows it, nanoseconds: the self time
    /// (an async point's total), scaled up by `calls / timed` where only some calls were
    /// timed (an estimate then; a `sampled` path's stands as it is), never negative.
    pub fn est_self_ns(&self) -> u64 {
        let measured = self.self_ns.unwrap_or(self.total_ns as i64).max(0) as f64;
        if self.sampled {
            // Already for every call.
            return measured as u64;
        }
        if self.timed == 0 {
            return 0;
        }
        (measured * self.calls as f64 / self.timed as f64).round() as u64
    }
}

/// The most points a rendered path of the points tree holds (folded stacks, flame graphs,
/// pprof stacks): a node deeper has its path cut at its ancestor this deep, and one frame
/// [`CUT_FRAME`] for the rest; its counts go to that cut path, summed over the nodes below
/// it. Every path whole would make a chain of n nodes n lines of up to n frames (quadratic:
/// RELIABILITY.md has what that cost); cut, the work is linear in the nodes and the output at
/// most the nodes times this depth.
pub const PATH_DEPTH: usize = 1000;

/// The frame that stands for the points of a path past [`PATH_DEPTH`].
pub const CUT_FRAME: &str = "...";

/// Where each node's rendered path ends (see [`PATH_DEPTH`]): made once for a tree, in one
/// pass over its nodes.
#[derive(Debug, Clone)]
pub struct PathCut {
    /// Each node's depth (0: outermost), capped at `PATH_DEPTH`.
    depth: Vec<usize>,
    /// Each node's rendered end: itself within `PATH_DEPTH`, else its ancestor at depth
    /// `PATH_DEPTH - 1`.
    end: Vec<usize>,
    /// Nodes past `PATH_DEPTH`.
    pub deeper: usize,
}

impl PathCut {
    /// The node whose path stands for node `i`'s, and whether the [`CUT_FRAME`] follows it.
    pub fn end(&self, i: usize) -> (usize, bool) {
        (self.end[i], self.depth[i] >= PATH_DEPTH)
    }
}

impl PointsTree {
    /// The cut of every node's path at [`PATH_DEPTH`].
    pub fn path_cut(&self) -> PathCut {
        let n = self.nodes.len();
        let (mut depth, mut end) = (vec![0usize; n], vec![0usize; n]);
        let mut deeper = 0;
        for (i, node) in self.nodes.iter().enumerate() {
            // Parents come first: a parent index that does not go down is no parent (as in
            // `path`).
            match node.parent.filter(|&p| p < i) {
                None => end[i] = i,
                Some(p) => {
                    depth[i] = (depth[p] + 1).min(PATH_DEPTH);
                    end[i] = if depth[i] < PATH_DEPTH { i } else { end[p] };
                }
            }
            if depth[i] >= PATH_DEPTH {
                deeper += 1;
            }
        }
        PathCut { depth, end, deeper }
    }

    /// The path of node `i` as rendered: outermost point first, cut at [`PATH_DEPTH`] with
    /// [`CUT_FRAME`] for the rest. At most `PATH_DEPTH + 1` names, found in as many steps.
    pub fn cut_path(&self, i: usize, cut: &PathCut) -> Vec<&str> {
        let (end, more) = cut.end(i);
        let mut path = self.path_within(end, PATH_DEPTH);
        if more {
            path.push(CUT_FRAME);
        }
        path
    }

    /// The path of node `i` when it is at most `max` points long (else its last `max`).
    fn path_within(&self, i: usize, max: usize) -> Vec<&str> {
        let mut path = Vec::new();
        let mut at = Some(i);
        while let Some(j) = at {
            let Some(n) = self.nodes.get(j) else { break };
            if path.len() == max {
                break;
            }
            path.push(n.name.as_str());
            at = n.parent.filter(|&p| p < j);
        }
        path.reverse();
        path
    }

    /// The path of node `i`, outermost point first.
    pub fn path(&self, i: usize) -> Vec<&str> {
        let mut path = Vec::new();
        let mut at = Some(i);
        while let Some(j) = at {
            let Some(n) = self.nodes.get(j) else { break };
            path.push(n.name.as_str());
            // Parents come first: a parent index that does not go down would loop.
            at = n.parent.filter(|&p| p < j);
        }
        path.reverse();
        path
    }

    /// Parent -> child edges (by point name), most calls first.
    pub fn edges(&self) -> Vec<TreeEdge> {
        let mut map: std::collections::BTreeMap<(Option<&str>, &str), TreeEdge> =
            std::collections::BTreeMap::new();
        for n in &self.nodes {
            let parent = n
                .parent
                .and_then(|p| self.nodes.get(p))
                .map(|p| p.name.as_str());
            let e = map
                .entry((parent, n.name.as_str()))
                .or_insert_with(|| TreeEdge {
                    parent: parent.map(str::to_string),
                    child: n.name.clone(),
                    calls: 0,
                    timed: 0,
                    total_ns: 0,
                    self_ns: n.self_ns.map(|_| 0),
                });
            e.calls += n.calls;
            e.timed += n.timed;
            e.total_ns += n.total_ns;
            e.self_ns = match (e.self_ns, n.self_ns) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        let mut edges: Vec<TreeEdge> = map.into_values().collect();
        edges.sort_by_key(|e| std::cmp::Reverse(e.calls));
        edges
    }
}
