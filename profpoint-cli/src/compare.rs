//! `profpoint compare`: each point's latency distribution, base runs against new runs.

use crate::input::load;
use crate::stats::{self, Dist};
use profpoint_report::{PointReport as Point, Report as Run};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub(crate) const HELP: &str = "\
Compares each profile point's latency distribution between two runs (JSON reports written with
PROFPOINT_REPORT=json:PATH), or between two sets of repeated runs, and flags the points that
got slower or faster. Points are matched by name.

One run a side: the calls of a point in one run are ranked against its calls in the other
(Mann-Whitney U test over the latency histograms the reports hold, ties corrected). A few long
calls (a preemption, a page fault) move a mean a lot, but only a few ranks: not the verdict.
Calls within a run are not independent samples, so a run counts as at most 1,000 calls.
This test sees how calls vary within a run, not how a whole run varies from the next (CPU
frequency, memory layout, other load): --threshold is the guard against that, and repeated
runs measure it.

Repeated runs (BASE... -- NEW...): each run gives one number per point, its median call; the
two sides' medians are compared by Welch's t test on their logarithms (Student's t
distribution, Welch-Satterthwaite degrees of freedom; with a single run on one side, the
other side's spread stands for both). This measures run-to-run noise. With 2 runs a side only
a large change can be significant; 5 or more a side see small ones.

A point is flagged SLOWER (or faster) when its p-value is below the false-alarm rate and its
median moved by at least the threshold, in the same direction as the test's. The p50 columns
are the median call, interpolated within its histogram bucket (with repeated runs, the
geometric mean of the runs' medians); the p99 columns the reports' p99 (likewise); the change is
the change of the median. '~ (under the threshold)': the test tells the two apart, but the
median moved less than the threshold; '~ (within noise)': the test does not tell them apart.
A point in the base runs only reads 'only in base' (and 'only in new' the other way); reports
of different programs (by their command lines, or with no point in common) or from different
CPU models get a warning line on stderr. A report without histograms (written by an older
profpoint) has its distributions rebuilt from its percentiles, with a note.

Two forms: profpoint compare BASE.json NEW.json, and for repeated runs
profpoint compare BASE1.json BASE2.json... -- NEW1.json NEW2.json...; the options may also
follow the new reports.

Tracepoint hits (counts, no test) are listed after the points. Exit status: 0; 1 with
--fail-on-regression and a point flagged SLOWER; 2 for bad arguments or a report that cannot be
read.";

/// `profpoint compare`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    /// The base report and the new one; with repeated runs, the base reports (the new ones
    /// follow --)
    #[arg(value_name = "BASE.json", required = true)]
    base: Vec<PathBuf>,
    /// The new reports of repeated runs
    #[arg(value_name = "NEW.json", last = true)]
    new: Vec<PathBuf>,
    /// False-alarm rate, above 0 and at most 0.5. Within a run: the chance of flagging a point
    /// whose calls in both runs come from one distribution. Across repeated runs: the chance
    /// of flagging a point whose per-run medians come from one distribution, run-to-run noise
    /// included. It holds for the whole comparison, not per point: the p-values are adjusted
    /// (Holm) over the points tested, and the p column shows them adjusted, so with 100 points
    /// the chance that any is falsely flagged stays under A
    #[arg(long, value_name = "A", default_value_t = 0.01, value_parser = alpha)]
    alpha: f64,
    /// No adjustment: A is each point's own false-alarm rate (with N points tested, about
    /// A x N false flags are to be expected)
    #[arg(long)]
    alpha_per_point: bool,
    /// The least change of the median that is flagged, percent. A change under it is
    /// reported, never flagged: on one machine two runs of one program differ by a few percent
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = threshold)]
    threshold: f64,
    /// Exit status 1 when a point is flagged SLOWER
    #[arg(long)]
    fail_on_regression: bool,
}

/// The command line with compare's options moved before its `--`: they may follow the new
/// reports (`compare B1 B2 -- N1 N2 --fail-on-regression`, as before clap), where clap would
/// take them for files. Only compare's own options move; anything else stays where it is.
pub(crate) fn options_first(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    if args.get(1).is_none_or(|a| a != "compare") {
        return args;
    }
    let Some(split) = args.iter().position(|a| a == "--") else {
        return args;
    };
    let (mut head, mut moved, mut files) = (args[..split].to_vec(), Vec::new(), Vec::new());
    let mut rest = args[split + 1..].iter();
    while let Some(a) = rest.next() {
        let s = a.to_string_lossy();
        let name = s.split_once('=').map_or(&*s, |(n, _)| n);
        match name {
            "--alpha-per-point" | "--fail-on-regression" => moved.push(a.clone()),
            "--alpha" | "--threshold" => {
                moved.push(a.clone());
                if !s.contains('=')
                    && let Some(v) = rest.next()
                {
                    moved.push(v.clone());
                }
            }
            _ => files.push(a.clone()),
        }
    }
    head.extend(moved);
    head.push("--".into());
    head.extend(files);
    head
}

/// `--alpha`: above 0, at most 0.5.
fn alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a <= 0.5 => Ok(a),
        _ => Err("expected a false-alarm rate above 0 and at most 0.5, such as 0.01".into()),
    }
}

/// `--threshold`: 0 to 1000 percent.
fn threshold(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if (0.0..=1000.0).contains(&t) => Ok(t),
        _ => Err("expected a percentage from 0 to 1000, such as 5".into()),
    }
}

/// compare's settings.
#[derive(Debug, Clone, Copy)]
struct Options {
    alpha: f64,
    per_point: bool,
    threshold_pct: f64,
    gate: bool,
}

/// A point's numbers on one side: one entry per run that has it.
struct Side<'r> {
    points: Vec<&'r Point>,
}

impl Side<'_> {
    /// The runs that timed the point.
    fn timed(&self) -> impl Iterator<Item = &&Point> {
        self.points.iter().filter(|p| p.timed > 0)
    }

    /// The logarithm of each timed run's median call (interpolated in its histogram, kept
    /// between the run's shortest call and its p99: interpolated within a bucket, a run of
    /// one call had a median above its p99 and its maximum).
    fn log_medians(&self) -> Vec<f64> {
        self.timed()
            .map(|p| {
                ln(median_within(
                    p,
                    dist(p).median().unwrap_or(p.p50_ns as f64),
                ))
            })
            .collect()
    }

    /// The geometric mean of `logs`: the one run's value with one run.
    fn typical(logs: &[f64]) -> Option<f64> {
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    }

    /// The typical p99 of the runs that timed the point.
    fn p99(&self) -> Option<f64> {
        Side::typical(
            &self
                .timed()
                .map(|p| ln(p.p99_ns as f64))
                .collect::<Vec<_>>(),
        )
    }
}

/// `median` kept within the run's own figures: at least its shortest call, at most its p99
/// (and its longest).
fn median_within(p: &Point, median: f64) -> f64 {
    let hi = p.p99_ns.min(p.max_ns).max(p.min_ns) as f64;
    median.clamp(p.min_ns as f64, hi)
}

/// The logarithm used for medians: 1 ns is the floor (a point whose overhead subtraction left
/// 0 ns).
fn ln(ns: f64) -> f64 {
    ns.max(1.0).ln()
}

/// A point's distribution in one run: its histogram, or, in a report written before the
/// histogram was added, one rebuilt from its percentiles.
fn dist(p: &Point) -> Dist {
    if !p.hist.is_empty() {
        return Dist::from_pairs(&p.hist);
    }
    let known = [
        (0.0, p.min_ns),
        (0.5, p.p50_ns),
        (0.9, p.p90_ns),
        (0.99, p.p99_ns),
        (0.999, p.p999_ns),
        (1.0, p.max_ns),
    ];
    Dist::from_quantiles(p.timed, &known)
}

/// What the comparison found for one point.
enum Row {
    /// Tested: the change of the median (a ratio minus 1), the direction the test saw (+1
    /// slower, -1 faster, 0 none) and the raw p-value (adjusted later).
    Tested { change: f64, direction: f64, p: f64 },
    /// On both sides, but not testable; the reason.
    Untested(&'static str),
    /// In the base runs only, or in the new runs only.
    OnlyIn(&'static str),
}

/// The program a report measured: the file name of its command's first word.
fn program(run: &Run) -> Option<String> {
    let first = run.run.command.first()?;
    let name = std::path::Path::new(first).file_name()?;
    Some(name.to_string_lossy().into_owned())
}

/// The distinct values of `f` over `runs`, sorted.
fn distinct(runs: &[Run], f: fn(&Run) -> Option<String>) -> Vec<String> {
    let mut v: Vec<String> = runs.iter().filter_map(f).collect();
    v.sort();
    v.dedup();
    v
}

/// The warning for reports from different CPU models, if they are: their times differ by the
/// machine as much as by the code.
fn different_cpus(base: &[Run], new: &[Run]) -> Option<String> {
    let cpu = |r: &Run| Some(r.run.cpu_model.trim().to_string()).filter(|c| !c.is_empty());
    let (a, b) = (distinct(base, cpu), distinct(new, cpu));
    let mut all: Vec<&String> = a.iter().chain(&b).collect();
    all.sort();
    all.dedup();
    (all.len() > 1).then(|| {
        format!(
            "the reports come from different CPUs (base: {}; new: {}): a change may be the machine's",
            a.join(", "),
            b.join(", ")
        )
    })
}

/// The warning for reports of different programs, if they are.
fn different_programs(base: &[Run], new: &[Run], common: usize) -> Option<String> {
    let (a, b) = (distinct(base, program), distinct(new, program));
    let mut all: Vec<&String> = a.iter().chain(&b).collect();
    all.sort();
    all.dedup();
    let has_points = |runs: &[Run]| runs.iter().any(|r| !r.points.is_empty());
    if all.len() > 1 {
        Some(format!(
            "the reports are of different programs (base: {}; new: {}): points are matched by name only",
            a.join(", "),
            b.join(", ")
        ))
    } else if common == 0 && has_points(base) && has_points(new) {
        Some(
            "base and new have no point in common: they look like reports of two different programs"
                .to_string(),
        )
    } else {
        None
    }
}

/// An error writing the table (a closed pipe: `profpoint compare a b | head`).
fn write_error(e: std::io::Error) -> String {
    format!("cannot write the table to stdout: {e}")
}

/// A run's points by name (the first of equal names).
fn index(r: &Run) -> HashMap<&str, &Point> {
    let mut m: HashMap<&str, &Point> = HashMap::with_capacity(r.points.len());
    for p in &r.points {
        m.entry(p.name.as_str()).or_insert(p);
    }
    m
}

/// The point `name` in each run of a side that has it.
fn side<'r>(ix: &[HashMap<&str, &'r Point>], name: &str) -> Side<'r> {
    Side {
        points: ix.iter().filter_map(|m| m.get(name).copied()).collect(),
    }
}

pub(crate) fn compare(args: CompareArgs) -> Result<ExitCode, String> {
    let o = Options {
        alpha: args.alpha,
        per_point: args.alpha_per_point,
        threshold_pct: args.threshold,
        gate: args.fail_on_regression,
    };
    // BASE NEW, or BASE... -- NEW... for repeated runs.
    let mut paths = args.base;
    let split = if !args.new.is_empty() {
        paths.len()
    } else if paths.len() == 2 {
        1
    } else {
        return Err(format!(
            "compare: expected two JSON reports (base, new), or several of each separated by --; got {} (profpoint compare --help)",
            paths.len()
        ));
    };
    paths.extend(args.new);
    // Reading a large report is most of compare's time: the files are read side by side, as
    // many at once as there are cores (the first error in argument order is the one reported).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut runs: Vec<Run> = Vec::with_capacity(paths.len());
    for batch in paths.chunks(cores) {
        let read: Vec<Result<Run, String>> = std::thread::scope(|s| {
            let readers: Vec<_> = batch.iter().map(|p| s.spawn(move || load(p))).collect();
            readers
                .into_iter()
                .map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        for r in read {
            runs.push(r?);
        }
    }
    let new: Vec<Run> = runs.split_off(split);
    let base = runs;
    let single = base.len() == 1 && new.len() == 1;

    let base_ix: Vec<HashMap<&str, &Point>> = base.iter().map(index).collect();
    let new_ix: Vec<HashMap<&str, &Point>> = new.iter().map(index).collect();
    // Names in the order the new runs list them (longest total first), then the base runs'.
    let mut names: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for p in new.iter().chain(&base).flat_map(|r| &r.points) {
        if seen.insert(p.name.as_str()) {
            names.push(&p.name);
        }
    }
    let common = names
        .iter()
        .filter(|n| {
            base_ix.iter().any(|m| m.contains_key(*n)) && new_ix.iter().any(|m| m.contains_key(*n))
        })
        .count();
    for w in [
        different_programs(&base, &new, common),
        different_cpus(&base, &new),
    ]
    .into_iter()
    .flatten()
    {
        crate::output::say(&format!("warning: {w}"));
    }
    for (path, run) in paths.iter().zip(base.iter().chain(&new)) {
        if run.points.iter().any(|p| p.timed > 0 && p.hist.is_empty()) {
            crate::output::say(&format!(
                "note: {} has no latency histograms (written before reports held them): its distributions are rebuilt from its percentiles, so the test is approximate",
                path.display()
            ));
        }
    }

    let mut rows: Vec<(&str, Side, Side, Row)> = Vec::new();
    let mut never_called = 0;
    for name in names {
        let (a, b) = (side(&base_ix, name), side(&new_ix, name));
        if a.timed().count() + b.timed().count() == 0
            && a.points.iter().chain(&b.points).all(|p| p.nr == 0)
        {
            never_called += 1;
            continue;
        }
        let row = if a.points.is_empty() {
            Row::OnlyIn("only in new")
        } else if b.points.is_empty() {
            Row::OnlyIn("only in base")
        } else if a.timed().count() == 0 {
            Row::Untested("? (no timed call in base)")
        } else if b.timed().count() == 0 {
            Row::Untested("? (no timed call in new)")
        } else if single {
            let (da, db) = (dist(a.points[0]), dist(b.points[0]));
            match stats::rank_test(&da, &db) {
                Some(t) => Row::Tested {
                    change: (ln(db.median().unwrap_or(0.0)) - ln(da.median().unwrap_or(0.0))).exp()
                        - 1.0,
                    direction: (t.prob_slower - 0.5).signum() * f64::from(t.prob_slower != 0.5),
                    p: t.p,
                },
                None => Row::Untested("? (fewer than 10 timed calls a side)"),
            }
        } else {
            match stats::runs_test(&a.log_medians(), &b.log_medians()) {
                Some((diff, p)) => Row::Tested {
                    change: diff.exp() - 1.0,
                    direction: diff.signum() * f64::from(diff != 0.0),
                    p,
                },
                None => Row::Untested("? (too few runs timed it: 3 in all needed)"),
            }
        };
        rows.push((name, a, b, row));
    }

    // The p-values, adjusted over every point tested.
    let raw: Vec<f64> = rows
        .iter()
        .filter_map(|r| match r.3 {
            Row::Tested { p, .. } => Some(p),
            _ => None,
        })
        .collect();
    let tested = raw.len();
    let adjusted = if o.per_point {
        raw.clone()
    } else {
        stats::holm(&raw)
    };

    // One buffered writer: a report of 10,000 points is 10,000 lines.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let how = if o.per_point {
        format!("p per point; flagged when p < {}", o.alpha)
    } else {
        format!(
            "p Holm-adjusted over the {tested} point{} tested; flagged when p < {}",
            if tested == 1 { "" } else { "s" },
            o.alpha
        )
    };
    if single {
        writeln!(
            out,
            "base {}, new {}: each point's calls ranked against each other (Mann-Whitney U over the latency histograms, ties corrected, at most {} calls a run counted)\n{how} and the median moved by at least {}%",
            paths[0].display(),
            paths[1].display(),
            stats::N_CAP,
            o.threshold_pct
        ).map_err(write_error)?;
    } else {
        writeln!(
            out,
            "{} base and {} new runs: each run's median call per point, Welch's t test on their logarithms (Student's t, Welch-Satterthwaite degrees of freedom)\n{how} and the median moved by at least {}%",
            base.len(),
            new.len(),
            o.threshold_pct
        ).map_err(write_error)?;
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(16);
    writeln!(
        out,
        "{:<w$}  {:>12}  {:>12}  {:>9}  {:>12}  {:>12}  {:>8}  verdict",
        "name", "base p50.ns", "new p50.ns", "change", "base p99.ns", "new p99.ns", "p"
    )
    .map_err(write_error)?;
    let num = |x: Option<f64>| match x {
        Some(v) if v.is_finite() => format!("{v:.0}"),
        _ => "-".to_string(),
    };
    let mut regressions = 0;
    let mut adjusted = adjusted.into_iter();
    for (name, a, b, row) in &rows {
        let (change, p, verdict) = match *row {
            Row::OnlyIn(why) | Row::Untested(why) => {
                (String::new(), String::new(), why.to_string())
            }
            Row::Tested {
                change, direction, ..
            } => {
                let p = adjusted.next().unwrap_or(1.0);
                let pct = 100.0 * change;
                let significant = p < o.alpha;
                let verdict = if significant && direction > 0.0 && pct >= o.threshold_pct {
                    regressions += 1;
                    "SLOWER"
                } else if significant && direction < 0.0 && -pct >= o.threshold_pct {
                    "faster"
                } else if significant {
                    "~ (under the threshold)"
                } else {
                    "~ (within noise)"
                };
                let change = if pct.is_finite() {
                    format!("{pct:+.1}%")
                } else {
                    "-".to_string()
                };
                let p = if p < 0.0001 {
                    "<0.0001".to_string()
                } else {
                    format!("{p:.4}")
                };
                (change, p, verdict.to_string())
            }
        };
        writeln!(
            out,
            "{name:<w$}  {:>12}  {:>12}  {change:>9}  {:>12}  {:>12}  {p:>8}  {verdict}",
            num(Side::typical(&a.log_medians())),
            num(Side::typical(&b.log_medians())),
            num(a.p99()),
            num(b.p99()),
        )
        .map_err(write_error)?;
    }
    if never_called > 0 {
        writeln!(
            out,
            "({never_called} points never called in any run are not listed)"
        )
        .map_err(write_error)?;
    }
    compare_tracepoints(&mut out, &base, &new).map_err(write_error)?;
    out.flush().map_err(write_error)?;
    if o.gate && regressions > 0 {
        crate::output::say(&format!("{regressions} point(s) significantly slower"));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Tracepoint hits, base against new (mean over the runs of each side): counts, not times, so
/// no noise test; printed when either side has a tracepoint that fired.
fn compare_tracepoints(out: &mut impl Write, base: &[Run], new: &[Run]) -> std::io::Result<()> {
    let mut names: Vec<&str> = Vec::new();
    for t in new.iter().chain(base).flat_map(|r| &r.tracepoints) {
        if t.hits > 0 && !names.contains(&t.name.as_str()) {
            names.push(&t.name);
        }
    }
    if names.is_empty() {
        return Ok(());
    }
    let mean_hits = |runs: &[Run], name: &str| {
        runs.iter()
            .map(|r| {
                r.tracepoints
                    .iter()
                    .find(|t| t.name == name)
                    .map_or(0.0, |t| t.hits as f64)
            })
            .sum::<f64>()
            / runs.len() as f64
    };
    let w = names.iter().map(|n| n.len()).max().unwrap_or(4).max(16);
    writeln!(out, "\ntracepoint hits (mean per run)")?;
    writeln!(
        out,
        "{:<w$}  {:>12}  {:>12}  {:>9}",
        "name", "base", "new", "change"
    )?;
    for name in names {
        let (a, b) = (mean_hits(base, name), mean_hits(new, name));
        let change = if a == 0.0 {
            "new".to_string()
        } else {
            format!("{:+.1}%", 100.0 * (b - a) / a)
        };
        writeln!(out, "{name:<w$}  {a:>12.0}  {b:>12.0}  {change:>9}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One call of 27,671 ns, its histogram's bucket a little wider: the median stays at or
    /// under the p99 and the longest call, at or over the shortest.
    #[test]
    fn a_median_stays_within_the_run_s_own_figures() {
        let p: Point = serde_json::from_str(
            r#"{"name":"f","file":"f.rs","line":1,"enabled":true,"kind":"sync",
                "sampling":null,"estimated":false,"nr":1,"timed":1,"nested":0,
                "total_ns":27671,"self_ns":27671,"avg_ns":27671,"min_ns":27671,
                "max_ns":27671,"p50_ns":27671,"p90_ns":27671,"p99_ns":27671,
                "p999_ns":27671,"stddev_ns":0,"wall_percent":1.0,"total_ci95_ns":0,
                "hist":[[27904,1]],"sampled_self":null}"#,
        )
        .unwrap();
        let median = dist(&p).median().unwrap();
        assert_eq!(median_within(&p, median), 27_671.0);
        let side = Side { points: vec![&p] };
        let p50 = Side::typical(&side.log_medians()).unwrap();
        let p99 = side.p99().unwrap();
        assert!(p50 <= p99 + 1e-6, "p50 {p50} above p99 {p99}");
    }
}
