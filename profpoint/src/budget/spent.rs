//! Where the points' cost went, summed over the run: by the way calls were made (steady
//! states, bursts, count windows, isolation windows) and by point, so that a report whose
//! points cost more than the budget says why: the share it reached, what made it, and who.
//!
//! The controller aims at the budget round by round, but some of what it spends is not its
//! choice to cut: a burst times every call of its points for at least its shortest length,
//! the count windows and isolation windows have their own shortest lengths, and a point the
//! user keeps on is never throttled. A run whose points call millions of times a second can
//! then land above the budget; the report says so rather than print the share alone.

use super::floor::most_of;

/// How the cost was paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// Calls between bursts, in each point's steady state (on, sampled or counted).
    Steady = 0,
    /// The bursts: every call of their points timed.
    Bursts = 1,
    /// The count windows of points in bursts (see `sample`).
    Windows = 2,
    /// The isolation windows (see `isolation`).
    Isolation = 3,
}

impl Part {
    const ALL: [Part; 4] = [Part::Steady, Part::Bursts, Part::Windows, Part::Isolation];

    /// The share of the budget the controller gives the part.
    fn share(self) -> f64 {
        match self {
            Part::Steady => 1.0 - super::BURST_SHARE,
            Part::Bursts => super::BURST_SHARE,
            Part::Windows => super::sample::COUNT_SHARE,
            // Held with the steady states (see `Spent::over`).
            Part::Isolation => 0.0,
        }
    }

    /// What keeps the part above its share when it is.
    fn reason(self) -> String {
        match self {
            Part::Steady => "a point is throttled in the round after one it cost too much in (the run's first rounds, a phase that made it hot), and only while the budget manages it (a point the program set stays as set)".into(),
            Part::Bursts => format!(
                "a burst times every call of its points for at least {} us, after a warm-up of {} us",
                super::MIN_WINDOW.as_micros(),
                super::MIN_WARM_UP.as_micros()
            ),
            Part::Windows => format!(
                "a count window counts every call for {} ms, at least once every {} ms",
                super::sample::WINDOW.as_millis(),
                super::sample::MAX_SLOT.as_millis()
            ),
            Part::Isolation => format!(
                "an isolation window times its points for at least {} ms after a burst",
                super::MIN_ISOLATION_WINDOW.as_millis()
            ),
        }
    }

    /// The part's name in the report; the steady states are "between bursts" only in a run
    /// that had bursts (`bursts`): the default mode has none.
    fn label(self, bursts: bool) -> &'static str {
        match self {
            Part::Steady if bursts => "between bursts",
            Part::Steady => "in steady states",
            Part::Bursts => "in bursts",
            Part::Windows => "in count windows",
            Part::Isolation => "in isolation windows",
        }
    }
}

/// A run's cost above the budget by more than this factor is said (the controller aims at the
/// budget, and a round's estimate is as noisy as its calls' costs); the report's check holds
/// every report to it.
pub(super) const SAID_ABOVE: f64 = profpoint_report::OVER_SAID;

/// The run's cost (ticks), by part and by point (index).
#[derive(Debug)]
pub(super) struct Spent {
    parts: [f64; 4],
    points: Vec<f64>,
}

/// The points cost more than the budget: how much, how, and who.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Over {
    /// Each part's share of the CPU time (percent), in [`Part::ALL`]'s order, the empty ones
    /// left out.
    pub(super) parts: Vec<(&'static str, f64)>,
    /// The points that made most of it, hottest first, each with its share of the cost.
    pub(super) points: Vec<(String, f64)>,
    /// Each part above the share of the budget the controller gives it, and what kept it
    /// there.
    pub(super) why: String,
}

impl Spent {
    pub(super) const EMPTY: Spent = Spent {
        parts: [0.0; 4],
        points: Vec::new(),
    };

    /// Adds `ticks` spent in `part`, on `point` (index) where one point made it.
    pub(super) fn add(&mut self, part: Part, point: Option<usize>, ticks: f64) {
        if !(ticks.is_finite() && ticks > 0.0) {
            return;
        }
        self.parts[part as usize] += ticks;
        if let Some(i) = point {
            if self.points.len() <= i {
                self.points.resize(i + 1, 0.0);
            }
            self.points[i] += ticks;
        }
    }

    /// The ticks spent in `part`.
    pub(super) fn part(&self, part: Part) -> f64 {
        self.parts[part as usize]
    }

    /// The ticks spent in every part.
    pub(super) fn total(&self) -> f64 {
        self.parts.iter().sum()
    }

    /// Adds what `other` spent (a round's cost to the run's).
    pub(super) fn merge(&mut self, other: &Spent) {
        for (a, b) in self.parts.iter_mut().zip(other.parts) {
            *a += b;
        }
        if self.points.len() < other.points.len() {
            self.points.resize(other.points.len(), 0.0);
        }
        for (a, b) in self.points.iter_mut().zip(&other.points) {
            *a += b;
        }
    }

    /// What the report says of it: `None` unless the run's cost (`cost_percent` of the CPU
    /// time) is above the budget (`budget_percent`) by more than [`SAID_ABOVE`].
    pub(super) fn over(
        &self,
        cost_percent: f64,
        budget_percent: f64,
        names: impl Fn(usize) -> String,
    ) -> Option<Over> {
        let total = self.total();
        if !(budget_percent > 0.0 && cost_percent > SAID_ABOVE * budget_percent && total > 0.0) {
            return None;
        }
        let percent = |p: Part| cost_percent * self.parts[p as usize] / total;
        // Count windows and isolation windows come with bursts alone.
        let bursts = [Part::Bursts, Part::Windows, Part::Isolation]
            .iter()
            .any(|p| self.parts[*p as usize] > 0.0);
        let parts: Vec<(Part, f64)> = Part::ALL
            .iter()
            .filter(|p| self.parts[**p as usize] > 0.0)
            .map(|p| (*p, percent(*p)))
            .collect();
        // The controller holds the steady states and the isolation windows together to their
        // share (`Controller::round`), the bursts and the count windows each to theirs.
        let mut steady_reason = Part::Steady.reason();
        if self.parts[Part::Isolation as usize] > 0.0 {
            steady_reason = format!(
                "{steady_reason}; {}% of it in isolation windows: {}",
                figure(percent(Part::Isolation)),
                Part::Isolation.reason()
            );
        }
        let held = [
            (
                Part::Steady,
                percent(Part::Steady) + percent(Part::Isolation),
                steady_reason,
            ),
            (Part::Bursts, percent(Part::Bursts), Part::Bursts.reason()),
            (
                Part::Windows,
                percent(Part::Windows),
                Part::Windows.reason(),
            ),
        ];
        let mut why: Vec<String> = held
            .into_iter()
            .filter(|(p, spent, _)| *spent > p.share() * budget_percent)
            .map(|(p, spent, reason)| {
                format!(
                    "{} {}% against the {}% given them: {reason}",
                    p.label(bursts),
                    figure(spent),
                    figure(p.share() * budget_percent),
                )
            })
            .collect();
        if why.is_empty() {
            // Each part within its share: the shares themselves add up to more than the
            // budget (headroom for the bursts and windows, which the steady states do not
            // give back while they are used).
            why.push(format!(
                "each part kept to the share the controller gives it ({:.0}% of the budget between bursts, {:.0}% in bursts, {:.0}% in count windows), and the shares add up to more than the budget",
                100.0 * Part::Steady.share(),
                100.0 * Part::Bursts.share(),
                100.0 * Part::Windows.share()
            ));
        }
        Some(Over {
            parts: parts
                .into_iter()
                .map(|(p, v)| (p.label(bursts), v))
                .collect(),
            points: most_of(&self.points, names),
            why: why.join("; "),
        })
    }
}

/// A percentage with at least two decimals and two significant digits (a budget may be a
/// hundredth of a percent).
fn figure(percent: f64) -> String {
    let digits = if percent > 0.0 && percent < 0.1 {
        (1.0 - percent.log10().floor()).min(9.0) as usize
    } else {
        2
    };
    format!("{percent:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_merged_into_the_run_adds_its_parts_and_points() {
        let mut run = Spent::EMPTY;
        run.add(Part::Steady, Some(0), 5.0);
        let mut round = Spent::EMPTY;
        round.add(Part::Steady, Some(2), 3.0);
        round.add(Part::Bursts, Some(0), 4.0);
        round.add(Part::Isolation, None, 1.0);
        assert_eq!(round.total(), 8.0);
        run.merge(&round);
        assert_eq!(run.part(Part::Steady), 8.0);
        assert_eq!(run.part(Part::Bursts), 4.0);
        assert_eq!(run.part(Part::Isolation), 1.0);
        assert_eq!(run.total(), 13.0);
        assert_eq!(run.points, [9.0, 0.0, 3.0]);
    }

    #[test]
    fn within_the_budget_nothing_is_said() {
        let mut s = Spent::EMPTY;
        s.add(Part::Steady, Some(0), 100.0);
        assert_eq!(s.over(2.0, 2.0, |i| i.to_string()), None);
        assert_eq!(s.over(2.09, 2.0, |i| i.to_string()), None);
        assert_eq!(s.over(0.0, 0.0, |i| i.to_string()), None);
    }

    #[test]
    fn over_it_each_part_gets_its_share_of_the_cost_and_the_hottest_points_are_named() {
        let mut s = Spent::EMPTY;
        s.add(Part::Bursts, Some(1), 50.0);
        s.add(Part::Steady, Some(0), 20.0);
        s.add(Part::Windows, Some(1), 20.0);
        s.add(Part::Isolation, None, 10.0);
        // Nothing negative or not a number is added.
        s.add(Part::Steady, Some(2), -5.0);
        s.add(Part::Steady, Some(2), f64::NAN);
        let o = s.over(3.0, 2.0, |i| format!("p{i}")).expect("over");
        assert_eq!(
            o.parts,
            [
                ("between bursts", 0.6),
                ("in bursts", 1.5),
                ("in count windows", 0.6),
                ("in isolation windows", 0.3)
            ]
        );
        let sum: f64 = o.parts.iter().map(|p| p.1).sum();
        assert!((sum - 3.0).abs() < 1e-9);
        // Of a 2% budget, steady states (with the isolation windows) are given 1.6%, bursts
        // 0.4%, windows 0.4%: the steady states' 0.9% is within theirs, the bursts and the
        // windows are over theirs, each said with its reason.
        assert!(!o.why.contains("between bursts"), "{}", o.why);
        for part in [
            "in bursts 1.50% against the 0.40%",
            "in count windows 0.60% against the 0.40%",
        ] {
            assert!(o.why.contains(part), "{part}: {}", o.why);
        }
        assert_eq!(o.why.matches("; ").count(), 1, "{}", o.why);
        // Steady states over theirs, with isolation windows among them.
        let mut s2 = Spent::EMPTY;
        s2.add(Part::Steady, Some(0), 80.0);
        s2.add(Part::Isolation, None, 20.0);
        let o2 = s2.over(3.0, 2.0, |i| format!("p{i}")).expect("over");
        assert!(
            o2.why.starts_with("between bursts 3.00% against the 1.60%")
                && o2.why.contains("0.60% of it in isolation windows"),
            "{}",
            o2.why
        );
        // The default mode, with no bursts: its steady states are not said to be between
        // any.
        let mut s4 = Spent::EMPTY;
        s4.add(Part::Steady, Some(0), 100.0);
        let o4 = s4.over(3.0, 2.0, |i| format!("p{i}")).expect("over");
        assert_eq!(o4.parts, [("in steady states", 3.0)]);
        assert!(
            o4.why
                .starts_with("in steady states 3.00% against the 1.60%"),
            "{}",
            o4.why
        );
        // Each part within its share, the whole over the budget: the shares are the reason.
        let mut s3 = Spent::EMPTY;
        s3.add(Part::Steady, Some(0), 75.0);
        s3.add(Part::Bursts, Some(0), 19.0);
        s3.add(Part::Windows, Some(0), 19.0);
        let o3 = s3.over(2.26, 2.0, |i| format!("p{i}")).expect("over");
        assert!(o3.why.contains("the shares add up to more"), "{}", o3.why);
        assert_eq!(figure(0.0228), "0.023");
        assert_eq!(figure(0.2), "0.20");
        assert_eq!(figure(0.0), "0.00");
        // p1 made 70 of the 90 ticks spent on points: 78%, short of 80%, so p0 is named too.
        let names: Vec<&str> = o.points.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["p1", "p0"]);
        assert!((o.points[0].1 - 70.0 / 90.0).abs() < 1e-9);
    }
}
