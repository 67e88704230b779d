//! The report in the Prometheus text exposition format (version 0.0.4): counters for calls and
//! time, a summary for latency, tracepoint hits. Series carry `point` and `location` labels.
//! The latency summary's `_count` is the outermost calls (those whose time `_sum` covers,
//! estimated under sampled timing); estimated sums can move down between scrapes. Serve it from a long-running program's
//! metrics endpoint (`profpoint::snapshot().to_prometheus()`) or write it at exit
//! (`PROFPOINT_REPORT=prom:PATH`).

use super::Report;
use std::fmt::Write;

/// Escapes a label value: backslash, double quote and line feed.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The labels of a point's series: its name, and where it is defined (two points may share a
/// name, e.g. two `profile_scope!("x")`; series must not).
fn labels(p: &super::PointReport) -> String {
    format!(
        "point=\"{}\",location=\"{}:{}\"",
        label(&p.name),
        label(p.file),
        p.line
    )
}

pub(super) fn render(r: &Report) -> String {
    let mut o = String::new();
    // Writing into a String cannot fail.
    let mut metric =
        |name: &str, kind: &str, help: &str, rows: &mut dyn Iterator<Item = String>| {
            let _ = writeln!(o, "# HELP {name} {help}");
            let _ = writeln!(o, "# TYPE {name} {kind}");
            for row in rows {
                let _ = writeln!(o, "{row}");
            }
        };
    let secs = |ns: u64| ns as f64 / 1e9;
    metric(
        "profpoint_calls_total",
        "counter",
        "Completed calls of each profile point.",
        &mut r
            .points
            .iter()
            .map(|p| format!("profpoint_calls_total{{{}}} {}", labels(p), p.nr)),
    );
    metric(
        "profpoint_time_seconds_total",
        "counter",
        "Time of the outermost calls of each profile point (estimated under sampled timing).",
        &mut r.points.iter().map(|p| {
            format!(
                "profpoint_time_seconds_total{{{}}} {}",
                labels(p),
                secs(p.total_ns)
            )
        }),
    );
    metric(
        "profpoint_self_seconds_total",
        "counter",
        "Time of each profile point minus the points nested inside it.",
        &mut r.points.iter().map(|p| {
            format!(
                "profpoint_self_seconds_total{{{}}} {}",
                labels(p),
                secs(p.self_ns)
            )
        }),
    );
    metric(
        "profpoint_latency_seconds",
        "summary",
        "Latency of the timed calls of each profile point (quantiles within about 2%).",
        &mut r.points.iter().flat_map(|p| {
            let n = labels(p);
            let mut rows: Vec<String> = [
                (0.5, p.p50_ns),
                (0.9, p.p90_ns),
                (0.99, p.p99_ns),
                (0.999, p.p999_ns),
            ]
            .iter()
            .map(|(q, v)| {
                format!(
                    "profpoint_latency_seconds{{{n},quantile=\"{q}\"}} {}",
                    secs(*v)
                )
            })
            .collect();
            rows.push(format!(
                "profpoint_latency_seconds_sum{{{n}}} {}",
                secs(p.total_ns)
            ));
            rows.push(format!(
                "profpoint_latency_seconds_count{{{n}}} {}",
                p.nr - p.nested
            ));
            rows
        }),
    );
    metric(
        "profpoint_tracepoint_hits_total",
        "counter",
        "Firings of each tracepoint while enabled.",
        &mut r.tracepoints.iter().map(|t| {
            format!(
                "profpoint_tracepoint_hits_total{{tracepoint=\"{}\"}} {}",
                label(&t.name),
                t.hits
            )
        }),
    );
    o
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(label("x\ny"), "x\\ny");
    }
}
