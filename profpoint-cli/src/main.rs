//! The `profpoint` command: reads JSON reports (`PROFPOINT_REPORT=json:PATH`).
//!
//! ```text
//! profpoint report RUN.json [--top N]
//! profpoint compare BASE.json NEW.json [--alpha A] [--threshold PCT] [--fail-on-regression]
//! profpoint compare BASE1.json BASE2.json ... -- NEW1.json NEW2.json ...
//! ```
//!
//! `compare` matches points by name and compares their latency distributions, not their
//! means: one run a side, a rank test over the two histograms; repeated runs, a t test over
//! the per-run medians (`compare.rs`, `stats.rs`, and `profpoint compare --help`).
//!
//! This is its own crate, apart from the `profpoint` library: linking the library would
//! install its start-up and at-exit hooks in the command (`PROFPOINT_REPORT=json:x profpoint
//! report x` would write the command's own report over its input), and the command's
//! dependencies (statrs) must not reach the programs that link the library.

mod compare;
mod stats;

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
    run: Option<RunMeta>,
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

/// A point's row. The percentiles other than p50 and p99, and `hist`, are optional: a report
/// of an older writer may lack them.
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
    min_ns: Option<u64>,
    #[serde(default)]
    max_ns: Option<u64>,
    #[serde(default)]
    p90_ns: Option<u64>,
    #[serde(default)]
    p999_ns: Option<u64>,
    #[serde(default)]
    estimated: bool,
    /// `[value_ns, calls]` per non-empty bucket (docs/report-schema.md).
    #[serde(default)]
    hist: Option<Vec<[u64; 2]>>,
}

/// The run's metadata, where the report has it.
#[derive(Debug, Deserialize)]
struct RunMeta {
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    cpu_model: String,
}

const REPORT_USAGE: &str = "usage: profpoint report RUN.json [--top N]";

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

/// One value of an option: `--name VALUE`, or `--name=VALUE` (then `inline` holds it).
fn value<T: std::str::FromStr>(
    inline: Option<&str>,
    args: &mut impl Iterator<Item = String>,
    flag: &str,
    what: &str,
) -> Result<T, String> {
    let v = match inline {
        Some(v) => v.to_string(),
        None => args
            .next()
            .ok_or_else(|| format!("{flag}: expected {what} after it"))?,
    };
    v.trim()
        .parse()
        .map_err(|_| format!("{flag} {v:?}: expected {what}"))
}

/// `--name=VALUE` split into the name and the value; any other argument whole.
fn split_option(a: &str) -> (&str, Option<&str>) {
    match a.split_once('=') {
        Some((n, v)) if n.starts_with("--") => (n, Some(v)),
        _ => (a, None),
    }
}

fn report(args: Vec<String>) -> Result<ExitCode, String> {
    let mut it = args.into_iter();
    let mut path = None;
    let mut top = usize::MAX;
    while let Some(a) = it.next() {
        let (name, inline) = split_option(&a);
        match name {
            "-h" | "--help" => {
                println!(
                    "{REPORT_USAGE}\n\nPrints a saved JSON report (PROFPOINT_REPORT=json:PATH): its points, then its tracepoints,\nheatmap and per-function metrics where present; --top N keeps the first N rows of each."
                );
                return Ok(ExitCode::SUCCESS);
            }
            "--top" => top = value(inline, &mut it, "--top", "a number of rows")?,
            _ if a.starts_with('-') && a.len() > 1 => {
                return Err(format!(
                    "unknown option {a:?}: expected --top N ({REPORT_USAGE})"
                ));
            }
            _ if path.is_none() => path = Some(a),
            _ => {
                return Err(format!(
                    "unexpected argument {a:?}: report reads one file ({REPORT_USAGE})"
                ));
            }
        }
    }
    let path = path.ok_or_else(|| format!("report: expected a JSON report ({REPORT_USAGE})"))?;
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

fn main() -> ExitCode {
    let usage = format!(
        "{REPORT_USAGE}\n       {}",
        &compare::USAGE["usage: ".len()..]
    );
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("report") => report(args.collect()),
        Some("compare") => compare::compare(args.collect()),
        Some("-h" | "--help") => {
            println!("{usage}\n\nprofpoint report --help and profpoint compare --help say more.");
            Ok(ExitCode::SUCCESS)
        }
        Some("-V" | "--version") => {
            println!("profpoint {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!(
            "unknown command {other:?}: expected report or compare (profpoint --help)"
        )),
        None => Err(usage),
    };
    result.unwrap_or_else(|e| {
        eprintln!("profpoint: {e}");
        ExitCode::from(2)
    })
}
