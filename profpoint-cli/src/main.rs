//! The `profpoint` command: reads saved reports (`PROFPOINT_REPORT=json:PATH`) and heatmap
//! dumps.
//!
//! ```text
//! profpoint report RUN.json [--format table|json|csv|pprof|prom|svg|folded|flame|points-folded|
//!     points-flame|pprof-stacks|points-pprof]
//!     [-o OUT] [--top N]
//! profpoint compare BASE.json NEW.json [--alpha A] [--threshold PCT] [--fail-on-regression]
//! profpoint compare BASE1.json BASE2.json ... -- NEW1.json NEW2.json ...
//! profpoint heatmap DUMP [--top N] [--by function|bucket] [--exclude GLOB]... [--json]
//! profpoint top ADDR [--token TOKEN] [--every SECONDS] [--sort KEY] [--filter GLOB]
//! ```
//!
//! Every input file is read bounded (`input.rs`): a regular file of at most 256 MiB
//! (`--max-input-size BYTES` raises it), checked before reading; anything else (a FIFO,
//! `/dev/zero`, a folder) is one line and exit 2, without waiting or reading.
//!
//! `report` reads the file with `profpoint_report`'s reader and prints it with the same
//! renderers the library's exit report uses, so the table is the exit table. `compare` matches
//! points by name and compares their latency distributions, not their means: one run a side, a
//! rank test over the two histograms; repeated runs, a t test over the per-run medians
//! (`compare.rs`, `stats.rs`, and `profpoint compare --help`). `heatmap` reports a heatmap
//! dump (what the `heatmap` crate's `Profile::write_dump` wrote). `top` shows a serving
//! process's points live in the terminal (`top/`).
//!
//! This is its own crate, apart from the `profpoint` library: linking the library would
//! install its start-up and at-exit hooks in the command (`PROFPOINT_REPORT=json:x profpoint
//! report x` would write the command's own report over its input), and the command's
//! dependencies (statrs, clap) must not reach the programs that link the library. The model
//! crate, `profpoint-report`, has no hook: reading a report measures nothing.
//!
//! Exit status: 0; 1 for `compare --fail-on-regression` with a point flagged SLOWER; 2 for bad
//! arguments (clap's message) and for input that cannot be read (one line naming the file and
//! what is wrong).

mod compare;
mod input;
mod output;
mod stats;
mod top;

use clap::{Args, Parser, Subcommand, ValueEnum};
use input::{DEFAULT_MAX_INPUT, MAX_INPUT, load, read_input};
use profpoint_report::Report;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Reads profpoint's saved reports and heatmap dumps.
#[derive(Debug, Parser)]
#[command(name = "profpoint", version, propagate_version = true)]
#[command(
    about = "Reads profpoint's saved reports (PROFPOINT_REPORT=json:PATH) and heatmap dumps",
    after_help = "`profpoint COMMAND --help` says more about each command.\n\
                  Exit status: 0; 1 when compare --fail-on-regression flags a point SLOWER; \
                  2 for bad arguments or a file that cannot be read."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Largest input file read, in bytes (a report or dump over it is refused, as is a path
    /// that is not a regular file: a FIFO, a device)
    #[arg(long, global = true, value_name = "BYTES", default_value_t = DEFAULT_MAX_INPUT)]
    max_input_size: u64,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prints a saved JSON report in any of the report's formats
    Report(ReportArgs),
    /// Compares each point's latency distribution between runs and flags the changed ones
    #[command(long_about = compare::HELP)]
    Compare(compare::CompareArgs),
    /// Prints the hottest functions (or buckets) of a heatmap dump, readprofile style
    Heatmap(HeatmapArgs),
    /// Shows a serving process's points live in the terminal, like top
    Top(top::TopArgs),
}

/// `profpoint report`'s arguments.
#[derive(Debug, Args)]
#[command(
    long_about = "Prints a saved JSON report (PROFPOINT_REPORT=json:PATH) in any of the formats \
                  the exit report writes: the table (points with their self time, tracepoints, \
                  the overhead budget, heatmap and per-function metrics where present), the \
                  JSON itself (older versions are written as the current one), CSV, pprof, the \
                  Prometheus text format or an SVG chart; and the stacks: folded stacks \
                  (inferno's input) and a flame graph SVG, of the sampled stacks when the \
                  report has them, else of the points tree (points-folded, points-flame: the \
                  points tree always; its counts are self time in ns); pprof-stacks and \
                  points-pprof: the same stacks as pprof with callers chained."
)]
struct ReportArgs {
    /// The JSON report
    #[arg(value_name = "RUN.json")]
    run: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Write to this file instead of standard output
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Keep the first N rows of each section (points, tracepoints, heatmap, metrics)
    #[arg(long, value_name = "N")]
    top: Option<usize>,
}

/// The formats of `profpoint report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The exit report's table
    Table,
    /// The JSON report (docs/report-schema.md)
    Json,
    /// One row per point
    Csv,
    /// A pprof profile (protobuf), for go tool pprof
    Pprof,
    /// The Prometheus text exposition format
    Prom,
    /// A bar chart of total and self time
    Svg,
    /// Folded stacks (inferno's input): sampled stacks if any (samples), else the points tree (ns)
    Folded,
    /// A flame graph SVG (inferno) of the same stacks as folded
    Flame,
    /// Folded stacks of the points tree (self time in ns)
    PointsFolded,
    /// A flame graph SVG of the points tree
    PointsFlame,
    /// pprof with stacks (callers chained) of the same stacks as folded
    PprofStacks,
    /// pprof with stacks of the points tree
    PointsPprof,
}

/// `profpoint heatmap`'s arguments.
#[derive(Debug, Args)]
#[command(
    long_about = "Prints the hottest functions (or buckets) of a heatmap dump, readprofile style. \
                  Symbols are read from the files recorded in the dump (the executable and its \
                  shared objects): run it on the machine that produced the dump, before those \
                  files are rebuilt (a rebuilt file is detected by its build id and said in a \
                  warning)."
)]
struct HeatmapArgs {
    /// The dump file (heatmap::Profile::write_dump)
    #[arg(value_name = "DUMP")]
    dump: PathBuf,
    /// Rows to print
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = positive)]
    top: usize,
    /// One row per function, or one per bucket
    #[arg(long, value_enum, value_name = "KIND", default_value_t = By::Function)]
    by: By,
    /// Leave out functions matching GLOB (* and ?), e.g. 'std::thread::park*'; may be repeated;
    /// excluded samples leave the total too
    #[arg(long, value_name = "GLOB", value_parser = glob)]
    exclude: Vec<String>,
    /// Print the report as JSON instead of a table
    #[arg(long)]
    json: bool,
}

/// How heatmap rows are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum By {
    /// One row per function
    Function,
    /// One row per bucket
    Bucket,
}

/// A number of rows: at least 1.
fn positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive number of rows".into()),
    }
}

/// A glob: not empty.
fn glob(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("expected a non-empty glob".into())
    } else {
        Ok(s.to_string())
    }
}

/// A command's failure: the line printed after `profpoint: `.
type Failure = String;

/// The report cut to its first `top` rows of each section.
fn keep_top(r: &mut Report, top: usize) {
    r.points.truncate(top);
    r.tracepoints.truncate(top);
    if let Some(h) = &mut r.heatmap {
        h.rows.truncate(top);
    }
    if let Some(p) = &mut r.pmu {
        p.rows.truncate(top);
    }
}

fn report(a: ReportArgs) -> Result<ExitCode, Failure> {
    let mut r = load(&a.run)?;
    if let Some(top) = a.top {
        keep_top(&mut r, top);
    }
    // JSON is streamed in pieces (a 10,000-point report is ~24 MB of text); the others are
    // rendered whole, then written.
    let bytes: Vec<u8> = match a.format {
        Format::Json => Vec::new(),
        Format::Table => r.to_table().into_bytes(),
        Format::Csv => r.to_csv().into_bytes(),
        Format::Pprof => r.to_pprof(),
        Format::Prom => r.to_prometheus().into_bytes(),
        Format::Svg => r.to_svg().into_bytes(),
        Format::Folded => r.folded().into_bytes(),
        Format::Flame => r.flame_svg().into_bytes(),
        Format::PointsFolded => r.points_folded().into_bytes(),
        Format::PointsFlame => r.points_flame_svg().into_bytes(),
        Format::PprofStacks => r.to_pprof_stacks(),
        Format::PointsPprof => r.to_points_pprof(),
    };
    // A rendering of the points tree's paths cuts those past `PATH_DEPTH`: one line says so.
    let tree_paths = match a.format {
        Format::Folded | Format::Flame | Format::PprofStacks => {
            r.stack_source() == Some(profpoint_report::StackSource::Points)
        }
        Format::PointsFolded | Format::PointsFlame | Format::PointsPprof => true,
        _ => false,
    };
    if let Some(tree) = r.tree.as_ref().filter(|_| tree_paths) {
        let deeper = tree.path_cut().deeper;
        if deeper > 0 {
            output::say(&format!(
                "{deeper} nodes of the points tree are deeper than {} points: their paths are \
                 cut there, one `{}` frame standing for the rest",
                profpoint_report::PATH_DEPTH,
                profpoint_report::CUT_FRAME
            ));
        }
    }
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        if a.format == Format::Json {
            r.write_json(w)?;
            w.write_all(b"\n")?;
        } else {
            w.write_all(&bytes)?;
        }
        w.flush()
    };
    match &a.output {
        Some(out) => output::write_output(out, &write)?,
        None => {
            let mut out = std::io::stdout().lock();
            match write(&mut out) {
                // A closed pipe (`profpoint report x | head`) is no error.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(format!("cannot write to standard output: {e}"));
                }
                _ => {}
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes to standard output; a closed pipe (`profpoint report x | head`) is no error.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

fn heatmap(a: HeatmapArgs) -> Result<ExitCode, Failure> {
    let name = a.dump.display();
    let bytes = read_input(&a.dump, "a heatmap dump file")?;
    let profile = heatmap::Profile::read_dump(&bytes).map_err(|e| format!("{name}: {e}"))?;
    let opts = heatmap::ReportOptions {
        top: a.top,
        by: match a.by {
            By::Function => heatmap::By::Function,
            By::Bucket => heatmap::By::Bucket,
        },
        exclude: a.exclude,
        ..Default::default()
    };
    let report = profile.report(&opts);
    let mut text = Vec::new();
    if a.json {
        text = report.to_json().into_bytes();
        text.push(b'\n');
    } else {
        // Writing into memory cannot fail.
        let _ = report.write_table(&mut text);
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `--help` and `--version` as clap prints them; a bad argument as clap's message in one line
/// (its first line, and its tip where it has one), exit status 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(if e.exit_code() == 0 { 0 } else { 2 });
    }
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"))
        .collect();
    let mut first = lines
        .first()
        .map_or("bad arguments", |l| l.strip_prefix("error: ").unwrap_or(l))
        .to_string();
    // "the following required arguments were not provided:" lists them on the next lines.
    if first.ends_with(':') {
        let rest: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .filter(|l| !l.starts_with("tip: "))
            .collect();
        first = format!("{first} {}", rest.join(" "));
    }
    // A bad value: what was expected, from clap's list of the accepted ones.
    if let Some(values) = lines.iter().find_map(|l| {
        l.strip_prefix("[possible values: ")
            .and_then(|v| v.strip_suffix(']'))
    }) {
        first = format!("{first}: expected one of {values}");
    }
    let tip = lines
        .iter()
        .find_map(|l| l.strip_prefix("tip: "))
        .map_or(String::new(), |t| format!(" ({t})"));
    let sub = std::env::args()
        .nth(1)
        .filter(|a| ["report", "compare", "heatmap", "top"].contains(&a.as_str()));
    let help = match sub {
        Some(s) => format!("profpoint {s} --help"),
        None => "profpoint --help".to_string(),
    };
    output::say(&format!("{first}{tip}; see {help}"));
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(compare::options_first(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    // Relaxed: before any file is read.
    MAX_INPUT.store(cli.max_input_size, std::sync::atomic::Ordering::Relaxed);
    let result = match cli.command {
        Command::Report(a) => report(a),
        Command::Compare(a) => compare::compare(a),
        Command::Heatmap(a) => heatmap(a),
        Command::Top(a) => top::top(a, cli.max_input_size),
    };
    result.unwrap_or_else(|e| {
        output::say(&e);
        ExitCode::from(2)
    })
}
