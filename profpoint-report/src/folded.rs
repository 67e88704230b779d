//! Folded stacks, the input format of `inferno` (and of Brendan Gregg's `flamegraph.pl`): one
//! line per distinct stack, `root;caller;leaf COUNT`.
//!
//! Two sources: the points tree (each node's path of points, valued by its self time in
//! nanoseconds: a flame graph's widths are then each path's total time) and the sampler's
//! stacks (`heatmap.stacks`, valued by samples). Pure functions of the model.

use crate::model::{PointsTree, Report};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What a points tree's folded line counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FoldedValue {
    /// The path's self time in nanoseconds (scaled up by calls / timed where its point was
    /// sampled 1 in N: an estimate there). Frame widths are then total times.
    #[default]
    SelfNs,
    /// The path's calls.
    Calls,
}

/// A frame as folded stacks can hold it: `;` separates frames and a line ends the stack, so
/// both become `:` and a space.
fn frame(name: &str) -> std::borrow::Cow<'_, str> {
    if name.contains([';', '\n', '\r']) {
        name.replace(';', ":").replace(['\n', '\r'], " ").into()
    } else {
        name.into()
    }
}

/// Sums `(stack, count)` pairs by stack and writes them sorted (inferno reads any order; sorted
/// is stable to compare).
fn write(lines: BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    for (stack, count) in lines {
        if count > 0 {
            let _ = writeln!(out, "{stack} {count}");
        }
    }
    out
}

/// The points tree as folded stacks: each node's path of point names, outermost first, and
/// its value (`value`). Paths with nothing to count (0 ns, no call) are left out. A path
/// longer than [`PATH_DEPTH`](crate::model::PATH_DEPTH) points is cut there, with one `...`
/// frame for the rest, and the nodes below the cut are summed into that line
/// ([`PointsTree::path_cut`] says how many): the work is linear in the nodes, the output at
/// most the nodes times that depth.
pub fn points_folded(tree: &PointsTree, value: FoldedValue) -> String {
    let cut = tree.path_cut();
    // Summed by rendered end first: a path is built once, however many nodes end there.
    let mut by_end: std::collections::HashMap<(usize, bool), u64> =
        std::collections::HashMap::new();
    for (i, n) in tree.nodes.iter().enumerate() {
        let v = match value {
            FoldedValue::SelfNs => n.est_self_ns(),
            FoldedValue::Calls => n.calls,
        };
        if v > 0 {
            let e = by_end.entry(cut.end(i)).or_insert(0);
            *e = e.saturating_add(v);
        }
    }
    let mut lines = BTreeMap::new();
    for ((end, more), v) in by_end {
        // `end` is within the depth: its path whole, then the cut frame for the nodes below.
        let mut path: Vec<_> = tree.cut_path(end, &cut).into_iter().map(frame).collect();
        if more {
            path.push(crate::model::CUT_FRAME.into());
        }
        let e = lines.entry(path.join(";")).or_insert(0u64);
        *e = e.saturating_add(v);
    }
    write(lines)
}

/// The sampler's stacks as folded stacks: frames root first, valued by samples. Stacks that
/// differ only by their tag (the active point) are summed.
#[cfg(feature = "heatmap")]
pub fn stacks_folded(stacks: &crate::heatmap::StackReport) -> String {
    let mut lines = BTreeMap::new();
    for s in &stacks.stacks {
        let path: Vec<_> = s.frames.iter().map(|f| frame(&f.function)).collect();
        if path.is_empty() {
            continue;
        }
        *lines.entry(path.join(";")).or_insert(0) += s.count;
    }
    write(lines)
}

/// Which source [`Report::folded`] and [`Report::flame_svg`] use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackSource {
    /// The sampler's stacks (`heatmap.stacks`), counted in samples.
    Sampled,
    /// The points tree, counted in nanoseconds of self time.
    Points,
}

impl Report {
    /// The sampled stacks when the report has any, else the points tree (`None`: neither).
    pub fn stack_source(&self) -> Option<StackSource> {
        #[cfg(feature = "heatmap")]
        if self
            .heatmap
            .as_ref()
            .and_then(|h| h.stacks.as_ref())
            .is_some_and(|s| !s.stacks.is_empty())
        {
            return Some(StackSource::Sampled);
        }
        self.tree.as_ref().map(|_| StackSource::Points)
    }

    /// Folded stacks of `source` (empty when the report lacks it).
    pub fn folded_of(&self, source: StackSource) -> String {
        match source {
            #[cfg(feature = "heatmap")]
            StackSource::Sampled => self
                .heatmap
                .as_ref()
                .and_then(|h| h.stacks.as_ref())
                .map(stacks_folded)
                .unwrap_or_default(),
            #[cfg(not(feature = "heatmap"))]
            StackSource::Sampled => String::new(),
            StackSource::Points => self
                .tree
                .as_ref()
                .map(|t| points_folded(t, FoldedValue::SelfNs))
                .unwrap_or_default(),
        }
    }

    /// Folded stacks: the sampled stacks when the report has them, else the points tree
    /// (self time in ns); empty when it has neither.
    pub fn folded(&self) -> String {
        self.stack_source()
            .map(|s| self.folded_of(s))
            .unwrap_or_default()
    }

    /// Folded stacks of the points tree (self time in ns), whatever else the report holds.
    pub fn points_folded(&self) -> String {
        self.folded_of(StackSource::Points)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::TreeNode;

    fn node(parent: Option<usize>, name: &str, calls: u64, timed: u64, self_ns: i64) -> TreeNode {
        TreeNode {
            parent,
            name: name.to_string(),
            file: "src/main.rs".to_string(),
            line: 1,
            calls,
            timed,
            total_ns: self_ns.max(0) as u64,
            self_ns: Some(self_ns),
            estimated: false,
            sampled: false,
            total_ci95_ns: 0,
        }
    }

    /// main -> parse -> lex, main -> lex (a second caller), a sampled point (1 timed call of 4)
    /// and one whose self time came out negative (untimed children counted at their mean).
    pub(crate) fn tree() -> PointsTree {
        PointsTree {
            nodes: vec![
                node(None, "main", 1, 1, 100),
                node(Some(0), "parse", 3, 3, 50),
                node(Some(1), "lex", 6, 6, 30),
                node(Some(0), "lex", 2, 2, 5),
                node(Some(0), "sampled;odd\nname", 4, 1, 10),
                node(Some(0), "negative", 1, 1, -3),
            ],
            lost_calls: 0,
        }
    }

    #[test]
    fn the_points_tree_folds_to_one_line_per_path_in_self_ns() {
        assert_eq!(
            points_folded(&tree(), FoldedValue::SelfNs),
            "main 100\nmain;lex 5\nmain;parse 50\nmain;parse;lex 30\nmain;sampled:odd name 40\n"
        );
        assert_eq!(
            points_folded(&tree(), FoldedValue::Calls),
            "main 1\nmain;lex 2\nmain;negative 1\nmain;parse 3\nmain;parse;lex 6\n\
             main;sampled:odd name 4\n"
        );
    }

    /// A chain of `n` nodes, each 1 ns of self time and one call: `c0 -> c1 -> ...`.
    pub(crate) fn chain(n: usize) -> PointsTree {
        PointsTree {
            nodes: (0..n)
                .map(|i| node(i.checked_sub(1), &format!("c{i}"), 1, 1, 1))
                .collect(),
            lost_calls: 0,
        }
    }

    /// A chain deeper than `PATH_DEPTH`: one line per node within it, each its path whole, and
    /// one line for everything below, the cut frame after the depth's last node, valued by
    /// the nodes it stands for. Rendered whole, 3,000 nodes were 4.5 million frames.
    #[test]
    fn a_chain_past_the_depth_is_cut_there_and_summed() {
        use crate::model::{CUT_FRAME, PATH_DEPTH};
        let tree = chain(3 * PATH_DEPTH);
        assert_eq!(tree.path_cut().deeper, 2 * PATH_DEPTH);
        let out = points_folded(&tree, FoldedValue::Calls);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), PATH_DEPTH + 1);
        let frames: usize = lines.iter().map(|l| l.split(';').count()).sum();
        assert_eq!(frames, PATH_DEPTH * (PATH_DEPTH + 1) / 2 + PATH_DEPTH + 1);
        let deepest = (0..PATH_DEPTH).map(|i| format!("c{i}")).collect::<Vec<_>>();
        let cut = format!("{};{CUT_FRAME} {}", deepest.join(";"), 2 * PATH_DEPTH);
        assert!(lines.contains(&cut.as_str()));
        let whole = format!("{} 1", deepest.join(";"));
        assert!(lines.contains(&whole.as_str()));
        // Every call is in one line: the total is kept.
        let total: u64 = lines
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 3 * PATH_DEPTH as u64);
    }

    #[cfg(feature = "heatmap")]
    pub(crate) fn stacks() -> crate::heatmap::StackReport {
        let f = |name: &str| crate::heatmap::Frame {
            address: 0x1000,
            function: name.to_string(),
            library: None,
            location: None,
            inlined: false,
        };
        let s = |frames: &[&str], count, tag| crate::heatmap::SampledStack {
            frames: frames.iter().map(|n| f(n)).collect(),
            count,
            tag,
        };
        crate::heatmap::StackReport {
            depth: 64,
            samples: 112,
            stacks: vec![
                s(&["main", "caller_a", "hot"], 81, 1),
                s(&["main", "caller_b", "hot"], 10, 1),
                // The same frames under another active point: one line.
                s(&["main", "caller_a", "hot"], 9, 2),
                s(&["main"], 12, 0),
                s(&[], 3, 0),
            ],
            ..Default::default()
        }
    }

    #[cfg(feature = "heatmap")]
    #[test]
    fn sampled_stacks_fold_root_first_summed_over_tags() {
        assert_eq!(
            stacks_folded(&stacks()),
            "main 12\nmain;caller_a;hot 90\nmain;caller_b;hot 10\n"
        );
    }

    #[cfg(feature = "heatmap")]
    #[test]
    fn a_report_folds_its_sampled_stacks_when_it_has_them_else_its_points_tree() {
        let mut r = Report::empty();
        assert_eq!(r.stack_source(), None);
        assert_eq!(r.folded(), "");
        r.tree = Some(tree());
        assert_eq!(r.stack_source(), Some(StackSource::Points));
        assert_eq!(r.folded(), points_folded(&tree(), FoldedValue::SelfNs));
        r.heatmap = Some(heat(None));
        assert_eq!(
            r.stack_source(),
            Some(StackSource::Points),
            "a heatmap without stacks"
        );
        r.heatmap = Some(heat(Some(stacks())));
        assert_eq!(r.stack_source(), Some(StackSource::Sampled));
        assert_eq!(r.folded(), stacks_folded(&stacks()));
        assert_eq!(
            r.points_folded(),
            points_folded(&tree(), FoldedValue::SelfNs)
        );
    }

    /// A heatmap section with `stacks`.
    #[cfg(feature = "heatmap")]
    pub(crate) fn heat(stacks: Option<crate::heatmap::StackReport>) -> crate::heatmap::Report {
        crate::heatmap::Report {
            source: "perf task-clock".into(),
            mode: "cpu".into(),
            by: crate::heatmap::By::Function,
            bucket_size: 16,
            requested_hz: 997,
            achieved_hz: None,
            achieved_hz_per_cpu_second: None,
            user_cpu_seconds: 1.0,
            sys_cpu_seconds: 0.0,
            wall_seconds: 1.0,
            total_samples: 112,
            other: 0,
            proc_samples: 0,
            excluded: 0,
            base: 112,
            warnings: Vec::new(),
            rows: Vec::new(),
            stacks,
        }
    }
}
