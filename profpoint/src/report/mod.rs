//! Collecting a report: the runtime's half of the report model.
//!
//! # Concept
//! The model itself ([`Report`] and its sections) and its renderers are the
//! `profpoint-report` crate's, re-exported here and from the crate root under the same names.
//! What stays here needs the running process: the per-thread counters, the clock calibration,
//! the baseline [`crate::reset`] leaves, the samplers. Building the report is the only place
//! where raw ticks meet the clock calibration.
//!
//! # Mechanism
//! [`collect`] sums every point's per-thread slots (each read through its seqlock), subtracts
//! the baseline left by [`crate::reset`], and derives avg, self, percentiles and the share of
//! wall time. [`CollectReport`] keeps `Report::collect(&opts)` working where it is in scope.

pub use profpoint_report::*;

use crate::budget::{self, Est};
use crate::clock::{self, ClockInfo};
use crate::point::{self, Kind};
use crate::shard;
use crate::slot::Counts;
use crate::{hist, overhead};
use std::sync::Mutex;

#[cfg(feature = "heatmap")]
mod attribute;
mod tree;

use tree::{Row, tree_report};

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
/// `budget/estimate.rs`; else one stratum for the whole run).
pub(crate) fn read_all() -> Vec<(Counts, Est)> {
    let base = baseline();
    let abs: Vec<Counts> = shard::read_points(point::all().len());
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
    let now: Vec<Counts> = shard::read_points(point::all().len());
    budget::reset(&now.iter().map(Counts::scalars).collect::<Vec<_>>());
    *base = now;
    #[cfg(not(loom))]
    crate::alloc::reset();
}

/// Collects a report of every point now.
pub(crate) fn collect(opts: &ReportOptions) -> Report {
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
    let threads = shard::shards_per_point(counts.len());
    let iso = budget::isolation();
    let isolated = iso.as_ref().map(|iso| from_isolated(&counts, iso));
    let mut indexed: Vec<(usize, PointReport)> = point::all()
        .iter()
        .zip(&counts)
        .enumerate()
        .filter(|(_, (p, _))| p.kind() != Kind::Hidden)
        .map(|(i, (p, (c, est)))| {
            let mut r = point_report(p, c, est, &clock, wall_ns, sub_ticks);
            if let Some(split) = isolated.as_ref().and_then(|o| o[i])
                && r.self_ns.is_some()
            {
                let ns = |ticks: f64| clock.to_ns_f(ticks).round() as u64;
                r.total_ns = ns(split.total);
                r.self_ns = Some(ns(split.own));
                r.total_ci95_ns = interval_or_run(ns(split.ci95), r.total_ns, wall_ns);
                // Its mean call times its calls: an estimate, and marked so.
                r.estimated = true;
                r.avg_ns = ns(split.mean);
                r.wall_percent = percent(r.total_ns, wall_ns);
            }
            within_the_run(&mut r, wall_ns, threads[i]);
            (i, r)
        })
        .collect();
    // The rows of estimated points, by point index: the tree's nodes of a throttled point
    // are scaled to them (`scale_to_rows`).
    let mut rows: Vec<Option<Row>> = vec![None; counts.len()];
    for (i, r) in &indexed {
        if r.estimated {
            rows[*i] = Some(Row {
                calls: r.nr,
                total_ns: r.total_ns,
                self_ns: r.self_ns,
            });
        }
    }
    let shards = crate::shard::shard_count().max(1) as u64;
    // Read once: the tree and the budget's section agree on whether the sampler ran.
    let sampling = budget::wall::active();
    let (tree, of) = tree_report(&clock, &rows, wall_ns.saturating_mul(shards), sampling);
    rows_from_tree(&mut indexed, &tree, &of, &counts, wall_ns);
    // Memory per point, when the counting allocator is the program's (row 0: outside any
    // point; point `i` is row `i + 1`).
    #[cfg(not(loom))]
    let alloc = crate::alloc::read_since_reset();
    #[cfg(not(loom))]
    if let Some(rows) = &alloc {
        for (i, r) in indexed.iter_mut() {
            r.alloc = rows.get(*i + 1).map(crate::alloc::Sum::stats);
        }
    }
    let mut points: Vec<PointReport> = indexed.into_iter().map(|(_, r)| r).collect();
    // By total time; a figure whose 95% interval is wider than itself is not ranked as if it
    // were known: such points follow the others (`PointReport::uncertain`).
    points.sort_by(|a, b| {
        a.uncertain()
            .cmp(&b.uncertain())
            .then(b.total_ns.cmp(&a.total_ns))
            .then(a.name.cmp(&b.name))
    });
    // At exit both samplers stop before either is symbolised (that is the profiler's work).
    #[cfg(feature = "heatmap")]
    let (mut heatmap, pmu) = crate::sampling::reports(opts.final_report);
    let mut budget = budget::report(&clock, iso.as_ref());
    if !sampling {
        budget.wall_sampler = None;
    }
    #[cfg(feature = "heatmap")]
    if let Some(stacks) = heatmap.as_mut().and_then(|h| h.stacks.as_mut()) {
        through_active_points(stacks, &budget);
        // Each point's self time as the sampler saw it (`attribute::innermost_points`).
        let names: Vec<String> = points
            .iter()
            .map(|p| attribute::normalise(&p.name))
            .collect();
        for (p, n) in points
            .iter_mut()
            .zip(attribute::innermost_points(stacks, &names))
        {
            p.sampled_self = n;
        }
    }
    // The sections of a feature this build has off come from `Report::empty()` (None): the
    // model's `heatmap` feature may be on when profpoint's is off (another crate of the build,
    // such as the profpoint command, turned it on).
    let mut report = Report::empty();
    report.run = run_info();
    report.clock.source = clock.source.to_string();
    report.clock.ghz = clock.ghz();
    report.clock.calibrated_over_ns = clock.calibrated_over_ns;
    report.overhead = overhead;
    report.overhead_subtracted = opts.subtract_overhead && sub_ticks > 0.0;
    report.compensated = compensated;
    report.setup = overhead::setup(&clock);
    report.slots = crate::shard::slot_memory();
    report.wall_ns = wall_ns;
    report.points = points;
    report.tracepoints = crate::tracepoint::infos();
    report.budget = budget;
    report.tree = Some(tree);
    #[cfg(not(loom))]
    if let Some(rows) = &alloc {
        let mut a = AllocReport::default();
        a.outside = rows[0].stats();
        a.header_bytes = crate::alloc::HEADER_BYTES as u64;
        (a.tables, a.table_bytes) = crate::alloc::own_memory();
        report.alloc = Some(a);
    }
    #[cfg(feature = "heatmap")]
    {
        report.heatmap = heatmap;
        report.pmu = pmu;
    }
    report
}

/// The rows of the points whose paths the wall sampler timed (`report/tree.rs`): their total
/// is their outermost paths' (recursion counted once), their self time every path's, with a
/// 95% interval from those paths' (in quadrature), and their mean over the outermost calls.
/// A point with calls outside the tree (a full tree) has the run's wall time as its
/// interval: its total is what its paths hold, a lower bound. A point timed on every call
/// keeps its total; where a callee's time was sampled, its self time is its paths' (total
/// less children) too.
fn rows_from_tree(
    rows: &mut [(usize, PointReport)],
    tree: &PointsTree,
    of: &[usize],
    counts: &[(Counts, Est)],
    wall_ns: u64,
) {
    let n = point::all().len();
    // Per point: outermost total, self, variance, calls in the tree, whether sampled,
    // whether a path of it has a sampled child (its self time is then the tree's).
    let mut sums = vec![(0u64, 0i64, 0f64, 0u64, false, false); n];
    for node in &tree.nodes {
        if let Some(q) = node.parent.filter(|&q| q < tree.nodes.len())
            && node.sampled
        {
            sums[of[q]].5 = true;
        }
    }
    for (i, node) in tree.nodes.iter().enumerate() {
        let p = of[i];
        let mut up = node.parent;
        let mut outermost = true;
        while let Some(q) = up.filter(|&q| q < tree.nodes.len()) {
            if of[q] == p {
                outermost = false;
                break;
            }
            up = tree.nodes[q].parent.filter(|&r| r < q);
        }
        let s = &mut sums[p];
        if outermost {
            s.0 += node.total_ns;
            s.2 += (node.total_ci95_ns as f64).powi(2);
        }
        s.1 += node.self_ns.unwrap_or(0);
        s.3 += node.calls;
        s.4 |= node.sampled && node.total_ci95_ns > 0;
    }
    for (i, r) in rows.iter_mut() {
        let (total, own, var, calls, sampled, sampled_child) = sums[*i];
        if !sampled {
            // Timed on every call: its total stands, and where a callee's time was sampled
            // its self time is what the tree leaves it (its measured self time holds the
            // untimed callees' stand-ins instead), if every call is in the tree.
            if sampled_child && calls >= r.nr && r.self_ns.is_some() {
                r.self_ns = Some(own.clamp(0, r.total_ns as i64) as u64);
            }
            continue;
        }
        r.total_ns = total;
        if r.self_ns.is_some() {
            r.self_ns = Some(own.clamp(0, total as i64) as u64);
        }
        r.estimated = true;
        r.total_ci95_ns = if calls < r.nr {
            wall_ns.max(1)
        } else {
            (var.sqrt().round() as u64).max(1)
        };
        let (c, est) = &counts[*i];
        let outer = outer_calls(c, est);
        r.avg_ns = if outer > 0.0 {
            (total as f64 / outer).round() as u64
        } else {
            0
        };
        r.wall_percent = percent(r.total_ns, wall_ns);
    }
}

/// Gives each sampled stack the frame of its thread's active point where LLVM inlined that
/// point's function (`attribute.rs`). A stack's tag is the point's index in [`point::all`]
/// plus one (0: no point was active), as the shard's active-point word holds it.
///
/// A point the budget reduced to counting does not mark itself active (that is what makes
/// counting cheap), so while it is counted its samples carry the enclosing point's tag; the
/// stacks' warnings name such points.
#[cfg(feature = "heatmap")]
fn through_active_points(
    stacks: &mut heatmap::StackReport,
    budget: &profpoint_report::BudgetReport,
) {
    let all = point::all();
    let annotated = all.iter().map(|p| attribute::normalise(p.name())).collect();
    let name = |tag: u32| Some(all.get((tag as usize).checked_sub(1)?)?.name());
    let done = attribute::attribute(stacks, name, &annotated);
    if done.unplaced > 0 {
        stacks.warnings.push(format!(
            "{} samples ran under a profile point whose function has no frame of its own (inlined) \
             and no annotated caller or frame of its crate to place it after: left as sampled",
            done.unplaced
        ));
    }
    let counted: Vec<&str> = budget
        .throttled
        .iter()
        .filter(|t| t.worst == "count" || t.worst == "off")
        .map(|t| t.point.as_str())
        .collect();
    if !counted.is_empty() {
        stacks.warnings.push(format!(
            "the budget counted {} without timing for a while: meanwhile their samples carry the \
             enclosing point, so without debug information an inlined one loses its own frame \
             (build with `debug = \"line-tables-only\"` to name inlined functions from DWARF, or \
             PROFPOINT_BUDGET=off)",
            counted.join(", ")
        ));
    }
}

/// `Report::collect(&opts)`: the collection of every point as a method of the model's type,
/// which lives in `profpoint-report` (a crate that measures nothing) and so cannot have it as
/// its own.
pub trait CollectReport {
    /// Collects a report of every point now, with these options ([`snapshot`](crate::snapshot)
    /// with the default ones).
    fn collect(opts: &ReportOptions) -> Report;
}

impl CollectReport for Report {
    fn collect(opts: &ReportOptions) -> Report {
        collect(opts)
    }
}

/// Outermost calls of a point: timed, left untimed, and estimated between the budget's bursts.
fn outer_calls(c: &Counts, est: &Est) -> f64 {
    (c.timed + c.skipped) as f64 + est.unseen().0
}

/// A throttled parent's figures from its isolation windows (ticks; see [`from_isolated`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Split {
    /// Its mean outermost call timed alone, and that times its outermost calls.
    mean: f64,
    total: f64,
    /// Its self time: the total less its children's.
    own: f64,
    /// The total's 95% error bar from the spread of its windows' means.
    ci95: f64,
}

/// Each point's total and self time (ticks) from mean calls timed in isolation (`iso.means`,
/// ticks per outermost call, by point index: the overhead budget's isolation windows,
/// `budget/burst.rs` `isolate`), for the points that have one.
///
/// Its total is its mean call times its outermost calls. The bursts' estimate of the same
/// total is made of calls with every nested point timed and compensation's fixed figure taken
/// out for each: on base64's loop it read 10 ns a call of `internal_encode` (23 timed alone,
/// 23 in perf's samples of the un-annotated build) and 17-45 of `Engine::encode::inner` in
/// five runs (70-73 alone), so a self time made from the isolated means is measured against
/// a total from them too (docs/budget.md, "Totals from the isolation windows").
///
/// Its self time is that total less, for each point called inside it (`iso.edges`: who
/// called whom in the bursts' windows, when every point of the windows was on), that
/// point's calls under it (its calls times the share of its windows' calls whose caller is
/// this point) at its own mean call (isolated if it has one, else its estimated total over
/// its calls) times how much longer its calls from this caller took than its calls from all
/// of them, in the windows (a function called with long inputs from one place and short ones
/// from another: the mean over both would leave the long ones' excess in the first caller's
/// self time, gprof's error). A point called inside itself keeps its nested calls (its
/// outermost calls' times hold them). The self time lies within [0, total].
///
/// The same split as a self time measured inside each call, without its error: what the
/// children's points cost the parent's code when they are on, which compensation's fixed
/// figure per call leaves in the parent (2-6 ns a nested call at some of base64's sites).
fn from_isolated(counts: &[(Counts, Est)], iso: &budget::Isolation) -> Vec<Option<Split>> {
    let n = counts.len();
    let outer: Vec<f64> = counts.iter().map(|(c, e)| outer_calls(c, e)).collect();
    let isolated = |i: usize| iso.means.get(i).copied().flatten();
    let mean = |i: usize| match isolated(i) {
        Some(m) => m.mean,
        None => {
            let (c, e) = &counts[i];
            let (total, _, _) = e.resolve_counts(c, 0.0);
            // A call its thread was preempted in (`budget::usual_stall`) stands in the
            // point's own total, but not for its usual call, which is what the parent's calls
            // of it cost: one 10 ms preemption among 160,000 calls of a 33 ns leaf read a
            // 97 ns mean and took the whole of its parent's self time (clamped to 0).
            let (total, calls) = match budget::usual_stall(c) {
                Some(max) if outer[i] > 1.0 => ((total - max as f64).max(0.0), outer[i] - 1.0),
                _ => (total, outer[i]),
            };
            if calls > 0.0 { total / calls } else { 0.0 }
        }
    };
    let index = |point1: u32| (point1 as usize).checked_sub(1).filter(|&i| i < n);
    // Each point's calls, timed calls and their ticks in the windows, from every caller.
    let mut all = vec![[0.0; 3]; n];
    for &((_, c), e) in &iso.edges {
        if let Some(c) = index(c) {
            (0..3).for_each(|j| all[c][j] += e[j]);
        }
    }
    let mut out: Vec<Option<Split>> = (0..n)
        .map(|i| {
            isolated(i).map(|m| Split {
                mean: m.mean,
                total: m.mean * outer[i],
                own: m.mean * outer[i],
                ci95: 1.96 * m.stderr * outer[i],
            })
        })
        .collect();
    for &((p, c), e) in &iso.edges {
        if let (Some(p), Some(c)) = (index(p), index(c))
            && p != c
            && all[c][0] > 0.0
            && let Some(s) = out[p].as_mut()
        {
            // From this caller against from all (1 where either timed none).
            let longer = if e[1] > 0.0 && all[c][1] > 0.0 && all[c][2] > 0.0 {
                (e[2] / e[1]) / (all[c][2] / all[c][1])
            } else {
                1.0
            };
            s.own -= e[0] / all[c][0] * outer[c] * mean(c) * longer;
        }
    }
    for s in out.iter_mut().flatten() {
        s.own = s.own.clamp(0.0, s.total);
    }
    out
}

/// An estimated total above what the run could hold (a synchronous point's calls on one
/// thread never overlap: at most the wall time times the threads that called it, counted as
/// the shards holding its calls, `shard::shards_per_point`) is cut to
/// that bound, its self time and mean with it, and its interval widened to the bound: the
/// estimate is known to be off (a mean call priced from a few timed calls that a preemption
/// or the timing's own cost inflated), and the truth lies between 0 and the bound.
fn within_the_run(r: &mut PointReport, wall_ns: u64, threads: usize) {
    let bound = wall_ns.saturating_mul(threads.max(1) as u64);
    if !r.estimated || r.self_ns.is_none() || r.total_ns <= bound || wall_ns == 0 {
        return;
    }
    let scale = bound as f64 / r.total_ns as f64;
    r.total_ns = bound;
    r.self_ns = r.self_ns.map(|own| own.min(bound));
    r.avg_ns = (r.avg_ns as f64 * scale).round() as u64;
    r.total_ci95_ns = r.total_ci95_ns.max(bound);
    r.wall_percent = percent(bound, wall_ns);
}

fn point_report(
    p: &point::Point,
    c: &Counts,
    est: &Est,
    clock: &ClockInfo,
    wall_ns: u64,
    sub_ticks: f64,
) -> PointReport {
    // A point with calls left untimed is an estimate, timed calls or not: with none, its
    // time is unknown (0, with the run's interval below), not a measured 0.
    let estimated = est.estimated && c.nr() > 0;
    let stddev = hist::stddev(&c.hist);
    // The spread of every timed call, stalls included: the estimate counts a stratum's
    // longest stall once, but others may be scaled, and the error bar must cover them.
    let (est_total, est_self, ci95) = est.resolve_counts(c, stddev);
    let in_hist: u64 = c.hist.iter().sum();
    // Calls made between the budget's bursts, estimated (none for a point never in bursts).
    let (unseen_outer, unseen_all) = est.unseen();
    let nr_ci95 = est.unseen_ci95();
    // Outermost calls: the timed ones and those left untimed (estimated like them), less
    // the counted calls the estimate took as nested (a recursive point counted only).
    let outer = c.timed as f64 + (c.skipped as f64 - est.counted_nested).max(0.0) + unseen_outer;
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
    let mut report = PointReport::default();
    report.name = p.name().to_string();
    report.file = p.location().0.to_string();
    report.line = p.location().1;
    report.enabled = p.is_enabled();
    report.kind = match p.kind() {
        Kind::Async => "async",
        _ => "sync",
    }
    .to_string();
    report.sampling = p.sampling();
    report.estimated = estimated;
    report.nr = c.nr() + unseen_all.round() as u64;
    report.nr_ci95 = nr_ci95.map(|ci| ci.round() as u64);
    report.nr_estimated = est.count_unknown() || nr_ci95.is_some();
    report.timed = c.timed;
    report.nested = c.nested;
    report.total_ns = total_ns;
    // An async point's calls overlap and are not folded: it has no self time.
    report.self_ns = (p.kind() != Kind::Async).then(|| clock.to_ns_f(self_ticks).round() as u64);
    report.avg_ns = if c.timed == 0 {
        0
    } else {
        clock.to_ns_f(total_ticks / outer).round() as u64
    };
    report.min_ns = min_ns;
    report.max_ns = max_ns;
    report.p50_ns = clamp(q(0.50));
    report.p90_ns = clamp(q(0.90));
    report.p99_ns = clamp(q(0.99));
    report.p999_ns = clamp(q(0.999));
    report.stddev_ns = clock.to_ns_f(stddev).round() as u64;
    report.total_ci95_ns = if estimated {
        interval_or_run(clock.to_ns_f(ci95).round() as u64, total_ns, wall_ns)
    } else {
        0
    };
    report.hist = hist_ns(&c.hist, to_ns);
    // Filled from the sampler's stacks, when it ran with them (`collect`).
    report.sampled_self = None;
    // Calls made in segments only (`point/segment.rs`). Only a timed call measures its idle
    // time: where the total stands for untimed calls too (sampled), so does the idle time,
    // at the timed calls' mean (it was the timed calls' alone, N times too small at 1/N).
    report.idle_ns = if estimated && c.idle > 0 && c.timed > 0 {
        clock
            .to_ns_f(c.idle as f64 * outer / c.timed as f64)
            .round() as u64
    } else {
        clock.to_ns(c.idle)
    };
    report.wall_percent = percent(total_ns, wall_ns);
    report
}

/// An estimated total's interval (ns), `ci_ns`, or where none could be computed (0: a point
/// in bursts seen in one round, one whose calls were all left untimed, an isolated mean
/// whose windows read the same) the widest the run allows, never 0: the truth lies between 0
/// and its thread's wall time, which the figure plus its own size and the wall covers.
fn interval_or_run(ci_ns: u64, total_ns: u64, wall_ns: u64) -> u64 {
    if ci_ns > 0 {
        ci_ns
    } else {
        total_ns.max(wall_ns).max(1)
    }
}

/// `part` in percent of `wall_ns` (0 for an empty wall).
fn percent(part: u64, wall_ns: u64) -> f64 {
    if wall_ns == 0 {
        0.0
    } else {
        100.0 * part as f64 / wall_ns as f64
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

/// Reads the metadata of this process.
pub(crate) fn run_info() -> RunInfo {
    // What does not change in a process's life is read once (`/proc/cpuinfo` alone took
    // a good part of a millisecond per report here: a live server reports every scrape).
    static FIXED: std::sync::OnceLock<RunInfo> = std::sync::OnceLock::new();
    let fixed = FIXED.get_or_init(run_info_fixed);
    let mut run = fixed.clone();
    // Not fixed: a forked child reports its own id.
    run.pid = std::process::id();
    run.shards = shard::shard_count();
    run
}

/// The parts of [`run_info`] fixed for the process's life.
fn run_info_fixed() -> RunInfo {
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
    let mut run = RunInfo::default();
    run.command = command;
    run.pid = std::process::id();
    run.start_unix_ns = unix_now.saturating_sub(since_start);
    run.cpu_model = cpu_model;
    run.kernel = kernel;
    run.shards = shard::shard_count();
    run
}

#[cfg(test)]
mod tests;
