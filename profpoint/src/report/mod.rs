//! The one report model: every exporter (table, JSON, CSV, and later pprof, Prometheus, SVG)
//! reads a [`Report`], and nothing else.
//!
//! # Concept
//! A report is a point-in-time copy of everything profpoint measured, already converted to
//! nanoseconds and percentiles, plus the run's metadata. Building it is the only place where
//! raw ticks meet the clock calibration. Exporters are pure functions of it, so they agree with
//! each other by construction and can be tested on hand-made reports.
//!
//! # Mechanism
//! [`Report::collect`] sums every point's per-thread slots (each read through its seqlock),
//! subtracts the baseline left by [`crate::reset`], and derives avg, self, percentiles and the
//! share of wall time. The JSON form is the serde serialisation of [`Report`], written by
//! `profpoint-json` (serde_json's format, without serde_json's trait impls reaching users),
//! versioned by [`SCHEMA`] and [`VERSION`]; `docs/report-schema.md` documents it.
//!
//! # Extending
//! A new section (tracepoints, heatmap, hardware metrics) is a field of [`Report`] filled in
//! `collect` and rendered by each exporter; bump [`VERSION`] only for changes that break readers
//! (new fields do not).

mod csv;
mod pprof;
pub(crate) mod prometheus;
mod svg;
mod table;

pub use table::write_table;

use crate::budget::{self, Est};
use crate::clock::{self, ClockInfo};
use crate::point::{self, Kind};
use crate::shard::{self, Counts};
use crate::{hist, overhead};
use serde::Serialize;
use std::sync::Mutex;

/// The `schema` field of every JSON report.
pub const SCHEMA: &str = "profpoint.report";
/// The `version` field: raised when a field changes meaning or disappears.
pub const VERSION: u32 = 1;

/// One report of a series (`PROFPOINT_REPORT_EVERY`): the calls and times of the interval since
/// the previous one, beside the totals.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct IntervalPoint {
    /// As in [`PointReport`].
    pub name: String,
    /// As in [`PointReport`].
    pub file: &'static str,
    /// As in [`PointReport`].
    pub line: u32,
    /// Calls completed in the interval.
    pub nr: u64,
    /// Of them, calls timed.
    pub timed: u64,
    /// Total time of the interval's timed (or, sampled, estimated) outermost calls.
    pub total_ns: u64,
    /// Its self time.
    pub self_ns: u64,
    /// `total_ns / timed` (0 when none was timed).
    pub avg_ns: u64,
}

impl Interval {
    /// The interval from `prev` (a report of the same process; `None`: from start-up) to `now`.
    /// Points are matched by name, file and line; a counter that went down (a
    /// [`crate::reset`] between the two) counts from zero.
    pub fn between(prev: Option<&Report>, now: &Report, seq: u64) -> Interval {
        let mut before: std::collections::HashMap<(&str, &str, u32), &PointReport> =
            std::collections::HashMap::new();
        for p in prev.map(|r| r.points.as_slice()).unwrap_or_default() {
            before.insert((p.name.as_str(), p.file, p.line), p);
        }
        let mut points: Vec<IntervalPoint> = now
            .points
            .iter()
            .filter_map(|p| {
                let d = |f: fn(&PointReport) -> u64| match before.get(&(
                    p.name.as_str(),
                    p.file,
                    p.line,
                )) {
                    Some(b) if f(b) <= f(p) => f(p) - f(b),
                    _ => f(p),
                };
                let nr = d(|p| p.nr);
                (nr > 0).then(|| {
                    let timed = d(|p| p.timed);
                    let total_ns = d(|p| p.total_ns);
                    IntervalPoint {
                        name: p.name.clone(),
                        file: p.file,
                        line: p.line,
                        nr,
                        timed,
                        total_ns,
                        self_ns: d(|p| p.self_ns),
                        avg_ns: total_ns.checked_div(timed).unwrap_or(0),
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
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// Always [`VERSION`].
    pub version: u32,
    /// Which run this is.
    pub run: RunInfo,
    /// The clock the points were timed with.
    pub clock: ClockReport,
    /// What one enabled point costs on this machine.
    pub overhead: Option<overhead::Overhead>,
    /// Whether `overhead.in_interval_ns` was subtracted from every timed call's interval.
    pub overhead_subtracted: bool,
    /// Whether overhead compensation was on ([`crate::compensate`]): each timed interval then
    /// excludes the point's own in-interval cost and the whole cost of the points nested in it.
    pub compensated: bool,
    /// profpoint's first-use work, which no interval includes.
    pub setup: overhead::Setup,
    /// Memory of the per-thread point slots, its cap, and the calls the cap left unrecorded.
    pub slots: SlotMemory,
    /// Nanoseconds from process start-up (profpoint's initialiser) to this report.
    pub wall_ns: u64,
    /// Every profile point, sorted by total time, longest first.
    pub points: Vec<PointReport>,
    /// Every tracepoint, most hits first.
    pub tracepoints: Vec<crate::tracepoint::TracepointInfo>,
    /// The overhead budget: its setting, its cost model, what it throttled and when.
    pub budget: budget::BudgetReport,
    /// What happened since the previous periodic report (`PROFPOINT_REPORT_EVERY`): `None`
    /// in a report that is not one of a series.
    pub interval: Option<Interval>,
    /// The heatmap sampler's top functions, when it runs under profpoint
    /// (`PROFPOINT_HEATMAP`, [`crate::start_heatmap`]).
    #[cfg(feature = "heatmap")]
    pub heatmap: Option<heatmap::Report>,
    /// Per-function hardware metrics (`PROFPOINT_PMU=1`), in the exit report.
    #[cfg(feature = "heatmap")]
    pub pmu: Option<heatmap::pmu::PmuReport>,
}

/// What the report says of slot memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct ClockReport {
    /// `"tsc"` (x86_64), `"cntvct"` (aarch64's virtual counter) or `"monotonic"`.
    pub source: &'static str,
    /// Tick frequency in GHz (1.0 for the monotonic clock, whose ticks are nanoseconds).
    pub ghz: f64,
    /// Length of the calibration against `CLOCK_MONOTONIC`, nanoseconds.
    pub calibrated_over_ns: u64,
}

/// One profile point's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointReport {
    /// The point's name.
    pub name: String,
    /// Source file of its definition.
    pub file: &'static str,
    /// Source line of its definition.
    pub line: u32,
    /// Status: on (timing) or off.
    pub enabled: bool,
    /// `"sync"` (recursion folded, self time tracked) or `"async"` (first poll to completion,
    /// not folded).
    pub kind: &'static str,
    /// `Some(n)` when the point times one call in about `n`; `Some(0)` when it counts every
    /// call and times none.
    pub sampling: Option<u32>,
    /// Whether `total_ns`, `self_ns` and the percentiles are estimates from sampled timing.
    pub estimated: bool,
    /// Calls completed (all of them, recursive and untimed ones included). For a point the
    /// overhead budget times in bursts, the calls between bursts are estimated (from each
    /// burst's calls and its share of the round) and `estimated` is true.
    pub nr: u64,
    /// Calls whose interval is in `total_ns` (outermost and timed).
    pub timed: u64,
    /// Calls re-entered while the point was already active on the thread (recursion): counted
    /// in `nr`, not in `total_ns`.
    pub nested: u64,
    /// Total time of the outermost calls, nanoseconds.
    pub total_ns: u64,
    /// Time not spent in other points nested inside this one, nanoseconds.
    pub self_ns: u64,
    /// `total_ns / timed`.
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
    pub stddev_ns: u64,
    /// `total_ns` as a percentage of the process's wall time.
    pub wall_percent: f64,
    /// When `total_ns` is an estimate: the half-width of its 95% confidence interval
    /// (`total_ns` plus or minus this), nanoseconds; 0 when every call was timed.
    pub total_ci95_ns: u64,
    /// The latency distribution of the timed calls: `[value_ns, calls]` for every non-empty
    /// histogram bucket, ascending, `value_ns` the bucket's midpoint (within about 2% of every
    /// call it holds). What `profpoint compare` ranks: outliers cannot move a rank test.
    pub hist: Vec<[u64; 2]>,
}

/// How to build a report.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Subtract the measured in-interval overhead from every timed call.
    pub subtract_overhead: bool,
    /// This is the exit report: stop the samplers and report their final profiles.
    pub final_report: bool,
}

/// Counts left by [`crate::reset`], subtracted from later reports (index = point index).
static BASELINE: Mutex<Vec<Counts>> = Mutex::new(Vec::new());

fn baseline() -> std::sync::MutexGuard<'static, Vec<Counts>> {
    // Each update replaces the whole vector, so a poisoned lock holds a consistent value.
    BASELINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Current counts of every point (raw ticks) minus the reset baseline, each with its estimated
/// totals (stratified by the overhead budget's rounds when its controller runs: see
/// `budget.rs`; else one stratum for the whole run).
pub(crate) fn read_all() -> Vec<(Counts, Est)> {
    let base = baseline();
    let abs: Vec<Counts> = (0..point::all().len()).map(shard::read_point).collect();
    let scalars: Vec<_> = abs.iter().map(Counts::scalars).collect();
    let ests = budget::estimates(&scalars);
    abs.into_iter()
        .enumerate()
        .map(|(i, c)| {
            let c = match base.get(i) {
                Some(b) => c.since(b),
                None => c,
            };
            let est = match &ests {
                Some(e) => e[i],
                None => {
                    let mut e = Est::default();
                    e.fold(&c.scalars());
                    e
                }
            };
            (c, est)
        })
        .collect()
}

/// Makes the current counts the new zero (see [`crate::reset`]).
pub(crate) fn reset_counts() {
    let mut base = baseline();
    let now: Vec<Counts> = (0..point::all().len()).map(shard::read_point).collect();
    budget::reset(&now.iter().map(Counts::scalars).collect::<Vec<_>>());
    *base = now;
}

impl Report {
    /// A report of nothing: what [`crate::snapshot`] returns in an `off` build (no clock, no
    /// point, no process metadata read).
    pub fn empty() -> Report {
        Report {
            schema: SCHEMA,
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
                source: "none",
                ghz: 0.0,
                calibrated_over_ns: 0,
            },
            overhead: None,
            overhead_subtracted: false,
            compensated: false,
            setup: overhead::Setup { ns: 0.0, calls: 0 },
            slots: SlotMemory {
                bytes: 0,
                cap_bytes: 0,
                cap_reached: false,
                unrecorded_calls: 0,
            },
            wall_ns: 0,
            points: Vec::new(),
            tracepoints: Vec::new(),
            budget: budget::BudgetReport::none(),
            interval: None,
            #[cfg(feature = "heatmap")]
            heatmap: None,
            #[cfg(feature = "heatmap")]
            pmu: None,
        }
    }

    /// Collects a report of every point now.
    pub fn collect(opts: &ReportOptions) -> Report {
        let clock = clock::info();
        let (t0, _) = clock::origin();
        let wall_ns = clock.to_ns(clock::now().saturating_sub(t0));
        let overhead = overhead::get(&clock);
        // Compensated intervals already exclude the in-interval cost: not subtracted twice.
        let compensated = overhead::compensating();
        let sub_ticks = match (&overhead, opts.subtract_overhead && !compensated) {
            (Some(o), true) => clock.to_ticks(o.in_interval_ns),
            _ => 0.0,
        };
        let counts = read_all();
        let mut points: Vec<PointReport> = point::all()
            .iter()
            .zip(&counts)
            .filter(|(p, _)| p.kind() != Kind::Hidden)
            .map(|(p, (c, est))| point_report(p, c, est, &clock, wall_ns, sub_ticks))
            .collect();
        points.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        // At exit both samplers stop before either is symbolised (that is the profiler's work).
        #[cfg(feature = "heatmap")]
        let (heatmap, pmu) = crate::sampling::reports(opts.final_report);
        Report {
            schema: SCHEMA,
            version: VERSION,
            run: RunInfo::read(),
            clock: ClockReport {
                source: clock.source,
                ghz: clock.ghz(),
                calibrated_over_ns: clock.calibrated_over_ns,
            },
            overhead,
            overhead_subtracted: opts.subtract_overhead && sub_ticks > 0.0,
            compensated,
            setup: overhead::setup(&clock),
            slots: crate::shard::slot_memory(),
            wall_ns,
            points,
            tracepoints: crate::tracepoint::infos(),
            budget: budget::report(&clock),
            interval: None,
            #[cfg(feature = "heatmap")]
            heatmap,
            #[cfg(feature = "heatmap")]
            pmu,
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

    /// The points as CSV: a header row, then one row per point.
    pub fn to_csv(&self) -> String {
        csv::points_csv(self)
    }

    /// The report in the Prometheus text format: calls and time counters, latency summaries,
    /// tracepoint hits, one series per point (label `point`).
    pub fn to_prometheus(&self) -> String {
        prometheus::render(self)
    }

    /// The points as a pprof profile (protobuf, uncompressed): calls, self and total time per
    /// point, for `go tool pprof` and other pprof viewers.
    pub fn to_pprof(&self) -> Vec<u8> {
        pprof::render(self)
    }

    /// The points as a self-contained SVG bar chart (total and self time per point).
    pub fn to_svg(&self) -> String {
        svg::render(self)
    }

    /// The seed's table, with the extra columns; see [`write_table`].
    pub fn to_table(&self) -> String {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        write_table(self, &mut out).expect("writing to memory");
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn point_report(
    p: &point::Point,
    c: &Counts,
    est: &Est,
    clock: &ClockInfo,
    wall_ns: u64,
    sub_ticks: f64,
) -> PointReport {
    let estimated = est.estimated && c.timed > 0;
    let stddev = hist::stddev(&c.hist);
    // The spread of every timed call, stalls included: the estimate counts a stratum's
    // longest stall once, but others may be scaled, and the error bar must cover them.
    let (est_total, est_self, ci95) = est.resolve(c.timed, c.total, stddev);
    let in_hist: u64 = c.hist.iter().sum();
    // Calls made between the budget's bursts, estimated (none for a point never in bursts).
    let (unseen_outer, unseen_all) = est.unseen();
    // Outermost calls: the timed ones and those left untimed (estimated like them).
    let outer = (c.timed + c.skipped) as f64 + unseen_outer;
    let total_ticks = (est_total - sub_ticks * outer).max(0.0);
    let self_ticks = (est_self - sub_ticks * outer).max(0.0);
    let to_ns = |ticks: f64| clock.to_ns_f((ticks - sub_ticks).max(0.0)).round() as u64;
    let q = |quant: f64| to_ns(hist::quantile(&c.hist, in_hist, quant));
    let total_ns = clock.to_ns_f(total_ticks).round() as u64;
    let (min_ns, max_ns) = if c.timed == 0 {
        (0, 0)
    } else {
        (to_ns(c.min as f64), to_ns(c.max as f64))
    };
    let clamp = |v: u64| v.clamp(min_ns, max_ns.max(min_ns));
    PointReport {
        name: p.name().to_string(),
        file: p.location().0,
        line: p.location().1,
        enabled: p.is_enabled(),
        kind: match p.kind() {
            Kind::Async => "async",
            _ => "sync",
        },
        sampling: p.sampling(),
        estimated,
        nr: c.nr() + unseen_all.round() as u64,
        timed: c.timed,
        nested: c.nested,
        total_ns,
        self_ns: clock.to_ns_f(self_ticks).round() as u64,
        avg_ns: if c.timed == 0 {
            0
        } else {
            clock.to_ns_f(total_ticks / outer).round() as u64
        },
        min_ns,
        max_ns,
        p50_ns: clamp(q(0.50)),
        p90_ns: clamp(q(0.90)),
        p99_ns: clamp(q(0.99)),
        p999_ns: clamp(q(0.999)),
        stddev_ns: clock.to_ns_f(stddev).round() as u64,
        total_ci95_ns: if estimated {
            clock.to_ns_f(ci95).round() as u64
        } else {
            0
        },
        hist: hist_ns(&c.hist, to_ns),
        wall_percent: if wall_ns == 0 {
            0.0
        } else {
            100.0 * total_ns as f64 / wall_ns as f64
        },
    }
}

/// The non-empty buckets of `counts` as `[value_ns, calls]`, ascending; buckets whose
/// midpoints round to the same nanosecond are merged (`to_ns` never decreases). Most of the
/// 1,408 buckets are empty: blocks of 16 are skipped with one test (half the time of a test
/// per bucket, for every point of every report).
fn hist_ns(counts: &[u64], to_ns: impl Fn(f64) -> u64) -> Vec<[u64; 2]> {
    const BLOCK: usize = 16;
    let mut out: Vec<[u64; 2]> = Vec::with_capacity(32);
    for (b, block) in counts.chunks(BLOCK).enumerate() {
        if block.iter().fold(0, |any, &c| any | c) == 0 {
            continue;
        }
        for (j, &c) in block.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (lo, hi) = hist::bounds(b * BLOCK + j);
            let mid = if hi - lo == 1 {
                lo as f64
            } else {
                (lo + hi) as f64 / 2.0
            };
            let v = to_ns(mid);
            match out.last_mut() {
                Some(last) if last[0] == v => last[1] += c,
                _ => out.push([v, c]),
            }
        }
    }
    out
}

impl RunInfo {
    /// Reads the metadata of this process.
    pub fn read() -> RunInfo {
        // What does not change in a process's life is read once (`/proc/cpuinfo` alone took
        // a good part of a millisecond per report here: a live server reports every scrape).
        static FIXED: std::sync::OnceLock<RunInfo> = std::sync::OnceLock::new();
        let fixed = FIXED.get_or_init(RunInfo::read_fixed);
        RunInfo {
            // Not fixed: a forked child reports its own id.
            pid: std::process::id(),
            shards: shard::shard_count(),
            ..fixed.clone()
        }
    }

    /// The parts of [`RunInfo::read`] fixed for the process's life.
    fn read_fixed() -> RunInfo {
        let command = std::fs::read("/proc/self/cmdline")
            .map(|b| {
                b.split(|&c| c == 0)
                    .filter(|s| !s.is_empty())
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect()
            })
            .unwrap_or_else(|_| std::env::args().collect());
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let unix_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let since_start = clock::monotonic_ns().saturating_sub(clock::origin().1);
        RunInfo {
            command,
            pid: std::process::id(),
            start_unix_ns: unix_now.saturating_sub(since_start),
            cpu_model,
            kernel,
            shards: shard::shard_count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: reproducible values for the report's float fields.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A float of the kinds reports hold: percentages, ratios, rates, seconds, and now and then
    /// an edge (zero, integral, tiny, huge, not finite).
    fn float(state: &mut u64) -> f64 {
        let r = next(state);
        match r % 8 {
            0 => {
                [0.0, 100.0, 1e-7, 1e300, f64::NAN, f64::INFINITY, -0.0, 2.5][(r >> 8) as usize % 8]
            }
            1 => f64::from_bits(next(state)),
            _ => (r >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((r % 7) as i32 * 2 - 4),
        }
    }

    /// The JSON report is exactly what serde_json writes for it (it was written by serde_json
    /// before profpoint-json replaced it; readers of the schema see no change).
    #[test]
    fn json_is_what_serde_json_writes() {
        let mut state = 0x1234_5678_9abc_def0;
        let mut report = crate::snapshot();
        for round in 0..50 {
            let s = &mut state;
            report.clock.ghz = float(s);
            report.overhead = (round % 2 == 0).then(|| overhead::Overhead {
                per_call_ns: float(s),
                in_interval_ns: float(s),
            });
            report.run.command = vec!["prog".into(), "--name=\"a b\"\n\t\u{1}é🦀".into()];
            report.points.push(PointReport {
                name: format!("crate::f{round}<\"T\">"),
                file: "src/\\lib.rs",
                line: round,
                enabled: round % 3 == 0,
                kind: "sync",
                sampling: (round % 2 == 1).then_some(round),
                estimated: round % 2 == 1,
                nr: next(s),
                timed: next(s) >> 3,
                nested: 0,
                total_ns: u64::MAX,
                self_ns: next(s) % 1000,
                avg_ns: 1,
                min_ns: 0,
                max_ns: next(s),
                p50_ns: 5,
                p90_ns: 9,
                p99_ns: 99,
                p999_ns: 999,
                stddev_ns: 3,
                wall_percent: float(s),
                total_ci95_ns: next(s) % 7,
                hist: vec![[5, next(s) % 9], [u64::MAX, 1]],
            });
            report.tracepoints.push(crate::tracepoint::TracepointInfo {
                name: format!("net::rx{round}"),
                enabled: true,
                probes: 2,
                counting: false,
                hits: next(s),
                error: (round % 4 == 0).then(|| "W^X: \"mprotect\" failed".to_string()),
                probe_panics: round as u64 % 3,
                file: "x.rs",
                line: 7,
            });
            #[cfg(feature = "heatmap")]
            {
                report.heatmap = Some(heatmap::Report {
                    source: "perf task-clock".into(),
                    mode: "cpu".into(),
                    by: heatmap::By::Function,
                    bucket_size: 16,
                    requested_hz: 997,
                    achieved_hz: (round % 2 == 0).then(|| float(s)),
                    achieved_hz_per_cpu_second: Some(float(s)),
                    user_cpu_seconds: float(s),
                    sys_cpu_seconds: float(s),
                    wall_seconds: float(s),
                    total_samples: next(s),
                    other: 1,
                    proc_samples: 0,
                    excluded: 2,
                    base: 3,
                    warnings: vec!["throttled\n".into()],
                    rows: vec![heatmap::Row {
                        address: next(s),
                        function: "<alloc::vec::Vec<T> as Drop>::drop".into(),
                        library: Some("libc.so.6".into()),
                        nr: 70,
                        percent: float(s),
                        location: None,
                        inlined: vec!["a".into(), "b".into()],
                    }],
                });
                let mut calibration = heatmap::pmu::Calibration {
                    windows: 40,
                    ..Default::default()
                };
                calibration.fixed.iter_mut().for_each(|f| *f = float(s));
                report.pmu = Some(heatmap::pmu::PmuReport {
                    method: heatmap::pmu::Method::UniformLongPeriod,
                    windows: 10,
                    discarded: 1,
                    overlong: 0,
                    long_period: 10_000_000,
                    window: 3_000,
                    calibration,
                    events: vec![
                        heatmap::pmu::Event::TaskClock,
                        heatmap::pmu::Event::PageFaults,
                    ],
                    warnings: vec![],
                    rows: vec![heatmap::pmu::PmuRow {
                        symbol: "f".into(),
                        windows: 3,
                        cpi: Some(float(s)),
                        bm_per_ki: None,
                        cm_per_ki: Some(float(s)),
                        cm_percent: Some(float(s)),
                        clock_percent: float(s),
                        instructions_percent: None,
                        branch_misses_percent: Some(float(s)),
                        page_faults_per_ms: Some(float(s)),
                        l1d_reads_percent: None,
                        l1d_misses_percent: Some(float(s)),
                    }],
                });
            }
            assert_eq!(
                report.to_json(),
                serde_json::to_string_pretty(&report).unwrap()
            );
        }
    }
}
