//! The counting floor: what counting alone costs, and which points make that cost.
//!
//! Without bursts (the default), the budget's last resort is to count a point's calls and time
//! none: a count is exact, and a point the user did not switch off is never turned off by the
//! budget. Counting costs a few nanoseconds a call, so a program whose annotated functions
//! are called hundreds of millions of times a second can spend more than its budget on
//! counting alone. The controller then keeps counting (the counts are the product's first
//! promise) and the report says so in one line: what share of the CPU counting alone took,
//! the few points that made most of it, and the knobs that would help (switching those points
//! off, or opting in to bursts, which estimate their calls instead).

/// The whole run's counting cost against the budget, summed over rounds.
#[derive(Debug)]
pub(super) struct CountingFloor {
    /// What counting every managed point's calls would have cost (ticks), in rounds where that
    /// alone was above the budget.
    over_ticks: f64,
    /// The budget of those rounds (ticks).
    over_budget_ticks: f64,
    /// What counting would have cost over every round (ticks), and the budget over them.
    ticks: f64,
    budget_ticks: f64,
    /// Rounds in which counting alone was above the budget.
    over_rounds: u64,
    /// Calls of each point (by index) in those rounds: who made the cost.
    calls: Vec<u64>,
}

/// At most this many points are named as making the counting cost.
const NAMED: usize = 5;
/// Points are named, hottest first, until they make this share of the counted calls.
const MOST: f64 = 0.8;

impl CountingFloor {
    pub(super) const EMPTY: CountingFloor = CountingFloor {
        over_ticks: 0.0,
        over_budget_ticks: 0.0,
        ticks: 0.0,
        budget_ticks: 0.0,
        over_rounds: 0,
        calls: Vec::new(),
    };

    /// Folds one round: `counting`, what counting every managed point's calls costs (ticks),
    /// `budget` (ticks), and the managed points' `(index, calls)`.
    pub(super) fn fold(&mut self, counting: f64, budget: f64, managed: &[(usize, u64)]) {
        self.ticks += counting;
        self.budget_ticks += budget;
        if counting <= budget {
            return;
        }
        self.over_rounds += 1;
        self.over_ticks += counting;
        self.over_budget_ticks += budget;
        for &(i, n) in managed {
            if self.calls.len() <= i {
                self.calls.resize(i + 1, 0);
            }
            self.calls[i] += n;
        }
    }

    /// What the report says of it, when counting alone cost more than the budget over the
    /// run: `None` otherwise.
    pub(super) fn report(&self, names: impl Fn(usize) -> String) -> Option<CountingOver> {
        if self.over_rounds == 0 || self.ticks <= self.budget_ticks {
            return None;
        }
        let calls: Vec<f64> = self.calls.iter().map(|&n| n as f64).collect();
        let points = most_of(&calls, names);
        Some(CountingOver {
            // Budget ticks are `ppm` of the CPU's ticks: the share of CPU is the budget's
            // percent scaled by how far counting went over it.
            ratio_to_budget: self.ticks / self.budget_ticks.max(f64::MIN_POSITIVE),
            rounds: self.over_rounds,
            points,
        })
    }
}

/// The points that make most of `parts` (by point index), hottest first, each with its share
/// of the whole: at most [`NAMED`], until they make [`MOST`] of it.
pub(super) fn most_of(parts: &[f64], names: impl Fn(usize) -> String) -> Vec<(String, f64)> {
    let total: f64 = parts.iter().filter(|v| **v > 0.0).sum();
    let mut order: Vec<usize> = (0..parts.len()).filter(|&i| parts[i] > 0.0).collect();
    order.sort_by(|&a, &b| parts[b].total_cmp(&parts[a]));
    let mut points = Vec::new();
    let mut seen = 0.0;
    for &i in order.iter().take(NAMED) {
        if seen >= MOST * total {
            break;
        }
        seen += parts[i];
        points.push((names(i), parts[i] / total));
    }
    points
}

/// Counting alone cost more than the budget.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CountingOver {
    /// Counting's cost over the run, as a multiple of the budget.
    pub(super) ratio_to_budget: f64,
    /// Rounds in which it was over.
    pub(super) rounds: u64,
    /// The points that made most of it, hottest first, each with its share of the counted
    /// calls of those rounds.
    pub(super) points: Vec<(String, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_the_budget_nothing_is_said() {
        let mut f = CountingFloor::EMPTY;
        f.fold(10.0, 100.0, &[(0, 5)]);
        assert_eq!(f.report(|i| i.to_string()), None);
    }

    #[test]
    fn over_it_the_hottest_points_that_make_most_of_it_are_named() {
        let mut f = CountingFloor::EMPTY;
        f.fold(300.0, 100.0, &[(0, 10), (1, 700), (2, 200), (3, 90)]);
        let o = f.report(|i| format!("p{i}")).unwrap();
        assert!((o.ratio_to_budget - 3.0).abs() < 1e-9);
        assert_eq!(o.rounds, 1);
        let names: Vec<&str> = o.points.iter().map(|(n, _)| n.as_str()).collect();
        // 700 + 200 of 1000 calls make 90%, past 80%: two named.
        assert_eq!(names, ["p1", "p2"]);
        assert!((o.points[0].1 - 0.7).abs() < 1e-9);
    }

    #[test]
    fn one_round_over_in_a_run_under_it_is_not_said() {
        let mut f = CountingFloor::EMPTY;
        f.fold(150.0, 100.0, &[(0, 10)]);
        for _ in 0..9 {
            f.fold(10.0, 100.0, &[(0, 1)]);
        }
        assert_eq!(f.report(|i| i.to_string()), None);
    }
}
