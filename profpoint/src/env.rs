//! The `PROFPOINT_*` environment variables, read once at start-up.
//!
//! Every variable is optional. A bad value never stops the program: it gets one line on stderr
//! naming the variable, the value and what was expected, and the default is used. So do, at
//! start-up, a glob that matches no point (or tracepoint) and a report file whose folder is
//! missing or not writable (see `exit.rs`).
//!
//! | variable | values | default |
//! |---|---|---|
//! | `PROFPOINT_REPORT` | comma-separated `stderr`, `stdout`, `off`, `json:PATH`, `csv:PATH`, `table:PATH`, `prom:PATH`, `svg:PATH`, `pprof:PATH` (`{pid}` in a PATH becomes the process id; a forked child that exits normally writes PATH.PID; a relative PATH is resolved at start-up; files are replaced whole, by rename) | unset: no report unless the program opted in (then `stderr`) |
//! | `PROFPOINT_DISABLE` | comma-separated globs of point names to turn off | none |
//! | `PROFPOINT_ENABLE` | comma-separated globs to turn on (applied after `PROFPOINT_DISABLE`) | all on |
//! | `PROFPOINT_SAMPLE` | `N` (every point) or comma-separated `GLOB=N`: time one call in about N | every call timed |
//! | `PROFPOINT_BUDGET` | the share of CPU time the points' instrumentation may cost: `2%` (a percentage), or `off`; hot points are then timed on one call in N, counted only, or timed in bursts (see `profpoint::set_budget`) | `2%` |
//! | `PROFPOINT_REPORT_EVERY` | a duration (`500ms`, `10s`, `5m`, `1h`): also write every destination of `PROFPOINT_REPORT` at that interval, with the interval's deltas; `{seq}` in a PATH becomes the report's sequence number | unset: at exit only |
//! | `PROFPOINT_SERVE` (`PROFPOINT_SERVE_PUBLIC`, `PROFPOINT_SERVE_TOKEN`) | `HOST:PORT`: serve live reports over HTTP (feature `serve`); a non-loopback address needs `PROFPOINT_SERVE_PUBLIC=1`; the token, if set, is required as `Authorization: Bearer TOKEN` | no server |
//! | `PROFPOINT_SIGNALS` | `0` or `1`: write the report when SIGINT, SIGTERM or SIGHUP ends the process (Unix) | `1` |
//! | `PROFPOINT_SUBTRACT_OVERHEAD` | `0` or `1` | `0` |
//! | `PROFPOINT_TRACE` | comma-separated globs of tracepoint names whose counting probe to turn on | none |
//! | `PROFPOINT_HEATMAP`, `PROFPOINT_HZ`, `PROFPOINT_SHIFT`, `PROFPOINT_HEATMAP_SOURCE` | start the heatmap sampler (see the `heatmap` crate; source `auto`, `perf`, `setitimer` or `tgkill`) | off |
//! | `PROFPOINT_HEATMAP_TOP`, `PROFPOINT_HEATMAP_EXCLUDE` | rows and excluded function globs of the heatmap section | 20, none |
//! | `PROFPOINT_PMU` (`PROFPOINT_PMU_LONG`, `PROFPOINT_PMU_WINDOW`, `PROFPOINT_PMU_EVENTS`) | `1`: per-function hardware metrics (`heatmap::pmu`) in the exit report; `software`: the same windows on the CPU clock with page faults, no PMU needed | off |
//! | `PROFPOINT_CLOCK` | `tsc` or `monotonic` | `tsc` where invariant |

use std::path::PathBuf;

/// Where the report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// The points table on standard error.
    Stderr,
    /// The points table on standard output.
    Stdout,
    /// The JSON report, written to a file.
    Json(PathBuf),
    /// The points as CSV, written to a file.
    Csv(PathBuf),
    /// The points table, written to a file.
    Table(PathBuf),
    /// The Prometheus text format, written to a file.
    Prometheus(PathBuf),
    /// An SVG bar chart of the points, written to a file.
    Svg(PathBuf),
    /// A pprof profile of the points, written to a file.
    Pprof(PathBuf),
}

impl Destination {
    /// Its file path, for a file destination.
    pub(crate) fn path(&self) -> Option<&std::path::Path> {
        match self {
            Destination::Stderr | Destination::Stdout => None,
            Destination::Json(p)
            | Destination::Csv(p)
            | Destination::Table(p)
            | Destination::Prometheus(p)
            | Destination::Svg(p)
            | Destination::Pprof(p) => Some(p),
        }
    }

    /// The same destination with its file path (if any) changed by `f`.
    pub(crate) fn map_path(&self, f: impl FnOnce(&std::path::Path) -> PathBuf) -> Destination {
        match self {
            Destination::Stderr => Destination::Stderr,
            Destination::Stdout => Destination::Stdout,
            Destination::Json(p) => Destination::Json(f(p)),
            Destination::Csv(p) => Destination::Csv(f(p)),
            Destination::Table(p) => Destination::Table(f(p)),
            Destination::Prometheus(p) => Destination::Prometheus(f(p)),
            Destination::Svg(p) => Destination::Svg(f(p)),
            Destination::Pprof(p) => Destination::Pprof(f(p)),
        }
    }
}

/// The destination as `PROFPOINT_REPORT` spells it: `stderr`, `json:PATH`...
impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, path) = match self {
            Destination::Stderr => return f.write_str("stderr"),
            Destination::Stdout => return f.write_str("stdout"),
            Destination::Json(p) => ("json", p),
            Destination::Csv(p) => ("csv", p),
            Destination::Table(p) => ("table", p),
            Destination::Prometheus(p) => ("prom", p),
            Destination::Svg(p) => ("svg", p),
            Destination::Pprof(p) => ("pprof", p),
        };
        write!(f, "{kind}:{}", path.display())
    }
}

/// A rejected environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    /// The variable's name.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What was expected instead.
    pub expected: &'static str,
}

impl std::fmt::Display for EnvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={:?}: expected {}",
            self.var, self.value, self.expected
        )
    }
}

impl std::error::Error for EnvError {}

/// The destinations `PROFPOINT_REPORT` accepts without a path, as spelled there.
const PLAIN_DESTINATIONS: &[(&str, Destination)] = &[
    ("stderr", Destination::Stderr),
    ("stdout", Destination::Stdout),
];

/// A file destination's variant, made from its path.
type FileDestination = fn(PathBuf) -> Destination;

/// The file destinations `PROFPOINT_REPORT` accepts: the prefix before `:PATH`, and the
/// destination it makes. The parser reads this table, and its error lists it.
const FILE_DESTINATIONS: &[(&str, FileDestination)] = &[
    ("json", Destination::Json),
    ("csv", Destination::Csv),
    ("table", Destination::Table),
    ("prom", Destination::Prometheus),
    ("svg", Destination::Svg),
    ("pprof", Destination::Pprof),
];

/// What a bad `PROFPOINT_REPORT` is told, made once from the parser's tables: every
/// destination it accepts.
fn report_expected() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let mut all: Vec<String> = PLAIN_DESTINATIONS
            .iter()
            .map(|(name, _)| (*name).to_string())
            .collect();
        all.extend(
            FILE_DESTINATIONS
                .iter()
                .map(|(kind, _)| format!("{kind}:PATH")),
        );
        let last = all.pop().unwrap_or_default();
        format!(
            "a comma-separated list of {} or {last}, or off alone",
            all.join(", ")
        )
    })
}

/// Parses `PROFPOINT_REPORT`: `Ok(vec![])` means `off`.
pub fn parse_report(value: &str) -> Result<Vec<Destination>, EnvError> {
    let err = || EnvError {
        var: "PROFPOINT_REPORT",
        value: value.to_string(),
        expected: report_expected(),
    };
    let mut out = Vec::new();
    let mut off = false;
    for item in value.split(',').map(str::trim) {
        if item == "off" {
            off = true;
            continue;
        }
        if let Some((_, d)) = PLAIN_DESTINATIONS.iter().find(|(name, _)| *name == item) {
            out.push(d.clone());
            continue;
        }
        let (kind, path) = item.split_once(':').ok_or_else(err)?;
        match FILE_DESTINATIONS.iter().find(|(k, _)| *k == kind) {
            Some((_, make)) if !path.is_empty() => out.push(make(PathBuf::from(path))),
            _ => return Err(err()),
        }
    }
    if off && !out.is_empty() {
        return Err(err());
    }
    Ok(out)
}

/// Parses a comma-separated glob list (`PROFPOINT_ENABLE`, `PROFPOINT_DISABLE`).
pub fn parse_globs(var: &'static str, value: &str) -> Result<Vec<String>, EnvError> {
    let globs: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if globs.is_empty() {
        return Err(EnvError {
            var,
            value: value.to_string(),
            expected: "a comma-separated list of point-name globs such as db::*",
        });
    }
    Ok(globs)
}

/// Parses `PROFPOINT_SAMPLE`: `(glob, every)` pairs.
/// `N` is 0 for `count`.
pub fn parse_sample(value: &str) -> Result<Vec<(String, u32)>, EnvError> {
    let err = || EnvError {
        var: "PROFPOINT_SAMPLE",
        value: value.to_string(),
        expected: "N or a comma-separated list of GLOB=N, with N an integer from 1 to 1000000 \
                   or `count` (count every call, time none)",
    };
    // `count` is returned as 0.
    let num = |s: &str| match s.trim().parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ if s.trim() == "count" => Ok(0),
        _ => Err(err()),
    };
    if !value.contains('=') {
        return Ok(vec![("*".to_string(), num(value)?)]);
    }
    value
        .split(',')
        .map(|item| match item.split_once('=') {
            Some((g, n)) if !g.trim().is_empty() => Ok((g.trim().to_string(), num(n)?)),
            _ => Err(err()),
        })
        .collect()
}

/// Parses a boolean flag: `0`/`1` (also `false`/`true`, `no`/`yes`, `off`/`on`).
pub fn parse_bool(var: &'static str, value: &str) -> Result<bool, EnvError> {
    match value.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(EnvError {
            var,
            value: value.to_string(),
            expected: "0 or 1",
        }),
    }
}

/// Parses `PROFPOINT_BUDGET`: a percentage of CPU time (`2%`, `0.5`, `10%`), or `off` (also
/// `0`, `none`) for no budget (`None`).
pub fn parse_budget(value: &str) -> Result<Option<f64>, EnvError> {
    let v = value.trim();
    if matches!(v, "off" | "none" | "0" | "0%") {
        return Ok(None);
    }
    match v.strip_suffix('%').unwrap_or(v).trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(Some(p)),
        _ => Err(EnvError {
            var: "PROFPOINT_BUDGET",
            value: value.to_string(),
            expected: "a percentage of CPU time above 0 and at most 100 (e.g. 2%), or off",
        }),
    }
}

/// Parses `PROFPOINT_REPORT_EVERY`: a duration with its unit, `500ms`, `10s`, `5m` or `1h`
/// (fractions allowed: `1.5s`), from 10 ms to 30 days.
pub fn parse_every(value: &str) -> Result<std::time::Duration, EnvError> {
    let bad = || EnvError {
        var: "PROFPOINT_REPORT_EVERY",
        value: value.to_string(),
        expected: "a duration with its unit from 10ms to 30 days (e.g. 500ms, 10s, 5m, 1h)",
    };
    let v = value.trim();
    let (num, unit) = match v.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => v.split_at(at),
        None => return Err(bad()),
    };
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    match num.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && (0.01..=30.0 * 86_400.0).contains(&(n * scale)) => {
            Ok(std::time::Duration::from_secs_f64(n * scale))
        }
        _ => Err(bad()),
    }
}

/// Parses `PROFPOINT_MAX_SLOT_MB`: the cap on per-thread point slots, MiB (1 to 1,048,576).
pub fn parse_max_slot_mb(value: &str) -> Result<u64, EnvError> {
    match value.trim().parse::<u64>() {
        Ok(mb) if (1..=1 << 20).contains(&mb) => Ok(mb),
        _ => Err(EnvError {
            var: "PROFPOINT_MAX_SLOT_MB",
            value: value.to_string(),
            expected: "a whole number of MiB from 1 to 1048576",
        }),
    }
}

/// Parses `PROFPOINT_CLOCK`: `true` means "use the monotonic clock".
pub fn parse_clock(value: &str) -> Result<bool, EnvError> {
    match value.trim() {
        // `cntvct`: aarch64's raw counter, what `tsc` chooses there too.
        "tsc" | "cntvct" => Ok(false),
        "monotonic" => Ok(true),
        _ => Err(EnvError {
            var: "PROFPOINT_CLOCK",
            value: value.to_string(),
            expected: "tsc or monotonic",
        }),
    }
}

/// Prints one warning line for a rejected variable.
pub(crate) fn warn(e: &EnvError, fallback: &str) {
    eprintln!("profpoint: {e}; using {fallback}");
}

/// Reads a variable as UTF-8, warning (and ignoring it) when it is not.
pub(crate) fn var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) => Some(v),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(v)) => {
            eprintln!("profpoint: {name}={v:?}: expected UTF-8 text; ignoring it");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_destinations() {
        assert_eq!(parse_report("stderr"), Ok(vec![Destination::Stderr]));
        assert_eq!(parse_report("off"), Ok(vec![]));
        assert_eq!(
            parse_report("stderr, json:/tmp/a.json"),
            Ok(vec![
                Destination::Stderr,
                Destination::Json("/tmp/a.json".into())
            ])
        );
        let e = parse_report("xml:foo").unwrap_err();
        assert_eq!(e.var, "PROFPOINT_REPORT");
        assert!(e.to_string().contains("\"xml:foo\""), "{e}");
        assert!(parse_report("json:").is_err());
        assert!(parse_report("off,stderr").is_err());
    }

    #[test]
    fn a_bad_report_value_lists_every_destination_the_parser_takes() {
        let said = parse_report("xml:foo").unwrap_err().expected;
        assert_eq!(
            said,
            "a comma-separated list of stderr, stdout, json:PATH, csv:PATH, table:PATH, \
             prom:PATH, svg:PATH or pprof:PATH, or off alone"
        );
        // Every destination named there parses, with a path where it takes one.
        for (kind, _) in FILE_DESTINATIONS {
            let d = parse_report(&format!("{kind}:/tmp/r")).unwrap();
            assert_eq!(d[0].to_string(), format!("{kind}:/tmp/r"));
            assert!(said.contains(&format!("{kind}:PATH")), "{said}");
        }
        for (name, _) in PLAIN_DESTINATIONS {
            assert_eq!(parse_report(name).unwrap()[0].to_string(), *name);
        }
    }

    #[test]
    fn sample_values() {
        assert_eq!(parse_sample("16"), Ok(vec![("*".into(), 16)]));
        assert_eq!(
            parse_sample("db::*=8, http::*=2"),
            Ok(vec![("db::*".into(), 8), ("http::*".into(), 2)])
        );
        assert!(parse_sample("0").is_err());
        assert_eq!(
            parse_sample("hot::*=count,db::*=4"),
            Ok(vec![("hot::*".into(), 0), ("db::*".into(), 4)])
        );
        assert!(parse_sample("abc").is_err());
        assert!(parse_sample("=4").is_err());
    }

    #[test]
    fn budget_values() {
        assert_eq!(parse_budget("2%").unwrap(), Some(2.0));
        assert_eq!(parse_budget(" 0.5 ").unwrap(), Some(0.5));
        assert_eq!(parse_budget("100%").unwrap(), Some(100.0));
        assert_eq!(parse_budget("off").unwrap(), None);
        assert_eq!(parse_budget("0").unwrap(), None);
        for bad in ["", "-1%", "101", "two", "2%%", "nan"] {
            let e = parse_budget(bad).unwrap_err();
            assert_eq!(e.var, "PROFPOINT_BUDGET");
            assert_eq!(e.value, bad);
        }
    }

    #[test]
    fn every_values() {
        use std::time::Duration;
        assert_eq!(parse_every("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_every(" 500ms ").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_every("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_every("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_every("1h").unwrap(), Duration::from_secs(3600));
        for bad in [
            "", "60", "5ms", "0s", "-1s", "1d", "s", "nan s", "31h0", "800h",
        ] {
            let e = parse_every(bad).unwrap_err();
            assert_eq!(e.var, "PROFPOINT_REPORT_EVERY");
            assert_eq!(e.value, bad);
        }
    }

    #[test]
    fn globs_and_flags() {
        assert_eq!(
            parse_globs("PROFPOINT_ENABLE", "a::*, b"),
            Ok(vec!["a::*".into(), "b".into()])
        );
        assert!(parse_globs("PROFPOINT_ENABLE", " , ").is_err());
        assert_eq!(parse_bool("X", "1"), Ok(true));
        assert!(parse_bool("X", "maybe").is_err());
        assert_eq!(parse_clock("monotonic"), Ok(true));
        assert!(parse_clock("hpet").is_err());
    }
}
