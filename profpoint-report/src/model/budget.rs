//! The budget's section of the report: what the controller did, which points it throttled
//! and how, and the points that cost the most counting.

use serde::{Deserialize, Serialize};

/// One change the controller made.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BudgetEvent {
    /// When, seconds since profpoint's clock origin (process start).
    pub at_s: f64,
    /// The point.
    pub point: String,
    /// Its state before: `on`, `1/N`, `count`, `off`.
    pub from: String,
    /// Its state after.
    pub to: String,
    /// Its calls per second over the round that decided it.
    pub calls_per_s: f64,
}

/// A point the budget throttled at some time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThrottledPoint {
    /// The point.
    pub point: String,
    /// Its state now: `on`, `1/N`, `count`, `burst` (`off` in older reports, which named a
    /// point in bursts by its status between them, and in reports written before bursts).
    pub now: String,
    /// The most throttled state it had.
    pub worst: String,
    /// How many times the controller changed it.
    pub changes: u32,
    /// First change, seconds since process start.
    pub first_at_s: f64,
    /// Calls per second when it was last put in bursts (0 if never).
    pub off_calls_per_s: f64,
    /// Its mean outermost call, nanoseconds, timed in the isolation windows: alone among the
    /// points the budget throttles (those nested in it off), compensated; its self time is
    /// this less its children's (`None`: not timed there on enough calls, or a report from
    /// before isolation windows).
    pub isolated_avg_ns: Option<f64>,
}

/// The budget's part of the report.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct BudgetReport {
    /// The budget, percent of the process's CPU time (`None`: off).
    pub percent: Option<f64>,
    /// Whether the controller ran in this process (a program that never called a point, a
    /// budget set off, or a forked child without a new thread has none).
    pub running: bool,
    /// Why it did not run or stopped, when something went wrong.
    pub note: Option<String>,
    /// Rounds done.
    pub rounds: u64,
    /// The cost model (measured in this process), nanoseconds per timed call.
    pub cost_timed_ns: f64,
    /// Per call that sampled timing left untimed.
    pub cost_skipped_ns: f64,
    /// Per call of a point that counts only.
    pub cost_counted_ns: f64,
    /// A timed call's cost in this program, as the bursts measured it (how much they slowed
    /// the other points' calls), nanoseconds; compensation takes it out per timed call (at
    /// least the calibration's figure, at most twice it; `None`: no burst measured it).
    pub cost_timed_in_context_ns: Option<f64>,
    /// The instrumentation's estimated cost, percent of the process's CPU time while the
    /// controller ran.
    pub cost_percent: f64,
    /// The controller thread's own CPU time, milliseconds.
    pub controller_ms: f64,
    /// Bursts done (points the budget could not even count are timed fully in one short
    /// burst a round and off between bursts), and the last burst's length, microseconds.
    pub bursts: u64,
    /// The last burst's planned length, microseconds (0 if none).
    pub burst_window_us: f64,
    /// Isolation windows run (after each burst, one class of its parents timed alone: a
    /// throttled parent's self time is made from them; see `ThrottledPoint::isolated_avg_ns`).
    #[serde(default)]
    pub isolations: u64,
    /// Points it throttled, hottest first.
    pub throttled: Vec<ThrottledPoint>,
    /// Its changes, in order (at most 1,000; the rest are counted in `events_dropped`).
    pub events: Vec<BudgetEvent>,
    /// Changes not kept in `events`.
    pub events_dropped: u64,
    /// Whether the user opted in to bursts (`PROFPOINT_BUDGET=2%,bursts`): without them the
    /// budget's last resort is to count a point's calls and time none, and every count is
    /// exact.
    #[serde(default)]
    pub bursts_allowed: bool,
    /// Counting alone cost more than the budget (`None`: it did not): the points stayed
    /// counted, every call, and this says what that cost and who made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counting_over: Option<CountingOver>,
    /// The points cost more than the budget (by more than 5% of it) for another reason than
    /// counting alone (`None`: they did not, or `counting_over` says why): how, and who.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<BudgetOver>,
    /// The wall sampler that times throttled points (`None`: it did not run: nothing was
    /// throttled, or the run used bursts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_sampler: Option<WallSampler>,
}

/// The budget's wall sampler: while points are throttled, the budget's thread reads every
/// thread's current node of the points tree once a period, and a throttled node's time is
/// its samples times the period (no signal, no timer on the program's threads).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct WallSampler {
    /// The sampling period, nanoseconds.
    pub period_ns: u64,
    /// Periods sampled (the wall time sampled is this times the period).
    pub periods: u64,
    /// Samples that found a thread inside a point (one per thread and period).
    pub samples: u64,
    /// Its own CPU time (the budget's thread while it sampled), milliseconds.
    pub own_ms: f64,
}

/// The points cost more than the budget over the run: the parts of their cost and the points
/// that made most of it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct BudgetOver {
    /// Each part of the cost (the points' steady states: `between bursts` in a run that had
    /// bursts, `in steady states` in one that had none; `in bursts`; `in count windows`; `in
    /// isolation windows`), with its share of the CPU time (percent); they add up to
    /// `cost_percent`.
    pub parts: Vec<CostPart>,
    /// The points that made most of it, hottest first (`share`: of the cost spent on points).
    pub points: Vec<CountingShare>,
    /// Why the controller could not keep the budget by throttling: how it shares the budget
    /// among the parts and the least each part costs.
    pub why: String,
}

/// One part of the points' cost.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CostPart {
    /// How the calls were made.
    pub part: String,
    /// Its share of the CPU time, percent.
    pub percent: f64,
}

/// Counting alone, every call of every point the budget manages, cost more than the budget.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CountingOver {
    /// What counting alone cost, percent of the process's CPU time (estimated from the cost
    /// model's counted call).
    pub percent: f64,
    /// Rounds in which it was over the budget.
    pub rounds: u64,
    /// The points that made most of it, hottest first.
    pub points: Vec<CountingShare>,
}

/// One point's part of a cost (counting's, or the whole cost's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CountingShare {
    /// The point.
    pub point: String,
    /// Its share of the counted calls, 0 to 1.
    pub share: f64,
}

impl BudgetReport {
    /// The section of a report made without the runtime (an `off` build's empty report).
    pub fn none() -> BudgetReport {
        BudgetReport {
            percent: None,
            running: false,
            note: None,
            rounds: 0,
            cost_timed_ns: 0.0,
            cost_skipped_ns: 0.0,
            cost_counted_ns: 0.0,
            cost_timed_in_context_ns: None,
            cost_percent: 0.0,
            controller_ms: 0.0,
            bursts: 0,
            burst_window_us: 0.0,
            isolations: 0,
            throttled: Vec::new(),
            events: Vec::new(),
            events_dropped: 0,
            bursts_allowed: false,
            counting_over: None,
            over: None,
            wall_sampler: None,
        }
    }
}
