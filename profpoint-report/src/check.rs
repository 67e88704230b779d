//! What every report must hold, whatever a budget, a sampler or a mode did to its timing: no
//! figure a run cannot have produced. [`Report::impossible`] lists the figures that break
//! them; the suite checks the reports its budget tests take.

use crate::model::Report;

/// Clock reads of one interval on two threads, or a report taken while calls run, may disagree
/// by a little: a total may pass its bound by this much before it is impossible.
const SLACK_NS: u64 = 1_000_000;

/// Points that cost more than this times the budget must say why (the runtime's line is
/// given from this factor on).
pub const OVER_SAID: f64 = 1.05;

impl Report {
    /// Every impossible figure in the report, one line each (empty: none):
    /// - a synchronous point's total above the wall time times the threads that ran points
    ///   (its calls on one thread never overlap);
    /// - a self time above its total;
    /// - percentiles out of order (min <= p50 <= p90 <= p99 <= p99.9 <= max);
    /// - a path of the points tree whose figures are measured whole or sampled (the wall
    ///   sampler's) whose children's totals add up to more than its own (a child runs inside
    ///   its parent's interval), whose self time is above its total, or negative (for a
    ///   measured one, where nothing was compensated: compensation takes a fixed figure out
    ///   per nested call); a path scaled from some timed calls (bursts, or sampling with no
    ///   wall sampler) is an older estimate and not held to it;
    /// - a negative or non-finite cost in the budget's section;
    /// - points that cost more than the budget (by more than 5% of it) with nothing saying
    ///   why (neither `counting_over` nor `over`; a report written before `over` existed,
    ///   2026-12-01, may fail this);
    /// - an interval on a figure not marked an estimate (`nr_ci95` without `nr_estimated`,
    ///   `total_ci95_ns` without `estimated`): a reader would take the figure as exact;
    /// - an estimated total with no interval (`estimated` with `total_ci95_ns` 0): an
    ///   estimate always carries one, the run's wall time where nothing narrower is known;
    /// - a count below the calls it is made of (`nr` under `timed + nested`);
    /// - a measured synchronous point (not estimated) whose mean call is below its shortest
    ///   (by more than the nanosecond of rounding). Not above its longest: a `tracing` span's
    ///   segments are in its total as each ends, its call in the count and the longest only
    ///   when the span closes, so a span still open raises the mean alone.
    pub fn impossible(&self) -> Vec<String> {
        let mut out = Vec::new();
        let threads = self.run.shards.max(1) as u64;
        let bound = self
            .wall_ns
            .saturating_mul(threads)
            .saturating_add(SLACK_NS);
        for p in &self.points {
            if p.kind == "sync" && self.wall_ns > 0 && p.total_ns > bound {
                out.push(format!(
                    "{}: total {} ns above the wall time {} ns x {threads} threads",
                    p.name, p.total_ns, self.wall_ns
                ));
            }
            if let Some(own) = p.self_ns
                && own > p.total_ns
            {
                out.push(format!(
                    "{}: self time {own} ns above its total {} ns",
                    p.name, p.total_ns
                ));
            }
            if p.nr_ci95.is_some() && !p.nr_estimated {
                out.push(format!(
                    "{}: a count interval of {:?} on a count not marked estimated",
                    p.name, p.nr_ci95
                ));
            }
            if p.total_ci95_ns > 0 && !p.estimated {
                out.push(format!(
                    "{}: a total interval of {} ns on a total not marked estimated",
                    p.name, p.total_ci95_ns
                ));
            }
            if p.estimated && p.total_ci95_ns == 0 {
                out.push(format!(
                    "{}: an estimated total of {} ns with no interval",
                    p.name, p.total_ns
                ));
            }
            if p.nr < p.timed.saturating_add(p.nested) {
                out.push(format!(
                    "{}: {} calls, fewer than its {} timed and {} nested ones",
                    p.name, p.nr, p.timed, p.nested
                ));
            }
            if p.kind == "sync"
                && !p.estimated
                && p.timed > 0
                && p.avg_ns.saturating_add(1) < p.min_ns
            {
                out.push(format!(
                    "{}: mean call {} ns below its shortest {} ns",
                    p.name, p.avg_ns, p.min_ns
                ));
            }
            if p.timed > 0 {
                let q = [p.min_ns, p.p50_ns, p.p90_ns, p.p99_ns, p.p999_ns, p.max_ns];
                if q.windows(2).any(|w| w[0] > w[1]) {
                    out.push(format!(
                        "{}: percentiles out of order (min, p50, p90, p99, p99.9, max: {q:?})",
                        p.name
                    ));
                }
            }
        }
        // Compensation (asked for, or in the budget's timing windows) takes a fixed figure
        // out per nested timed call: a path's self time is then an estimate, which may dip
        // below zero (flame graphs read it through `TreeNode::est_self_ns`, never negative).
        let compensated = self.compensated || self.budget.bursts > 0;
        if let Some(tree) = &self.tree {
            out.extend(tree_impossible(tree, compensated));
        }
        let b = &self.budget;
        let costs = [
            ("cost_percent", Some(b.cost_percent)),
            ("cost_timed_ns", Some(b.cost_timed_ns)),
            ("cost_skipped_ns", Some(b.cost_skipped_ns)),
            ("cost_counted_ns", Some(b.cost_counted_ns)),
            ("cost_timed_in_context_ns", b.cost_timed_in_context_ns),
            (
                "counting_over.percent",
                b.counting_over.as_ref().map(|o| o.percent),
            ),
        ];
        let parts = b
            .over
            .iter()
            .flat_map(|o| &o.parts)
            .map(|p| ("over.parts", Some(p.percent)));
        for (name, v) in costs.into_iter().chain(parts) {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                out.push(format!("budget: {name} is {v}"));
            }
        }
        if let Some(budget) = b.percent
            && budget > 0.0
            && b.cost_percent > OVER_SAID * budget
            && b.counting_over.is_none()
            && b.over.is_none()
        {
            out.push(format!(
                "budget: the points cost {}% of the CPU time against a budget of {budget}%, and nothing says why",
                b.cost_percent
            ));
        }
        out
    }
}

/// The points tree's impossible figures (see [`Report::impossible`]).
fn tree_impossible(tree: &crate::model::PointsTree, compensated: bool) -> Vec<String> {
    let mut out = Vec::new();
    // Lines past this many are counted, not written: a path's name is as long as the path,
    // and a crafted report's chain may hold a million.
    const MOST: usize = 20;
    let mut more = 0u64;
    let len = tree.nodes.len();
    // Whether a path's figures are held to the rules: measured whole, or sampled.
    let held = |i: usize| {
        let n = &tree.nodes[i];
        !n.estimated && (n.sampled || n.timed == n.calls)
    };
    // A path named in a finding is cut as rendered paths are (a chain's every node named
    // whole would be quadratic).
    let cut = tree.path_cut();
    let mut children = vec![0u64; len];
    let mut all_held = vec![true; len];
    let mut any_sampled = vec![false; len];
    for (i, n) in tree.nodes.iter().enumerate() {
        if let Some(p) = n.parent.filter(|&p| p < i) {
            children[p] = children[p].saturating_add(n.total_ns);
            all_held[p] &= held(i);
            any_sampled[p] |= n.sampled;
        }
    }
    for (i, n) in tree.nodes.iter().enumerate() {
        if !held(i) || !all_held[i] {
            continue;
        }
        let own = n.self_ns;
        // A measured self time is the interval less the points nested in it, each timed
        // call of which compensation may take a fixed figure out of; a sampled one is a
        // difference of totals, never below zero.
        let may_dip = compensated && !n.sampled && !any_sampled[i];
        let found = [
            (children[i] > n.total_ns.saturating_add(SLACK_NS)).then(|| {
                format!(
                    "children's totals {} ns above its own {} ns",
                    children[i], n.total_ns
                )
            }),
            own.filter(|&o| o > (n.total_ns as i64).saturating_add(SLACK_NS as i64))
                .map(|o| format!("self time {o} ns above its total {} ns", n.total_ns)),
            own.filter(|&o| !may_dip && o < -(SLACK_NS as i64))
                .map(|o| format!("negative self time {o} ns")),
        ];
        for what in found.into_iter().flatten() {
            if out.len() < MOST {
                out.push(format!(
                    "tree path {}: {what}",
                    tree.cut_path(i, &cut).join(";")
                ));
            } else {
                more += 1;
            }
        }
    }
    if more > 0 {
        out.push(format!("and {more} more impossible figures in the tree"));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::model::{Report, test_point};

    /// The tree's rules hold for sampled paths as for measured ones: a sampled child above
    /// its parent, or a sampled self time below zero, is impossible; a path scaled from a
    /// few timed calls (an older estimate) is not held to them.
    #[test]
    fn a_sampled_path_is_held_to_the_tree_s_rules() {
        use crate::model::{PointsTree, TreeNode};
        let node = |parent, name: &str, total_ns, self_ns, sampled| TreeNode {
            parent,
            name: name.to_string(),
            calls: 10,
            timed: if sampled { 2 } else { 10 },
            total_ns,
            self_ns: Some(self_ns),
            sampled,
            total_ci95_ns: if sampled { 1_000 } else { 0 },
            ..TreeNode::default()
        };
        let mut r = Report::empty();
        let mut tree = PointsTree {
            nodes: vec![
                node(None, "main", 10_000_000, 1_000_000, false),
                node(Some(0), "parse", 9_000_000, 9_000_000, true),
            ],
            ..PointsTree::default()
        };
        r.tree = Some(tree.clone());
        assert_eq!(r.impossible(), Vec::<String>::new());
        tree.nodes[1].total_ns = 12_000_000;
        tree.nodes[1].self_ns = Some(-2_000_000);
        r.tree = Some(tree.clone());
        let bad = r.impossible();
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(
            bad[0].contains("main: children's totals 12000000 ns"),
            "{bad:?}"
        );
        assert!(bad[1].contains("main;parse: negative self time"), "{bad:?}");
        // The same figures scaled from two timed calls of ten, not sampled: not held.
        tree.nodes[1].sampled = false;
        tree.nodes[1].total_ci95_ns = 0;
        r.tree = Some(tree);
        assert_eq!(r.impossible(), Vec::<String>::new());
    }

    #[test]
    fn an_interval_on_a_figure_not_marked_estimated_is_impossible() {
        let mut r = Report::empty();
        r.points = vec![test_point("a", 1), test_point("b", 2)];
        assert_eq!(r.impossible(), Vec::<String>::new());
        r.points[0].nr_ci95 = Some(5);
        r.points[1].total_ci95_ns = 7;
        let bad = r.impossible();
        assert_eq!(bad.len(), 2, "{bad:?}");
        r.points[0].nr_estimated = true;
        r.points[1].estimated = true;
        assert_eq!(r.impossible(), Vec::<String>::new());
    }

    #[test]
    fn an_estimate_with_no_interval_is_impossible() {
        let mut r = Report::empty();
        r.points = vec![test_point("a", 1)];
        r.points[0].estimated = true;
        assert_eq!(r.impossible().len(), 1, "{:?}", r.impossible());
        r.points[0].total_ci95_ns = 40;
        assert_eq!(r.impossible(), Vec::<String>::new());
    }

    #[test]
    fn a_count_below_its_timed_and_nested_calls_is_impossible() {
        let mut r = Report::empty();
        r.points = vec![test_point("a", 1)];
        r.points[0].nested = 2;
        assert_eq!(r.impossible().len(), 1, "{:?}", r.impossible());
        r.points[0].nr = 3;
        assert_eq!(r.impossible(), Vec::<String>::new());
    }

    #[test]
    fn a_measured_mean_below_its_shortest_call_is_impossible() {
        let mut r = Report::empty();
        r.points = vec![test_point("a", 1)];
        r.points[0].avg_ns = 9;
        assert_eq!(
            r.impossible(),
            Vec::<String>::new(),
            "a nanosecond of rounding"
        );
        r.points[0].avg_ns = 8;
        assert_eq!(r.impossible().len(), 1, "{:?}", r.impossible());
        // Above the longest is possible: a span still open has its segments in its total.
        r.points[0].avg_ns = 40;
        assert_eq!(r.impossible(), Vec::<String>::new());
        // An estimate's mean prices calls no timed call saw: not judged so.
        r.points[0].avg_ns = 8;
        r.points[0].estimated = true;
        r.points[0].total_ci95_ns = 10;
        assert_eq!(r.impossible(), Vec::<String>::new());
    }

    #[test]
    fn a_budget_not_kept_with_nothing_said_is_impossible() {
        let mut r = Report::empty();
        r.budget.percent = Some(2.0);
        r.budget.cost_percent = 2.1;
        assert_eq!(r.impossible(), Vec::<String>::new());
        r.budget.cost_percent = 3.0;
        assert_eq!(r.impossible().len(), 1, "{:?}", r.impossible());
        r.budget.over = Some(crate::BudgetOver::default());
        assert_eq!(r.impossible(), Vec::<String>::new());
        r.budget.over = None;
        r.budget.counting_over = Some(crate::CountingOver::default());
        assert_eq!(r.impossible(), Vec::<String>::new());
    }
}
