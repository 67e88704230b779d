//! `PROFPOINT_REPORT`'s spelling of a destination: the parser that reads the variable into
//! [`Destination`]s, and the same spelling back (`Display`), for the warnings.

use super::Destination;
use crate::env::{EnvError, expected};
use std::path::PathBuf;

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
            Destination::Folded(p) => ("folded", p),
            Destination::Flame(p) => ("flame", p),
            Destination::PointsFolded(p) => ("points-folded", p),
            Destination::PointsFlame(p) => ("points-flame", p),
            Destination::PprofStacks(p) => ("pprof-stacks", p),
            Destination::PointsPprof(p) => ("points-pprof", p),
        };
        write!(f, "{kind}:{}", path.display())
    }
}

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
    ("folded", Destination::Folded),
    ("flame", Destination::Flame),
    ("points-folded", Destination::PointsFolded),
    ("points-flame", Destination::PointsFlame),
    ("pprof-stacks", Destination::PprofStacks),
    ("points-pprof", Destination::PointsPprof),
];

/// What a bad `PROFPOINT_REPORT` is told, made from the parser's tables: every destination
/// it accepts (the variables' table spells it out; the tests hold the two equal).
#[cfg(test)]
pub(crate) fn report_expected() -> &'static str {
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
pub(crate) fn parse_report(value: &str) -> Result<Vec<Destination>, EnvError> {
    let err = || EnvError {
        var: "PROFPOINT_REPORT",
        value: value.to_string(),
        expected: expected("PROFPOINT_REPORT"),
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
            report_expected(),
            "the variables' table vs the parser's tables"
        );
        assert_eq!(
            said,
            "a comma-separated list of stderr, stdout, json:PATH, csv:PATH, table:PATH, \
             prom:PATH, svg:PATH, pprof:PATH, folded:PATH, flame:PATH, points-folded:PATH, \
             points-flame:PATH, pprof-stacks:PATH or points-pprof:PATH, or off alone"
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

    /// README's `PROFPOINT_REPORT` row lists the parser's destinations (and `off`), each in
    /// backticks in its values cell.
    #[test]
    fn readme_lists_every_report_destination() {
        let readme = include_str!("../../../README.md");
        let row = readme
            .lines()
            .find(|l| l.starts_with("| `PROFPOINT_REPORT` |"))
            .expect("README's Configure table has a PROFPOINT_REPORT row");
        let values = row.split(" | ").nth(1).expect("the row has a values cell");
        let mut in_readme: Vec<String> = values
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        in_readme.sort_unstable();
        let mut in_table: Vec<String> = PLAIN_DESTINATIONS
            .iter()
            .map(|(n, _)| n.to_string())
            .chain(FILE_DESTINATIONS.iter().map(|(k, _)| format!("{k}:PATH")))
            .chain(["off".to_string()])
            .collect();
        in_table.sort_unstable();
        assert_eq!(
            in_readme, in_table,
            "README.md's destinations vs the parser's tables"
        );
    }
}
