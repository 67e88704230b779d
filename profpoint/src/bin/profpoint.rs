//! The `profpoint` command: reads JSON reports (`PROFPOINT_REPORT=json:PATH`).
//!
//! ```text
//! profpoint report RUN.json [--top N]
//! profpoint compare BASE.json NEW.json [--threshold PCT] [--fail-on-regression]
//! profpoint compare BASE1.json BASE2.json ... -- NEW1.json NEW2.json ...
//! ```
//!
//! `compare` matches points by name (the first of equal names) and, for each, tests whether
//! the mean time per call moved by more than the noise: Welch's t statistic on the two runs'
//! means, standard deviations and call counts (all in the reports; the count capped at 1,000
//! per run, since calls within a run are not independent). A change counts when |t| exceeds 4
//! (latency distributions have heavy tails, so the usual 2 would flag noise) *and* the mean
//! moved by more than the threshold (default 2%). With one report per side the test sees
//! within-run variation only; give several reports per side (repeated runs, separated by
//! `--`) and it tests the per-run means against each other: run-to-run noise. With `--fail-on-regression` the exit status is 1 when
//! any point got significantly slower: a benchmark harness can gate on it. Tracepoint hits
//! (counts, no noise test) are listed after the points.

use serde::Deserialize;
use std::process::ExitCode;

/// The parts of a report this command reads (other fields are ignored).
#[derive(Debug, Deserialize)]
struct Run {
    schema: String,
    version: u32,
    wall_ns: u64,
    points: Vec<Point>,
    #[serde(default)]
    tracepoints: Vec<Tracepoint>,
    #[serde(default)]
    heatmap: Option<Heatmap>,
    #[serde(default)]
    pmu: Option<Pmu>,
}

#[derive(Debug, Deserialize)]
struct Tracepoint {
    name: String,
    enabled: bool,
    probes: u64,
    counting: bool,
    hits: u64,
}

#[derive(Debug, Deserialize)]
struct Heatmap {
    source: String,
    total_samples: u64,
    requested_hz: u64,
    rows: Vec<HeatRow>,
}

#[derive(Debug, Deserialize)]
struct HeatRow {
    function: String,
    nr: u64,
    percent: f64,
}

#[derive(Debug, Deserialize)]
struct Pmu {
    events: Vec<String>,
    windows: u64,
    rows: Vec<PmuRow>,
}

#[derive(Debug, Deserialize)]
struct PmuRow {
    symbol: String,
    windows: u64,
    clock_percent: f64,
    cpi: Option<f64>,
    bm_per_ki: Option<f64>,
    cm_per_ki: Option<f64>,
    page_faults_per_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Point {
    name: String,
    nr: u64,
    timed: u64,
    total_ns: u64,
    avg_ns: u64,
    p50_ns: u64,
    p99_ns: u64,
    #[serde(default)]
    stddev_ns: u64,
    #[serde(default)]
    estimated: bool,
}

const USAGE: &str = "usage: profpoint report RUN.json [--top N]\n       profpoint compare BASE.json NEW.json [--threshold PCT] [--fail-on-regression]\n       profpoint compare BASE.json... -- NEW.json... [--threshold PCT] [--fail-on-regression]";

fn load(path: &str) -> Result<Run, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: cannot read it: {e}"))?;
    let run: Run = profpoint_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{path}: not a profpoint JSON report ({e}); write one with PROFPOINT_REPORT=json:{path}"
        )
    })?;
    if run.schema != "profpoint.report" {
        return Err(format!(
            "{path}: schema {:?}, expected \"profpoint.report\"",
            run.schema
        ));
    }
    if run.version != 1 {
        return Err(format!(
            "{path}: report version {}, this command reads version 1",
            run.version
        ));
    }
    Ok(run)
}

/// Parses a `--flag VALUE` number.
fn number<T: std::str::FromStr>(
    args: &mut impl Iterator<Item = String>,
    flag: &str,
    what: &str,
) -> Result<T, String> {
    let v = args
        .next()
        .ok_or_else(|| format!("{flag}: expected {what} after it"))?;
    v.parse()
        .map_err(|_| format!("{flag} {v:?}: expected {what}"))
}

fn report(args: Vec<String>) -> Result<ExitCode, String> {
    let mut it = args.into_iter();
    let mut path = None;
    let mut top = usize::MAX;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--top" => top = number(&mut it, "--top", "a number of rows")?,
            _ if a.starts_with('-') => {
                return Err(format!("unknown option {a:?}: expected --top N\n{USAGE}"));
            }
            _ if path.is_none() => path = Some(a),
            _ => return Err(format!("unexpected argument {a:?}\n{USAGE}")),
        }
    }
    let path = path.ok_or_else(|| format!("report: expected a JSON report\n{USAGE}"))?;
    let run = load(&path)?;
    let w = run
        .points
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(4)
        .max(16);
    println!(
        "{path}: {} points, wall {:.3} s",
        run.points.len(),
        run.wall_ns as f64 / 1e9
    );
    println!(
        "{:<w$}  {:>15}  {:>12}  {:>10}  {:>10}  {:>10}",
        "name", "total(s)", "nr", "avg.ns", "p50.ns", "p99.ns"
    );
    for p in run.points.iter().take(top) {
        println!(
            "{:<w$}  {:>15.9}  {:>12}  {:>10}  {:>10}  {:>10}",
            format!("{}{}", p.name, if p.estimated { " ~" } else { "" }),
            p.total_ns as f64 / 1e9,
            p.nr,
            p.avg_ns,
            p.p50_ns,
            p.p99_ns
        );
    }
    print_sections(&run, top);
    Ok(ExitCode::SUCCESS)
}

/// Tracepoint hits, base against new (mean over the runs of each side): counts, not times, so
/// no noise test; printed when either side has a tracepoint that fired.
fn compare_tracepoints(base: &[Run], new: &[Run]) {
    let mut names: Vec<&str> = Vec::new();
    for t in new.iter().chain(base).flat_map(|r| &r.tracepoints) {
        if t.hits > 0 && !names.contains(&t.name.as_str()) {
            names.push(&t.name);
        }
    }
    if names.is_empty() {
        return;
    }
    let mean_hits = |runs: &[Run], name: &str| {
        runs.iter()
            .map(|r| {
                r.tracepoints
                    .iter()
                    .find(|t| t.name == name)
                    .map_or(0, |t| t.hits)
            })
            .sum::<u64>() as f64
            / runs.len() as f64
    };
    let w = names.iter().map(|n| n.len()).max().unwrap_or(4).max(16);
    println!("\ntracepoint hits (mean per run)");
    println!(
        "{:<w$}  {:>12}  {:>12}  {:>9}",
        "name", "base", "new", "change"
    );
    for name in names {
        let (a, b) = (mean_hits(base, name), mean_hits(new, name));
        let change = if a == 0.0 {
            "new".to_string()
        } else {
            format!("{:+.1}%", 100.0 * (b - a) / a)
        };
        println!("{name:<w$}  {a:>12.0}  {b:>12.0}  {change:>9}");
    }
}

/// The report's other sections, where present: tracepoints, the heatmap, per-function metrics.
fn print_sections(run: &Run, top: usize) {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    if !run.tracepoints.is_empty() {
        let w = run
            .tracepoints
            .iter()
            .map(|t| t.name.len())
            .max()
            .unwrap_or(4)
            .max(16);
        println!("\ntracepoints: {}", run.tracepoints.len());
        println!(
            "{:<w$}  {:>8}  {:>6}  {:>8}  {:>12}",
            "name", "enabled", "probes", "counting", "hits"
        );
        for t in run.tracepoints.iter().take(top) {
            println!(
                "{:<w$}  {:>8}  {:>6}  {:>8}  {:>12}",
                t.name, t.enabled, t.probes, t.counting, t.hits
            );
        }
    }
    if let Some(h) = &run.heatmap {
        let w = h
            .rows
            .iter()
            .map(|r| r.function.len())
            .max()
            .unwrap_or(8)
            .clamp(8, 80);
        println!(
            "\nheatmap: {} samples, source {}, {} Hz requested",
            h.total_samples, h.source, h.requested_hz
        );
        println!("{:<w$}  {:>10}  {:>7}", "function", "samples", "%");
        for r in h.rows.iter().take(top) {
            let name: String = r.function.chars().take(w).collect();
            println!("{name:<w$}  {:>10}  {:>7.2}", r.nr, r.percent);
        }
    }
    if let Some(p) = &run.pmu {
        let w = p
            .rows
            .iter()
            .map(|r| r.symbol.len())
            .max()
            .unwrap_or(8)
            .clamp(8, 80);
        println!(
            "\nper-function metrics: {} windows, events {}",
            p.windows,
            p.events.join(", ")
        );
        println!(
            "{:<w$}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}",
            "symbol", "windows", "%clock", "CPI", "BM/KI", "CM/KI", "PF/ms"
        );
        for r in p.rows.iter().take(top) {
            let name: String = r.symbol.chars().take(w).collect();
            println!(
                "{name:<w$}  {:>7}  {:>7.2}  {:>7}  {:>7}  {:>7}  {:>7}",
                r.windows,
                r.clock_percent,
                opt(r.cpi),
                opt(r.bm_per_ki),
                opt(r.cm_per_ki),
                opt(r.page_faults_per_ms)
            );
        }
    }
}

/// The verdict on one point's change of mean time per call.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    Faster,
    Slower,
    Noise,
    /// Too few timed calls on a side for a test.
    Unknown,
}

/// |t| a change must exceed (see the module docs).
const T_CRITICAL: f64 = 4.0;

/// The most calls a run counts as independent samples. Calls within one run are not
/// independent (frequency, cache and layout effects are shared), so with millions of calls
/// the standard error would shrink to nothing and every change beyond the threshold would
/// look significant; capping n keeps run-level noise in the test. For a real run-to-run noise
/// estimate, compare repeated runs.
const N_CAP: f64 = 1_000.0;

/// Mean time per timed call, from the total (finer than the rounded `avg_ns`).
fn mean(p: &Point) -> f64 {
    p.total_ns as f64 / p.timed.max(1) as f64
}

/// Welch's t for means `ma`, `mb` whose squared standard errors are `ea`, `eb`, and the
/// verdict on the change: significant when |t| exceeds [`T_CRITICAL`] and the change exceeds
/// `threshold_pct`.
fn welch(ma: f64, ea: f64, mb: f64, eb: f64, threshold_pct: f64) -> (f64, Verdict) {
    let se = (ea + eb).sqrt();
    let t = if se > 0.0 {
        (mb - ma) / se
    } else if mb == ma {
        0.0
    } else {
        f64::INFINITY.copysign(mb - ma)
    };
    let change = 100.0 * (mb - ma) / ma;
    let verdict = if t.abs() <= T_CRITICAL || change.abs() <= threshold_pct {
        Verdict::Noise
    } else if change > 0.0 {
        Verdict::Slower
    } else {
        Verdict::Faster
    };
    (t, verdict)
}

/// The within-run test: each side's mean, per-call standard deviation and calls.
fn test(a: &Point, b: &Point, threshold_pct: f64) -> (f64, Verdict) {
    // Too few calls, or a report without `stddev_ns` (older writers): no test possible.
    if a.timed < 2 || b.timed < 2 || a.total_ns == 0 || (a.stddev_ns == 0 && b.stddev_ns == 0) {
        return (0.0, Verdict::Unknown);
    }
    let e = |p: &Point| (p.stddev_ns as f64).powi(2) / (p.timed as f64).min(N_CAP);
    welch(mean(a), e(a), mean(b), e(b), threshold_pct)
}

/// The across-runs test: each run contributes its mean time per call of the point.
fn test_runs(a: &[f64], b: &[f64], threshold_pct: f64) -> (f64, Verdict) {
    if a.len() < 2 || b.len() < 2 {
        return (0.0, Verdict::Unknown);
    }
    // Mean, and the squared standard error of the mean.
    let stats = |x: &[f64]| {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, var / n)
    };
    let ((ma, ea), (mb, eb)) = (stats(a), stats(b));
    if ma == 0.0 {
        return (0.0, Verdict::Unknown);
    }
    welch(ma, ea, mb, eb, threshold_pct)
}

fn compare(args: Vec<String>) -> Result<ExitCode, String> {
    let mut it = args.into_iter();
    let mut paths = Vec::new();
    let mut split = None;
    let mut threshold = 2.0;
    let mut gate = false;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--threshold" => {
                threshold = number(&mut it, "--threshold", "a percentage such as 2.5")?;
                if !(0.0..=1000.0).contains(&threshold) {
                    return Err(format!(
                        "--threshold {threshold}: expected a percentage from 0 to 1000"
                    ));
                }
            }
            "--fail-on-regression" => gate = true,
            "--" => split = Some(paths.len()),
            _ if a.starts_with('-') => {
                return Err(format!(
                    "unknown option {a:?}: expected --threshold PCT or --fail-on-regression\n{USAGE}"
                ));
            }
            _ => paths.push(a),
        }
    }
    // BASE NEW, or BASE... -- NEW... for repeated runs.
    let split = match split {
        Some(k) => k,
        None if paths.len() == 2 => 1,
        None => {
            return Err(format!(
                "compare: expected two JSON reports (base, new), or several of each separated by --; got {}\n{USAGE}",
                paths.len()
            ));
        }
    };
    if split == 0 || split == paths.len() {
        return Err(format!(
            "compare: expected at least one report on each side of --\n{USAGE}"
        ));
    }
    let base: Vec<Run> = paths[..split]
        .iter()
        .map(|p| load(p))
        .collect::<Result<_, _>>()?;
    let new: Vec<Run> = paths[split..]
        .iter()
        .map(|p| load(p))
        .collect::<Result<_, _>>()?;
    let single = base.len() == 1 && new.len() == 1;
    let names: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for p in new.iter().chain(&base).flat_map(|r| &r.points) {
            if !v.contains(&p.name.as_str()) {
                v.push(&p.name);
            }
        }
        v
    };
    let w = names.iter().map(|n| n.len()).max().unwrap_or(4).max(16);
    if single {
        println!(
            "base {}, new {}: mean time per call, Welch's t within each run (n capped at {N_CAP}), change counted when |t| > {T_CRITICAL} and > {threshold}%",
            paths[0], paths[1]
        );
    } else {
        println!(
            "{} base and {} new runs: mean time per call, Welch's t across runs, change counted when |t| > {T_CRITICAL} and > {threshold}%",
            base.len(),
            new.len()
        );
    }
    println!(
        "{:<w$}  {:>12}  {:>12}  {:>9}  {:>9}  verdict",
        "name", "base avg.ns", "new avg.ns", "change", "t"
    );
    fn find<'r>(r: &'r Run, n: &str) -> Option<(&'r Point, f64)> {
        r.points.iter().find(|p| p.name == n).map(|p| (p, mean(p)))
    }
    let mut regressions = 0;
    for name in names {
        let a: Vec<(&Point, f64)> = base.iter().filter_map(|r| find(r, name)).collect();
        let b: Vec<(&Point, f64)> = new.iter().filter_map(|r| find(r, name)).collect();
        let avg = |x: &[(&Point, f64)]| x.iter().map(|(_, m)| m).sum::<f64>() / x.len() as f64;
        if a.is_empty() {
            println!(
                "{name:<w$}  {:>12}  {:>12.0}  {:>9}  {:>9}  new point",
                "-",
                avg(&b),
                "",
                ""
            );
            continue;
        }
        if b.is_empty() {
            println!(
                "{name:<w$}  {:>12.0}  {:>12}  {:>9}  {:>9}  gone",
                avg(&a),
                "-",
                "",
                ""
            );
            continue;
        }
        let (t, v) = if single {
            test(a[0].0, b[0].0, threshold)
        } else {
            let ma: Vec<f64> = a
                .iter()
                .filter(|(p, _)| p.timed > 0)
                .map(|(_, m)| *m)
                .collect();
            let mb: Vec<f64> = b
                .iter()
                .filter(|(p, _)| p.timed > 0)
                .map(|(_, m)| *m)
                .collect();
            test_runs(&ma, &mb, threshold)
        };
        if v == Verdict::Slower {
            regressions += 1;
        }
        let (ma, mb) = (avg(&a), avg(&b));
        let change = if ma == 0.0 {
            "-".to_string()
        } else {
            format!("{:+.1}%", 100.0 * (mb - ma) / ma)
        };
        println!(
            "{name:<w$}  {ma:>12.0}  {mb:>12.0}  {change:>9}  {t:>9.1}  {}",
            match v {
                Verdict::Faster => "faster",
                Verdict::Slower => "SLOWER",
                Verdict::Noise => "~ (within noise)",
                Verdict::Unknown => "? (too few timed calls or runs)",
            }
        );
    }
    compare_tracepoints(&base, &new);
    if gate && regressions > 0 {
        eprintln!("profpoint: {regressions} point(s) significantly slower");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("report") => report(args.collect()),
        Some("compare") => compare(args.collect()),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!(
            "unknown command {other:?}: expected report or compare\n{USAGE}"
        )),
        None => Err(USAGE.to_string()),
    };
    result.unwrap_or_else(|e| {
        eprintln!("profpoint: {e}");
        ExitCode::from(2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(avg: u64, sd: u64, timed: u64) -> Point {
        Point {
            name: "p".into(),
            nr: timed,
            timed,
            total_ns: avg * timed,
            avg_ns: avg,
            p50_ns: avg,
            p99_ns: avg,
            stddev_ns: sd,
            estimated: false,
        }
    }

    #[test]
    fn across_runs_the_spread_of_run_means_is_the_noise() {
        let base = [1000.0, 1010.0, 990.0, 1005.0];
        assert_eq!(
            test_runs(&base, &[1300.0, 1310.0, 1290.0, 1305.0], 2.0).1,
            Verdict::Slower
        );
        assert_eq!(
            test_runs(&base, &[1005.0, 1000.0, 1012.0, 995.0], 2.0).1,
            Verdict::Noise
        );
        // 5% apart but runs scatter by 10%: noise.
        assert_eq!(
            test_runs(&base, &[1150.0, 950.0, 1100.0, 1000.0], 2.0).1,
            Verdict::Noise
        );
        assert_eq!(
            test_runs(&[1000.0], &[1300.0, 1301.0], 2.0).1,
            Verdict::Unknown
        );
    }

    #[test]
    fn a_real_slowdown_is_flagged_and_noise_is_not() {
        // 10% slower, tight distributions, many calls: t is large.
        let (t, v) = test(&point(1000, 50, 10_000), &point(1100, 50, 10_000), 2.0);
        assert!(t > 40.0, "{t}");
        assert_eq!(v, Verdict::Slower);
        // 1% faster, below the 2% threshold.
        assert_eq!(
            test(&point(1000, 5, 10_000), &point(990, 5, 10_000), 2.0).1,
            Verdict::Noise
        );
        // 10% slower but wide distributions and few calls: within noise.
        assert_eq!(
            test(&point(1000, 2000, 10), &point(1100, 2000, 10), 2.0).1,
            Verdict::Noise
        );
        assert_eq!(
            test(&point(1000, 50, 10_000), &point(800, 50, 10_000), 2.0).1,
            Verdict::Faster
        );
        assert_eq!(
            test(&point(1000, 50, 1), &point(800, 50, 1), 2.0).1,
            Verdict::Unknown
        );
    }
}
