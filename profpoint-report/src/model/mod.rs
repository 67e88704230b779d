//! The report model: [`Report`] and every section it holds, plain data that serialises to the
//! JSON of `docs/report-schema.md` and reads back from it.
//!
//! Its structs are `#[non_exhaustive]`, so that a new field breaks no one: read their fields
//! freely, and build one from [`Report::empty`] or `Default`, then assign the fields you need.

use serde::{Deserialize, Serialize};

mod budget;
mod tree;
pub use budget::*;
pub use tree::*;

/// The `schema` field of every JSON report.
pub const SCHEMA: &str = "profpoint.report";
/// The `version` field: raised when a field changes meaning or disappears.
///
/// 2: an async point's `self_ns` is `null` (it has no self time); version 1 wrote its total
/// there. 3: the tree of profile points ([`Report::tree`]; `null` in older reports).
/// [`Report::from_json`] reads all three.
pub const VERSION: u32 = 3;

/// One report of a series (`PROFPOINT_REPORT_EVERY`): the calls and times of the interval since
/// the previous one, beside the totals.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interval {
    /// This report's number in the series: 1, 2, ... (the exit report is the last).
    pub seq: u64,
    /// Start of the interval: the previous report's `wall_ns` (0 for the first).
    pub from_ns: u64,
    /// End of the interval: this report's `wall_ns`.
    pub to_ns: u64,
    /// The points called in the interval, longest total first.
    pub points: Vec<IntervalPoint>,
}

/// A point's calls and time in one interval (differences of its totals).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IntervalPoint {
    /// As in [`PointReport`].
    pub name: String,
    /// As in [`PointReport`].
    pub file: String,
    /// As in [`PointReport`].
    pub line: u32,
    /// Calls completed in the interval.
    pub nr: u64,
    /// Of them, calls timed.
    pub timed: u64,
    /// Total time of the interval's timed (or, sampled, estimated) outermost calls.
    pub total_ns: u64,
    /// Its self time (`None` for an async point, which has none).
    pub self_ns: Option<u64>,
    /// `total_ns` over the interval's outermost calls (`nr` less those nested in a call of
    /// the same point): a sampled point's total stands for its untimed calls too. 0 when
    /// none was timed.
    pub avg_ns: u64,
}

impl Interval {
    /// The interval from `prev` (a report of the same process; `None`: from start-up) to `now`.
    /// Points are matched by name, file and line; a point whose call count went down (a
    /// `profpoint::reset` between the two) counts from zero. An estimated figure revised
    /// down between the two (a later stratum's mean lower) gives the interval 0, never the
    /// whole run's figure.
    pub fn between(prev: Option<&Report>, now: &Report, seq: u64) -> Interval {
        let mut before: std::collections::HashMap<(&str, &str, u32), &PointReport> =
            std::collections::HashMap::new();
        for p in prev.map(|r| r.points.as_slice()).unwrap_or_default() {
            before.insert((p.name.as_str(), p.file.as_str(), p.line), p);
        }
        let mut points: Vec<IntervalPoint> = now
            .points
            .iter()
            .filter_map(|p| {
                // Reset between the two: the call count went down.
                let b = before
                    .get(&(p.name.as_str(), p.file.as_str(), p.line))
                    .filter(|b| b.nr <= p.nr);
                let d = |f: fn(&PointReport) -> u64| match b {
                    Some(b) => f(p).saturating_sub(f(b)),
                    None => f(p),
                };
                let nr = d(|p| p.nr);
                (nr > 0).then(|| {
                    let timed = d(|p| p.timed);
                    let total_ns = d(|p| p.total_ns);
                    let outer = nr.saturating_sub(d(|p| p.nested));
                    IntervalPoint {
                        name: p.name.clone(),
                        file: p.file.clone(),
                        line: p.line,
                        nr,
                        timed,
                        total_ns,
                        self_ns: p.self_ns.map(|now| match b.and_then(|b| b.self_ns) {
                            Some(before) => now.saturating_sub(before),
                            None => now,
                        }),
                        avg_ns: if timed == 0 {
                            0
                        } else {
                            total_ns.checked_div(outer).unwrap_or(0)
                        },
                    }
                })
            })
            .collect();
        points.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        Interval {
            seq,
            from_ns: prev.map_or(0, |r| r.wall_ns),
            to_ns: now.wall_ns,
            points,
        }
    }
}

/// Everything measured, at one moment, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// Which run this is (a hand-made report may leave it out).
    #[serde(default)]
    pub run: RunInfo,
    /// The clock the points were timed with (a hand-made report may leave it out).
    #[serde(default)]
    pub clock: ClockReport,
    /// What one enabled point costs on this machine.
    pub overhead: Option<Overhead>,
    /// Whether `overhead.in_interval_ns` was subtracted from every timed call's interval.
    #[serde(default)]
    pub overhead_subtracted: bool,
    /// Whether overhead compensation was on (`profpoint::compensate`): each timed interval then
    /// excludes the point's own in-interval cost and the whole cost of the points nested in it.
    #[serde(default)]
    pub compensated: bool,
    /// profpoint's first-use work, which no interval includes.
    #[serde(default)]
    pub setup: Setup,
    /// Memory of the per-thread point slots, its cap, and the calls the cap left unrecorded.
    #[serde(default)]
    pub slots: SlotMemory,
    /// Nanoseconds from process start-up (profpoint's initialiser) to this report.
    pub wall_ns: u64,
    /// Every profile point, sorted by total time, longest first.
    pub points: Vec<PointReport>,
    /// Every tracepoint, most hits first.
    #[serde(default)]
    pub tracepoints: Vec<TracepointInfo>,
    /// The overhead budget: its setting, its cost model, what it throttled and when.
    #[serde(default)]
    pub budget: BudgetReport,
    /// What happened since the previous periodic report (`PROFPOINT_REPORT_EVERY`): `None`
    /// in a report that is not one of a series.
    pub interval: Option<Interval>,
    /// The tree of profile points: which point was active on the same thread when each call
    /// started, as exact root-to-leaf paths (version 3; `None` in older reports).
    #[serde(default)]
    pub tree: Option<PointsTree>,
    /// The heatmap sampler's top functions, when it runs under profpoint
    /// (`PROFPOINT_HEATMAP`, `profpoint::start_heatmap`).
    #[cfg(feature = "heatmap")]
    pub heatmap: Option<crate::heatmap::Report>,
    /// Per-function hardware metrics (`PROFPOINT_PMU=1`), in the exit report.
    #[cfg(feature = "heatmap")]
    pub pmu: Option<crate::heatmap::pmu::PmuReport>,
    /// Memory per point, when the program's global allocator is profpoint's counting wrapper
    /// (`profpoint::Alloc`): the allocations outside any point and the wrapper's cost;
    /// absent (and every point's `alloc` too) otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<AllocReport>,
}

/// One point's allocations, as the counting allocator saw them (or those outside any point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AllocStats {
    /// Allocations made while this was the innermost active point on the thread
    /// (`alloc`, `alloc_zeroed`, and each `realloc`).
    pub allocs: u64,
    /// Their bytes (a `realloc`'s new size).
    pub alloc_bytes: u64,
    /// Frees made while this was the innermost active point (`dealloc`, and each `realloc`).
    pub frees: u64,
    /// Their bytes (a `realloc`'s old size).
    pub freed_bytes: u64,
    /// Reallocations among the above (each one allocation and one free).
    pub reallocs: u64,
    /// Bytes of the blocks this point made (a `realloc` keeps a block's point) that no thread
    /// has freed: freed elsewhere, a block leaves the point that made it.
    pub held_bytes: u64,
    /// Those blocks.
    pub held_blocks: u64,
}

/// The counting allocator's section of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AllocReport {
    /// Allocations made while no point was active on the thread (a thread's before its first
    /// point call too).
    pub outside: AllocStats,
    /// The header each block carries (the bytes the wrapper adds to a block of alignment up
    /// to this; a block of larger alignment carries its alignment).
    pub header_bytes: u64,
    /// The wrapper's own tables of counters (one per thread, one per point each), taken from
    /// the wrapped allocator and counted in no row: how many.
    #[serde(default)]
    pub tables: u64,
    /// Their bytes.
    #[serde(default)]
    pub table_bytes: u64,
}

/// What the report says of slot memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SlotMemory {
    /// Bytes of per-point slots allocated, every thread (overflow slots not included).
    pub bytes: u64,
    /// The cap (`PROFPOINT_MAX_SLOT_MB`, default 512 MiB).
    pub cap_bytes: u64,
    /// Whether the cap was reached.
    pub cap_reached: bool,
    /// Calls made into points whose slot the cap refused: counted, in no point's row.
    pub unrecorded_calls: u64,
}

/// Metadata of the measured run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunInfo {
    /// The command line (`/proc/self/cmdline`).
    pub command: Vec<String>,
    /// Process id.
    pub pid: u32,
    /// Process start-up time, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Number of per-thread counter shards made: the peak number of threads that used points
    /// at the same time.
    pub shards: usize,
}

/// The clock, as calibrated for this report.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClockReport {
    /// `"tsc"` (x86_64), `"cntvct"` (aarch64's virtual counter) or `"monotonic"`.
    pub source: String,
    /// Tick frequency in GHz (1.0 for the monotonic clock, whose ticks are nanoseconds).
    pub ghz: f64,
    /// Length of the calibration against `CLOCK_MONOTONIC`, nanoseconds.
    pub calibrated_over_ns: u64,
}

/// One profile point's numbers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PointReport {
    /// The point's name.
    pub name: String,
    /// Source file of its definition.
    pub file: String,
    /// Source line of its definition.
    pub line: u32,
    /// Status: on (timing) or off.
    pub enabled: bool,
    /// `"sync"` (recursion folded, self time tracked) or `"async"` (first poll to completion,
    /// not folded).
    pub kind: String,
    /// `Some(n)` when the point times one call in about `n`; `Some(0)` when it counts every
    /// call and times none.
    pub sampling: Option<u32>,
    /// Whether `total_ns`, `self_ns` and the percentiles are estimates from sampled timing.
    pub estimated: bool,
    /// Calls completed (all of them, recursive and untimed ones included). For a point the
    /// overhead budget times in bursts, the calls between bursts are estimated (from each
    /// burst's calls and its share of the round) and `estimated` is true.
    pub nr: u64,
    /// When `nr` holds calls estimated between bursts: the half-width of its 95% confidence
    /// interval (`nr` plus or minus this); `None` when every call was counted (`nr` is exact,
    /// as it is for every point the user did not put in bursts).
    #[serde(default)]
    pub nr_ci95: Option<u64>,
    /// Whether `nr` holds calls estimated between bursts, or is only a lower bound: calls
    /// went unseen in bursts and too few count windows saw a call to tell how many
    /// (`nr_ci95` is then `None`).
    /// False: `nr` is exact.
    #[serde(default)]
    pub nr_estimated: bool,
    /// Calls whose interval is in `total_ns` (outermost and timed).
    pub timed: u64,
    /// Calls re-entered while the point was already active on the thread (recursion): counted
    /// in `nr`, not in `total_ns`.
    pub nested: u64,
    /// Total time of the outermost calls, nanoseconds.
    pub total_ns: u64,
    /// Time not spent in other points nested inside this one, nanoseconds; `None` for an async
    /// point (calls overlap and are not folded: it has no self time).
    pub self_ns: Option<u64>,
    /// `total_ns` over the outermost calls it stands for: the timed ones and, for a sampled
    /// or estimated point, those left untimed (0 when none was timed).
    pub avg_ns: u64,
    /// Shortest timed call.
    pub min_ns: u64,
    /// Longest timed call.
    pub max_ns: u64,
    /// Median timed call (within about 2%).
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Standard deviation of the timed calls (from the distribution, within about 2%).
    #[serde(default)]
    pub stddev_ns: u64,
    /// `total_ns` as a percentage of the process's wall time.
    pub wall_percent: f64,
    /// When `total_ns` is an estimate: the half-width of its 95% confidence interval
    /// (`total_ns` plus or minus this), nanoseconds; 0 when every call was timed.
    #[serde(default)]
    pub total_ci95_ns: u64,
    /// The latency distribution of the timed calls: `[value_ns, calls]` for every non-empty
    /// histogram bucket, ascending, `value_ns` the bucket's midpoint (within about 2% of every
    /// call it holds). What `profpoint compare` ranks: outliers cannot move a rank test.
    #[serde(default)]
    pub hist: Vec<[u64; 2]>,
    /// Samples of the sampler's stacks (`PROFPOINT_STACKS`) whose innermost annotated frame is
    /// this point's function: its self time as a sampler sees it, with none of the per-call
    /// cost of timed points that compensation leaves in their callers. `None` without stacks,
    /// for a point no frame names (a scope, or a function never sampled), and for points whose
    /// names read the same once generic arguments and trait paths go (which one ran is not
    /// known).
    #[serde(default)]
    pub sampled_self: Option<u64>,
    /// Idle time of its calls, nanoseconds: for a call made in segments (a `tracing` span over
    /// a future, entered on every poll), the time between its segments, alive but not
    /// entered (waiting to be polled again); `total_ns` is their busy time. Estimated with
    /// it (`estimated`): the timed calls' idle time at their mean for every call. 0 for every
    /// other point (and in reports written before this field).
    #[serde(default)]
    pub idle_ns: u64,
    /// Its allocations (self: while it was the innermost active point), when the program's
    /// global allocator is the counting wrapper; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<AllocStats>,
}

impl PointReport {
    /// Whether its total is an estimate whose 95% interval is wider than the total itself:
    /// the figure does not tell its order among the others (reports and tables rank such
    /// points after the rest, and the table marks them `?`).
    pub fn uncertain(&self) -> bool {
        self.estimated && self.total_ci95_ns > self.total_ns
    }
}

/// What `profpoint::tracepoints` reports of one tracepoint.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TracepointInfo {
    /// `module::path::name`.
    pub name: String,
    /// Whether the site's key is on (the hook runs when the site executes).
    pub enabled: bool,
    /// Registered probes (the counting probe not included).
    pub probes: u32,
    /// Whether the built-in counting probe is on.
    pub counting: bool,
    /// Times the hook ran (the site executed while enabled, its condition true).
    pub hits: u64,
    /// Why the key could not be switched on (probes then not registered) or off (the site
    /// then keeps calling the hook), if the system refused the last switch.
    pub error: Option<String>,
    /// Times one of its probes (or its condition) panicked (each caught; the program went on).
    #[serde(default)]
    pub probe_panics: u64,
    /// Where it is declared.
    pub file: String,
    /// Line of the declaration.
    pub line: u32,
}

/// The cost of an enabled point, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Overhead {
    /// Wall time of one enabled call's instrumentation (an annotated call minus the same call
    /// bare, best of 7 rounds of 5,000).
    pub per_call_ns: f64,
    /// The part of it that a point's own interval includes (median).
    pub in_interval_ns: f64,
}

/// profpoint's first-use work (a thread's first point call, a point's first call on a
/// thread: a shard, a slot), which no interval includes: profpoint's own cost, not the
/// program's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Setup {
    /// Time spent in it, nanoseconds.
    pub ns: f64,
    /// How many calls did it.
    pub calls: u64,
}

impl Report {
    /// A report of nothing: what `profpoint::snapshot` returns in an `off` build (no clock, no
    /// point, no process metadata read).
    pub fn empty() -> Report {
        Report {
            schema: SCHEMA.to_string(),
            version: VERSION,
            run: RunInfo {
                command: Vec::new(),
                pid: std::process::id(),
                start_unix_ns: 0,
                cpu_model: String::new(),
                kernel: String::new(),
                shards: 0,
            },
            clock: ClockReport {
                source: "none".to_string(),
                ghz: 0.0,
                calibrated_over_ns: 0,
            },
            overhead: None,
            overhead_subtracted: false,
            compensated: false,
            setup: Setup { ns: 0.0, calls: 0 },
            slots: SlotMemory {
                bytes: 0,
                cap_bytes: 0,
                cap_reached: false,
                unrecorded_calls: 0,
            },
            wall_ns: 0,
            tree: None,
            points: Vec::new(),
            tracepoints: Vec::new(),
            budget: BudgetReport::none(),
            interval: None,
            #[cfg(feature = "heatmap")]
            heatmap: None,
            #[cfg(feature = "heatmap")]
            pmu: None,
            alloc: None,
        }
    }

    /// The report as one JSON object (see `docs/report-schema.md`).
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        profpoint_json::to_string_pretty(self).expect("a report serialises to JSON")
    }

    /// Writes the JSON form ([`Report::to_json`]'s bytes) to `w` in pieces, without holding
    /// the whole text in memory.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        profpoint_json::to_writer_pretty(w, self)
    }
}

/// A point of one timed 10 ns call at `src/db.rs:line`, for the renderers' tests.
#[cfg(test)]
pub(crate) fn test_point(name: &str, line: u32) -> PointReport {
    PointReport {
        name: name.to_string(),
        file: "src/db.rs".into(),
        line,
        enabled: true,
        kind: "sync".into(),
        sampling: None,
        estimated: false,
        nr: 1,
        nr_ci95: None,
        nr_estimated: false,
        timed: 1,
        nested: 0,
        total_ns: 10,
        self_ns: Some(10),
        avg_ns: 10,
        min_ns: 10,
        max_ns: 10,
        p50_ns: 10,
        p90_ns: 10,
        p99_ns: 10,
        p999_ns: 10,
        stddev_ns: 10,
        wall_percent: 0.0,
        total_ci95_ns: 0,
        hist: vec![[10, 1]],
        sampled_self: None,
        idle_ns: 0,
        alloc: None,
    }
}

#[cfg(test)]
mod interval_tests {
    use super::*;

    fn point(nr: u64, timed: u64, nested: u64, total_ns: u64) -> PointReport {
        PointReport {
            name: "p".into(),
            nr,
            timed,
            nested,
            total_ns,
            self_ns: Some(total_ns),
            ..Default::default()
        }
    }

    fn report(p: PointReport) -> Report {
        let mut r = Report::empty();
        r.points = vec![p];
        r
    }

    /// A point sampled 1 in 64: 6,400 calls in the interval, 100 timed, its total estimated
    /// over all of them: its mean call is the total over 6,400, not over 100 (64 times too
    /// high, above its longest call).
    #[test]
    fn a_sampled_point_s_mean_is_over_every_call_its_total_stands_for() {
        let before = report(point(6_400, 100, 0, 640_000));
        let now = report(point(12_800, 200, 0, 1_280_000));
        let i = Interval::between(Some(&before), &now, 2);
        let p = &i.points[0];
        assert_eq!((p.nr, p.timed, p.total_ns), (6_400, 100, 640_000));
        assert_eq!(p.avg_ns, 100);
        // Recursive calls are not outermost: the mean is over the outermost ones.
        let before = report(point(0, 0, 0, 0));
        let now = report(point(300, 300, 200, 100_000));
        assert_eq!(
            Interval::between(Some(&before), &now, 1).points[0].avg_ns,
            1_000
        );
    }

    /// An estimated total revised down between two reports (no reset: the calls went up)
    /// gives the interval 0, not the whole run's total; a reset (the calls went down) counts
    /// from zero.
    #[test]
    fn a_total_revised_down_is_not_taken_for_a_reset() {
        let before = report(point(1_000, 10, 0, 5_000_000));
        let now = report(point(1_100, 11, 0, 4_900_000));
        let p = &Interval::between(Some(&before), &now, 2).points[0];
        assert_eq!((p.nr, p.total_ns, p.self_ns), (100, 0, Some(0)));
        let after_reset = report(point(50, 5, 0, 250_000));
        let p = &Interval::between(Some(&now), &after_reset, 3).points[0];
        assert_eq!((p.nr, p.total_ns), (50, 250_000));
    }
}
