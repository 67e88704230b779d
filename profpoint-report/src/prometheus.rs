//! The report in the Prometheus text exposition format (version 0.0.4): counters for calls and
//! time, a summary for latency, tracepoint hits. Series carry `point` and `location` labels;
//! names follow Prometheus's conventions (base units: seconds; counters end in `_total`).
//! `promtool check metrics` accepts the output (`profpoint/tests/consumers.rs`). Serve it from
//! a long-running program's metrics endpoint (`profpoint::serve`'s `/metrics`, or your own with
//! `profpoint::snapshot().to_prometheus()`) or write it at exit (`PROFPOINT_REPORT=prom:PATH`).
//!
//! # Counters never go down
//! Between two scrapes of one process a counter must not decrease, or Prometheus takes it for
//! a restart and `rate()` counts the whole value again. Three things move ours down: a point
//! the overhead budget samples or times in bursts has *estimated* calls and times, which a
//! later round can revise down; the clock's calibration is refined at every report, so even an
//! exact time converted to seconds can come out a few nanoseconds lower than a scrape before
//! (`tests/consumers.rs` saw it in every run without this rule); and `profpoint::reset()` makes
//! the reports count from zero.
//! So the counters of a report of the running process itself (its `run.pid` is this process's
//! and it has a start time: `snapshot()`, `/metrics`, the periodic and exit reports) are
//! rendered through one record kept for the process, series by series:
//!
//! - each counter series shows `carried + high`, where `high` is the largest value the reports
//!   gave it since the last reset: an estimate revised down holds the counter level until the
//!   estimate passes its old high again (it is never counted twice);
//! - a reset is seen when a count that is never estimated went down: a point's timed calls, or
//!   the calls of a point that is on and not estimated. Then every series carries its `high` and starts
//!   again from the new value, so calls after the reset add to the counter.
//!
//! The latency summary's `_sum` and `_count` are counters too and follow the same rule; its
//! quantiles are gauges and are not held. What the rule costs: calls made between a scrape
//! and a reset are not in any scrape, and a reset that no exact count shows (every point called
//! more often since the reset than before it) reads as growth, so the counter misses the calls
//! before it. A report of another process (read from a file) is rendered as it is.
//!
//! An async point has no self time: it has no `profpoint_self_seconds_total` series. With the
//! counting allocator installed (`Report::alloc`), `profpoint_allocs_total`,
//! `profpoint_alloc_bytes_total`, `profpoint_freed_bytes_total` and the gauge
//! `profpoint_held_bytes` are there too, and only then.
//! `profpoint_sampled_self_samples_total` is there only when the heatmap ran with stacks
//! (`PointReport::sampled_self`), one series per point it names.

use crate::model::{PointReport, Report};
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Escapes a label value: backslash, double quote and line feed.
pub fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The labels of a point's series: its name, and where it is defined (two points may share a
/// name, e.g. two `profile_scope!("x")`; series must not).
fn labels(p: &PointReport) -> String {
    format!(
        "point=\"{}\",location=\"{}:{}\"",
        label(&p.name),
        label(&p.file),
        p.line
    )
}

/// The counter series, as keys of [`Held`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Metric {
    Calls,
    Time,
    SelfTime,
    SampledSelf,
    LatencySum,
    LatencyCount,
    Hits,
    Allocs,
    AllocBytes,
    FreedBytes,
}

/// What the process's earlier reports showed of each counter series.
#[derive(Debug, Default)]
struct Held {
    /// The process the record is for: its pid and start time.
    run: (u32, u64),
    /// Per series (metric, labels): (carried over resets, highest value since the last reset).
    series: HashMap<(Metric, String), (u64, u64)>,
    /// Per point (labels): its timed calls, and its calls when they were exact.
    exact: HashMap<String, (u64, Option<u64>)>,
}

/// The one record of this process's counters.
static HELD: Mutex<Option<Held>> = Mutex::new(None);

/// The counters of one rendering: a report's raw values in, the values to show out.
struct Counters<'a> {
    /// `None`: the report is not this process's, values are shown as they are.
    held: Option<&'a mut Held>,
    reset: bool,
}

impl Counters<'_> {
    fn value(&mut self, metric: Metric, labels: &str, raw: u64) -> u64 {
        let Some(h) = self.held.as_deref_mut() else {
            return raw;
        };
        let e = h
            .series
            .entry((metric, labels.to_string()))
            .or_insert((0, 0));
        if self.reset {
            e.0 += e.1;
            e.1 = raw;
        } else {
            e.1 = e.1.max(raw);
        }
        e.0 + e.1
    }
}

/// Whether `r` shows a reset since `h`'s last report: an exact count went down. Records the
/// report's exact counts in `h`.
fn saw_reset(h: &mut Held, r: &Report, labels: &[String]) -> bool {
    let mut reset = false;
    for (p, l) in r.points.iter().zip(labels) {
        // A point off now may be in the budget's bursts, its calls between them estimated even
        // before `nr_estimated` says so: only an enabled point's unestimated count is exact
        // (an estimated total does not make it so: a point counted only has an exact count
        // and an estimated total).
        let now = (p.timed, (p.enabled && !p.nr_estimated).then_some(p.nr));
        if let Some(&(timed, nr)) = h.exact.get(l) {
            let calls_down = matches!((nr, now.1), (Some(b), Some(a)) if a < b);
            reset |= p.timed < timed || calls_down;
        }
        h.exact.insert(l.clone(), now);
    }
    reset
}

pub(super) fn render(r: &Report) -> String {
    // Written straight into one buffer, each point's labels escaped once: a scrape of 1,000
    // points is ~1 MB of text (what a live server answers every few seconds).
    let labels: Vec<String> = r.points.iter().map(labels).collect();
    // A poisoned lock: a panic mid-update leaves at worst one series a scrape behind.
    let mut guard = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let this_process = r.run.pid == std::process::id() && r.run.start_unix_ns != 0;
    let mut c = Counters {
        held: None,
        reset: false,
    };
    if this_process {
        let run = (r.run.pid, r.run.start_unix_ns);
        let h = guard.get_or_insert_with(Held::default);
        if h.run != run {
            *h = Held {
                run,
                ..Held::default()
            };
        }
        c.reset = saw_reset(h, r, &labels);
        c.held = Some(h);
    }
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
        "Completed calls of each profile point (estimated for a point timed in bursts).",
    );
    for (p, n) in r.points.iter().zip(&labels) {
        let v = c.value(Metric::Calls, n, p.nr);
        let _ = writeln!(o, "profpoint_calls_total{{{n}}} {v}");
    }
    head(
        &mut o,
        "profpoint_time_seconds_total",
        "counter",
        "Time of the outermost calls of each profile point (estimated under sampled timing).",
    );
    for (p, n) in r.points.iter().zip(&labels) {
        let v = c.value(Metric::Time, n, p.total_ns);
        let _ = writeln!(o, "profpoint_time_seconds_total{{{n}}} {}", secs(v));
    }
    head(
        &mut o,
        "profpoint_self_seconds_total",
        "counter",
        "Time of each profile point minus the points nested inside it (none for an async point).",
    );
    for (p, n) in r.points.iter().zip(&labels) {
        if let Some(ns) = p.self_ns {
            let v = c.value(Metric::SelfTime, n, ns);
            let _ = writeln!(o, "profpoint_self_seconds_total{{{n}}} {}", secs(v));
        }
    }
    // Only with the heatmap's stacks: a family with no series would say nothing.
    if r.points.iter().any(|p| p.sampled_self.is_some()) {
        head(
            &mut o,
            "profpoint_sampled_self_samples_total",
            "counter",
            "Samples of the heatmap's stacks whose innermost annotated function is each point's: its self time as the sampler saw it (no series for a point no frame names, or whose name another point shares).",
        );
        for (p, n) in r.points.iter().zip(&labels) {
            if let Some(samples) = p.sampled_self {
                let v = c.value(Metric::SampledSelf, n, samples);
                let _ = writeln!(o, "profpoint_sampled_self_samples_total{{{n}}} {v}");
            }
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
        let sum = c.value(Metric::LatencySum, n, p.total_ns);
        let _ = writeln!(o, "profpoint_latency_seconds_sum{{{n}}} {}", secs(sum));
        let count = c.value(Metric::LatencyCount, n, p.nr.saturating_sub(p.nested));
        let _ = writeln!(o, "profpoint_latency_seconds_count{{{n}}} {count}");
    }
    if let Some(a) = &r.alloc {
        write_alloc(&mut o, &mut c, r, &labels, a);
    }
    head(
        &mut o,
        "profpoint_tracepoint_hits_total",
        "counter",
        "Firings of each tracepoint while enabled.",
    );
    for t in &r.tracepoints {
        let l = format!("tracepoint=\"{}\"", label(&t.name));
        let v = c.value(Metric::Hits, &l, t.hits);
        let _ = writeln!(o, "profpoint_tracepoint_hits_total{{{l}}} {v}");
    }
    o
}

/// One allocation family: name, type, help, its counter (none for a gauge), its figure.
type Family = (
    &'static str,
    &'static str,
    &'static str,
    Option<Metric>,
    fn(&crate::model::AllocStats) -> u64,
);

/// The counting allocator's families (only when it was installed): allocations and their
/// bytes, bytes freed (counters), bytes still held (a gauge), per point and for the
/// allocations outside any point (`point="(outside any point)"`, no location).
fn write_alloc(
    o: &mut String,
    c: &mut Counters<'_>,
    r: &Report,
    labels: &[String],
    a: &crate::model::AllocReport,
) {
    let outside = "point=\"(outside any point)\",location=\"\"".to_string();
    let rows: Vec<(&str, crate::model::AllocStats)> = r
        .points
        .iter()
        .zip(labels)
        .filter_map(|(p, l)| Some((l.as_str(), p.alloc?)))
        .chain(std::iter::once((outside.as_str(), a.outside)))
        .collect();
    let families: [Family; 4] = [
        (
            "profpoint_allocs_total",
            "counter",
            "Allocations made while each point was the innermost active one (reallocations included).",
            Some(Metric::Allocs),
            |s| s.allocs,
        ),
        (
            "profpoint_alloc_bytes_total",
            "counter",
            "Bytes of those allocations (a reallocation's new size).",
            Some(Metric::AllocBytes),
            |s| s.alloc_bytes,
        ),
        (
            "profpoint_freed_bytes_total",
            "counter",
            "Bytes freed while each point was the innermost active one (a reallocation's old size).",
            Some(Metric::FreedBytes),
            |s| s.freed_bytes,
        ),
        (
            "profpoint_held_bytes",
            "gauge",
            "Bytes of the blocks each point made that no thread has freed.",
            None,
            |s| s.held_bytes,
        ),
    ];
    for (name, kind, help, metric, get) in families {
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} {kind}");
        for (l, s) in &rows {
            let v = match metric {
                Some(m) => c.value(m, l, get(s)),
                None => get(s),
            };
            let _ = writeln!(o, "{name}{{{l}}} {v}");
        }
    }
}

// The renderer's method on the model lives with the renderer: the model names no renderer.
impl Report {
    /// The report in the Prometheus text format: calls and time counters, latency summaries,
    /// tracepoint hits, one series per point (labels `point`, `location`). For a report of the
    /// running process, counters never go down from one call to the next, estimates revised
    /// down and `profpoint::reset()` included (the rule: `prometheus.rs`).
    pub fn to_prometheus(&self) -> String {
        render(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The allocation families appear only in a report with the counting allocator's
    /// section, one series per point that has figures and one for outside any point.
    #[test]
    fn allocation_series_only_with_the_counting_allocator() {
        let mut r = Report::empty();
        r.points = vec![crate::model::test_point("db::query", 1)];
        assert!(!render(&r).contains("alloc"));
        r.points[0].alloc = Some(crate::model::AllocStats {
            allocs: 3,
            alloc_bytes: 300,
            held_bytes: 100,
            ..Default::default()
        });
        let mut a = crate::model::AllocReport::default();
        a.outside.alloc_bytes = 7;
        r.alloc = Some(a);
        let text = render(&r);
        let l = "point=\"db::query\",location=\"src/db.rs:1\"";
        for line in [
            format!("profpoint_allocs_total{{{l}}} 3"),
            format!("profpoint_alloc_bytes_total{{{l}}} 300"),
            format!("profpoint_held_bytes{{{l}}} 100"),
            "profpoint_alloc_bytes_total{point=\"(outside any point)\",location=\"\"} 7".into(),
        ] {
            assert!(text.lines().any(|t| t == line), "{line}\n{text}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(label("x\ny"), "x\\ny");
    }

    #[test]
    fn a_counter_holds_through_a_revision_and_carries_over_a_reset() {
        let mut h = Held::default();
        let mut show = |raw: u64, reset: bool| {
            Counters {
                held: Some(&mut h),
                reset,
            }
            .value(Metric::Calls, "point=\"x\"", raw)
        };
        assert_eq!(show(100, false), 100);
        // An estimate revised down: held.
        assert_eq!(show(90, false), 100);
        assert_eq!(show(95, false), 100);
        // Past its old high: follows it again.
        assert_eq!(show(130, false), 130);
        // A reset: 130 carried, the new count added.
        assert_eq!(show(4, true), 134);
        assert_eq!(show(10, false), 140);
    }
}
