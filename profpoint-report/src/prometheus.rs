//! The report in the Prometheus text exposition format (version 0.0.4): counters for calls and
//! time, a summary for latency, tracepoint hits. Series carry `point` and `location` labels.
//! The latency summary's `_count` is the outermost calls (those whose time `_sum` covers,
//! estimated under sampled timing); estimated sums can move down between scrapes. Serve it from a long-running program's
//! metrics endpoint (`profpoint::snapshot().to_prometheus()`) or write it at exit
//! (`PROFPOINT_REPORT=prom:PATH`).

use super::Report;
use std::fmt::Write;

/// Escapes a label value: backslash, double quote and line feed.
pub fn label(v: &str) -> String {
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
        label(&p.file),
        p.line
    )
}

pub(super) fn render(r: &Report) -> String {
    // Written straight into one buffer, each point's labels escaped once: a scrape of 1,000
    // points is ~1 MB of text (what a live server answers every few seconds).
    let labels: Vec<String> = r.points.iter().map(labels).collect();
    let mut o = String::with_capacity(r.points.len() * 1024 + 1024);
    let secs = |ns: u64| ns as f64 / 1e9;
    // Writing into a String cannot fail.
    let head = |o: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} {kind}");
    };
    head(
        &mut o,
        "profpoint_calls_total",
        "counter",
        "Completed calls of each profile point.",
    );
    for (p, n) in r.points.iter().zip(&labels) {
        let _ = writeln!(o, "profpoint_calls_total{{{n}}} {}", p.nr);
    }
    head(
        &mut o,
        "profpoint_time_seconds_total",
        "counter",
        "Time of the outermost calls of each profile point (estimated under sampled timing).",
    );
    for (p, n) in r.points.iter().zip(&labels) {
        let _ = writeln!(
            o,
            "profpoint_time_seconds_total{{{n}}} {}",
            secs(p.total_ns)
        );
    }
    head(
        &mut o,
        "profpoint_self_seconds_total",
        "counter",
        "Time of each profile point minus the points nested inside it.",
    );
    // An async point has no self time: no series.
    for (p, n) in r.points.iter().zip(&labels) {
        if let Some(ns) = p.self_ns {
            let _ = writeln!(o, "profpoint_self_seconds_total{{{n}}} {}", secs(ns));
        }
    }
    head(
        &mut o,
        "profpoint_latency_seconds",
        "summary",
        "Latency of the timed calls of each profile point (quantiles within about 2%).",
    );
    for (p, n) in r.points.iter().zip(&labels) {
        for (q, v) in [
            (0.5, p.p50_ns),
            (0.9, p.p90_ns),
            (0.99, p.p99_ns),
            (0.999, p.p999_ns),
        ] {
            let _ = writeln!(
                o,
                "profpoint_latency_seconds{{{n},quantile=\"{q}\"}} {}",
                secs(v)
            );
        }
        let _ = writeln!(
            o,
            "profpoint_latency_seconds_sum{{{n}}} {}",
            secs(p.total_ns)
        );
        let _ = writeln!(
            o,
            "profpoint_latency_seconds_count{{{n}}} {}",
            p.nr - p.nested
        );
    }
    head(
        &mut o,
        "profpoint_tracepoint_hits_total",
        "counter",
        "Firings of each tracepoint while enabled.",
    );
    for t in &r.tracepoints {
        let _ = writeln!(
            o,
            "profpoint_tracepoint_hits_total{{tracepoint=\"{}\"}} {}",
            label(&t.name),
            t.hits
        );
    }
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
