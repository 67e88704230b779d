//! The seed's points table, in text: status, name, total, nr, avg, plus the columns a user
//! needs next (self, p50, p99, max, share of wall time).

use super::{PointReport, Report};
use std::io::{self, Write};

/// Writes the points table of `report` to `w`.
///
/// Layout: a header line (clock, overhead, wall time), the column titles, one row per point
/// sorted by total time, and a footer that explains the marks used in the rows.
pub fn write_table(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let name_w = report
        .points
        .iter()
        .map(|p| p.name.len() + 2)
        .max()
        .unwrap_or(4)
        .max(16);
    writeln!(w, "Profile Points")?;
    let overhead = match &report.overhead {
        Some(o) => format!(
            "overhead {:.1} ns/call ({:.1} ns inside the timed interval, {})",
            o.per_call_ns,
            o.in_interval_ns,
            if report.compensated {
                "compensated: own and nested points' cost removed from every interval"
            } else if report.overhead_subtracted {
                "subtracted"
            } else {
                "not subtracted"
            }
        ),
        None => "overhead not measured".to_string(),
    };
    // profpoint's own first-use work (shards, slots), which no interval includes.
    let setup = if report.setup.calls > 0 {
        format!(
            ", set-up {:.3} ms in {} first calls (outside every interval)",
            report.setup.ns / 1e6,
            report.setup.calls
        )
    } else {
        String::new()
    };
    writeln!(
        w,
        "clock {} {:.3} GHz, {}, wall {:.3} s{setup}",
        report.clock.source,
        report.clock.ghz,
        overhead,
        report.wall_ns as f64 / 1e9
    )?;
    let rule = format!(
        "{:->7}  {:-<name_w$}  {:->15}  {:->15}  {:->12}  {:->10}  {:->10}  {:->10}  {:->12}  {:->6}",
        "", "", "", "", "", "", "", "", "", ""
    );
    writeln!(
        w,
        "{:>7}  {:<name_w$}  {:>15}  {:>15}  {:>12}  {:>10}  {:>10}  {:>10}  {:>12}  {:>6}",
        "status",
        "name",
        "total(s)",
        "self(s)",
        "nr",
        "avg.ns",
        "p50.ns",
        "p99.ns",
        "max.ns",
        "%wall"
    )?;
    writeln!(w, "{rule}")?;
    let mut marks = Marks::default();
    for p in &report.points {
        let mark = marks.of(p);
        writeln!(
            w,
            "{:>7}  {:<name_w$}  {:>15}  {:>15}  {:>12}  {:>10}  {:>10}  {:>10}  {:>12}  {:>6.2}",
            match (p.enabled, p.sampling) {
                (false, _) => "off",
                (true, Some(0)) => "count",
                (true, _) => "on",
            },
            format!("{}{}", p.name, mark),
            secs(p.total_ns, p.estimated),
            if p.kind == "async" {
                "-".to_string()
            } else {
                secs(p.self_ns, p.estimated)
            },
            p.nr,
            p.avg_ns,
            p.p50_ns,
            p.p99_ns,
            p.max_ns,
            p.wall_percent,
        )?;
    }
    writeln!(w, "{rule}")?;
    let never = report.points.iter().filter(|p| p.nr == 0).count();
    writeln!(
        w,
        "{} points ({} never hit). avg.ns = total / timed calls; self = total minus points nested inside.",
        report.points.len(),
        never
    )?;
    if marks.recursive {
        writeln!(
            w,
            " * re-entered while active (recursion): every call is in nr, only outermost calls in total and avg"
        )?;
    }
    if marks.asynchronous {
        writeln!(
            w,
            " @ async: first poll to completion, calls may overlap (not folded), no self time"
        )?;
    }
    if marks.sampled {
        writeln!(
            w,
            " ~ sampled timing: every call counted, one outermost call in N timed; times are estimates\n   (the self time of points around a sampled one includes its untimed calls)"
        )?;
    }
    write_tracepoints(report, w)?;
    #[cfg(feature = "heatmap")]
    if let Some(h) = &report.heatmap {
        writeln!(w)?;
        h.write_table(w)?;
    }
    #[cfg(feature = "heatmap")]
    if let Some(p) = &report.pmu {
        writeln!(w)?;
        p.write_table(w)?;
    }
    Ok(())
}

/// The tracepoints section: every tracepoint that is enabled or was hit (all of them are in
/// the JSON report).
fn write_tracepoints(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<_> = report
        .tracepoints
        .iter()
        .filter(|t| t.enabled || t.hits > 0)
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    let name_w = shown
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(16);
    writeln!(w)?;
    writeln!(w, "Tracepoints ({} compiled in)", report.tracepoints.len())?;
    writeln!(
        w,
        "{:>7}  {:<name_w$}  {:>6}  {:>8}  {:>14}",
        "status", "name", "probes", "counting", "hits"
    )?;
    for t in shown {
        writeln!(
            w,
            "{:>7}  {:<name_w$}  {:>6}  {:>8}  {:>14}",
            if t.enabled { "on" } else { "off" },
            t.name,
            t.probes,
            if t.counting { "yes" } else { "no" },
            t.hits
        )?;
    }
    Ok(())
}

/// Which footnotes the rows used.
#[derive(Default)]
struct Marks {
    recursive: bool,
    asynchronous: bool,
    sampled: bool,
}

impl Marks {
    fn of(&mut self, p: &PointReport) -> String {
        let mut m = String::new();
        if p.nested > 0 {
            self.recursive = true;
            m.push_str(" *");
        }
        if p.kind == "async" {
            self.asynchronous = true;
            m.push_str(" @");
        }
        if p.estimated {
            self.sampled = true;
            m.push_str(" ~");
        }
        m
    }
}

/// Seconds with 9 decimals, the seed's format; `~` marks an estimate.
fn secs(ns: u64, estimated: bool) -> String {
    format!(
        "{}{}.{:09}",
        if estimated { "~" } else { "" },
        ns / 1_000_000_000,
        ns % 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_have_nine_decimals() {
        assert_eq!(secs(154_283, false), "0.000154283");
        assert_eq!(secs(16_981_247_886, true), "~16.981247886");
    }
}
