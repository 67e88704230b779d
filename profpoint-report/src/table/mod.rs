//! The points table of the Lego kernel's profile points, in text: status, name, total, nr, avg,
//! plus the columns a user needs next (self, p50, p99, max, share of wall time).

use crate::model::{BudgetOver, BudgetReport, CountingOver, CountingShare, PointReport, Report};
use std::io::{self, Write};

/// Writes the points table of `report` to `w`.
///
/// Layout: a header line (clock, overhead, wall time), the column titles, one row per point
/// sorted by total time, and a footer that explains the marks used in the rows.
pub fn write_table(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let names = shown_names(&report.points);
    let name_w = names
        .iter()
        .map(|n| n.chars().count() + 2)
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
            ", set-up {:.3} ms in {} first-use calls (a thread's first call of a point or of a call path; outside every interval)",
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
    if report.slots.cap_reached {
        writeln!(
            w,
            "slot memory reached its cap of {} MiB (PROFPOINT_MAX_SLOT_MB): {} calls of points \
             first used on a thread after that are in no row below",
            report.slots.cap_bytes >> 20,
            report.slots.unrecorded_calls
        )?;
    }
    // The memory columns, only when the counting allocator was the program's.
    let mem = report.alloc.is_some();
    let mut rule = format!(
        "{:->7}  {:-<name_w$}  {:->15}  {:->15}  {:->12}  {:->10}  {:->10}  {:->10}  {:->12}  {:->6}",
        "", "", "", "", "", "", "", "", "", ""
    );
    if mem {
        rule.push_str(&format!(
            "  {:->12}  {:->14}  {:->12}  {:->14}",
            "", "", "", ""
        ));
    }
    write!(
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
    if mem {
        write!(
            w,
            "  {:>12}  {:>14}  {:>12}  {:>14}",
            "allocs", "alloc.bytes", "frees", "held.bytes"
        )?;
    }
    writeln!(w)?;
    writeln!(w, "{rule}")?;
    let mut marks = Marks::default();
    for (p, name) in report.points.iter().zip(&names) {
        let mark = marks.of(p);
        write!(
            w,
            "{:>7}  {:<name_w$}  {:>15}  {:>15}  {:>12}  {:>10}  {:>10}  {:>10}  {:>12}  {:>6.2}",
            status(p, &report.budget),
            format!("{name}{mark}"),
            time(p, p.total_ns),
            p.self_ns.map_or_else(|| "-".to_string(), |ns| time(p, ns)),
            calls(p),
            p.avg_ns,
            p.p50_ns,
            p.p99_ns,
            p.max_ns,
            p.wall_percent,
        )?;
        if mem {
            write_alloc_cells(&p.alloc.unwrap_or_default(), w)?;
        }
        writeln!(w)?;
    }
    writeln!(w, "{rule}")?;
    let never = report.points.iter().filter(|p| p.nr == 0).count();
    writeln!(
        w,
        "{} points ({} never hit). avg.ns = total / timed calls; self = total minus points nested inside.",
        report.points.len(),
        never
    )?;
    if report.points.iter().any(|p| p.wall_percent > 100.0) {
        writeln!(
            w,
            " %wall = total / the run's wall time: above 100 where several threads ran the point at once (their times add up)"
        )?;
    }
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
            " ~ sampled timing: every call counted, one outermost call in N timed; times are estimates\n   (in the self time of the points around it, an untimed call counts as its point's mean timed\n   call so far)"
        )?;
    }
    if marks.uncertain {
        writeln!(
            w,
            " ? an estimate whose 95% interval is wider than itself: listed after the others, its order unknown"
        )?;
    }
    if let Some(a) = &report.alloc {
        let o = &a.outside;
        writeln!(
            w,
            " allocs, frees = self (made while the point was the innermost active one); held.bytes = \
             made by the point, not yet freed anywhere (each block also carries {} bytes of header)",
            a.header_bytes
        )?;
        writeln!(
            w,
            " outside any point: {} allocs, {} bytes, {} frees, {} bytes held",
            o.allocs, o.alloc_bytes, o.frees, o.held_bytes
        )?;
    }
    write_idle(report, w)?;
    write_budget(report, w)?;
    write_sampled_self(report, w)?;
    write_interval(report, w)?;
    write_tracepoints(report, w)?;
    #[cfg(feature = "heatmap")]
    if let Some(h) = &report.heatmap {
        writeln!(w)?;
        h.write_table(w)?;
        if h.by == crate::heatmap::By::Function
            && report
                .points
                .iter()
                .any(|p| p.sampled_self.is_some_and(|n| n > 0))
        {
            writeln!(w, "{BY_FUNCTION_VS_SAMPLED_SELF}")?;
        }
    }
    #[cfg(feature = "heatmap")]
    if let Some(p) = &report.pmu {
        writeln!(w)?;
        p.write_table(w)?;
    }
    Ok(())
}

/// A point's memory cells (the counting allocator's columns).
fn write_alloc_cells(a: &crate::model::AllocStats, w: &mut dyn Write) -> io::Result<()> {
    write!(
        w,
        "  {:>12}  {:>14}  {:>12}  {:>14}",
        a.allocs, a.alloc_bytes, a.frees, a.held_bytes
    )
}

/// Under the heatmap's by-function table, when the stacks' self time is shown above it: why the
/// two need not agree. A row counts the samples whose pc is in its symbol's code, so an
/// annotated function inlined into `main` counts for `main`, and the functions it calls (the
/// vDSO's `clock_gettime`, libc's `memcmp`) for themselves.
#[cfg(feature = "heatmap")]
const BY_FUNCTION_VS_SAMPLED_SELF: &str = "note: a row counts a sample for the symbol holding its \
     pc, so code inlined into a function (an annotated one's too) counts for it and callees (the \
     vDSO's clock_gettime, libc) for themselves; the stacks' self time above counts both for the \
     innermost annotated function on the stack";

/// The points whose calls were made in segments and waited between them (`tracing` spans over
/// futures: `PointReport::idle_ns`): their busy time (the row's total) beside their idle time,
/// one line each; nothing when no point has idle time.
fn write_idle(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let mut idle: Vec<&PointReport> = report.points.iter().filter(|p| p.idle_ns > 0).collect();
    if idle.is_empty() {
        return Ok(());
    }
    idle.sort_by(|a, b| b.idle_ns.cmp(&a.idle_ns).then(a.name.cmp(&b.name)));
    writeln!(w)?;
    writeln!(
        w,
        "Idle time (calls alive between their segments, not entered: async spans waiting to be \
         polled; busy = the row's total):"
    )?;
    for p in idle {
        writeln!(
            w,
            "  {:>15} idle  {:>15} busy  {:>12} calls  {}",
            secs(p.idle_ns, false),
            secs(p.total_ns, p.estimated),
            p.nr,
            escape(&p.name)
        )?;
    }
    Ok(())
}

/// Whether a point's count is a lower bound: calls went unseen in bursts and too few of its
/// count windows saw a call to estimate them (its times then hold the seen calls' only).
fn lower_bound(p: &PointReport) -> bool {
    p.nr_estimated && p.nr_ci95.is_none()
}

/// A point's time `ns` as the points table shows it: `~` when estimated, `≥` when its count is
/// a lower bound (the seen calls' time).
fn time(p: &PointReport, ns: u64) -> String {
    if lower_bound(p) {
        format!("≥{}", secs(ns, false))
    } else {
        secs(ns, p.estimated)
    }
}

/// A point's calls as the table shows them: exact as they are, `~N` when some were estimated
/// between bursts, `≥N` when some went unseen and too few windows saw a call to estimate them.
fn calls(p: &PointReport) -> String {
    if p.nr_ci95.is_some() {
        format!("~{}", p.nr)
    } else if lower_bound(p) {
        format!("≥{}", p.nr)
    } else {
        p.nr.to_string()
    }
}

/// The points' self time as the sampler's stacks saw it (`PointReport::sampled_self`), when
/// it ran with them: the ten with most samples.
fn write_sampled_self(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let mut sampled: Vec<(&PointReport, u64)> = report
        .points
        .iter()
        .filter_map(|p| Some((p, p.sampled_self?)))
        .filter(|&(_, n)| n > 0)
        .collect();
    if sampled.is_empty() {
        return Ok(());
    }
    sampled.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name.cmp(&b.0.name)));
    let all: u64 = sampled.iter().map(|&(_, n)| n).sum();
    writeln!(w)?;
    writeln!(
        w,
        "Self time from the sampler's stacks ({all} samples in points' own code; a sample counts \
         for its innermost annotated function, so no point's per-call cost is in another's):"
    )?;
    for (p, n) in sampled.iter().take(10) {
        writeln!(
            w,
            "  {:>6.2}%  {:>8}  {}",
            100.0 * *n as f64 / all as f64,
            n,
            p.name
        )?;
    }
    Ok(())
}

/// A point's status column: `on`, `off`, `count`, `1/N` when one call in N is timed, or
/// `burst` for a point the budget times in bursts (off between them, as its own status says:
/// the budget's section and this column say the same).
fn status(p: &PointReport, budget: &BudgetReport) -> String {
    if budget
        .throttled
        .iter()
        .any(|t| t.now == "burst" && t.point == p.name)
    {
        return "burst".into();
    }
    match (p.enabled, p.sampling) {
        (false, _) => "off".into(),
        (true, Some(0)) => "count".into(),
        (true, Some(n)) if n > 1 && n < 100_000 => format!("1/{n}"),
        (true, Some(n)) if n > 1 => format!("1/2^{}", n.ilog2()),
        (true, _) => "on".into(),
    }
}

/// The interval of a periodic report (`PROFPOINT_REPORT_EVERY`): the points called since the
/// previous one.
fn write_interval(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let Some(iv) = &report.interval else {
        return Ok(());
    };
    writeln!(w)?;
    writeln!(
        w,
        "Interval {}: {:.3} s to {:.3} s ({:.3} s), {} points called",
        iv.seq,
        iv.from_ns as f64 / 1e9,
        iv.to_ns as f64 / 1e9,
        iv.to_ns.saturating_sub(iv.from_ns) as f64 / 1e9,
        iv.points.len()
    )?;
    if iv.points.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "{:>12} {:>14} {:>12} {:>14}  name",
        "nr", "total.s", "avg.ns", "self.s"
    )?;
    for p in &iv.points {
        writeln!(
            w,
            "{:>12} {:>14.9} {:>12} {:>14}  {}",
            p.nr,
            p.total_ns as f64 / 1e9,
            p.avg_ns,
            p.self_ns
                .map_or_else(|| "-".to_string(), |ns| format!("{:.9}", ns as f64 / 1e9)),
            escape(&p.name),
        )?;
    }
    Ok(())
}

/// The overhead budget's section: the points it throttled (nothing when it throttled none).
fn write_budget(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let b = &report.budget;
    if let Some(note) = &b.note {
        writeln!(w, "overhead budget: {note}")?;
    }
    if let Some(over) = &b.counting_over {
        write_counting_over(b, over, w)?;
    }
    if let Some(over) = &b.over {
        write_over(b, over, w)?;
    }
    if b.throttled.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "Overhead budget {}: the points cost {:.2}% of the CPU time ({} rounds; a call costs {:.1} ns timed, {:.1} ns sampled and untimed, {:.1} ns counted)",
        b.percent
            .map_or_else(|| "off".to_string(), |p| format!("{p}% of CPU time")),
        b.cost_percent,
        b.rounds,
        b.cost_timed_ns,
        b.cost_skipped_ns,
        b.cost_counted_ns
    )?;
    if let Some(ns) = b.cost_timed_in_context_ns {
        writeln!(
            w,
            "A timed call costs {ns:.1} ns in this program, as the bursts measured it (the calibration loop's: {:.1} ns); compensation takes that out of the intervals around each timed call, at most twice the calibration's figure",
            b.cost_timed_ns
        )?;
    }
    // How far to trust the order of the self times: compensation leaves a residue per nested
    // call that differs by callee (docs/budget.md, "What the residue is made of"); the
    // sampler's stacks have none.
    let order = if report.points.iter().any(|p| p.sampled_self.is_some()) {
        "; for their order, see \"Self time from the sampler's stacks\" below"
    } else {
        ", so points of similar self time may rank out of order; PROFPOINT_HEATMAP=1 adds each point's self time from the sampler's stacks, which has none"
    };
    writeln!(
        w,
        "Self times of these points and of their callers are estimates: a throttled parent's is its total (its mean call timed alone in the isolation windows, times its calls) less its children's, a thin wrapper's the small difference of two such means; the others' carry compensation's residue (a few to tens of ns per nested annotated call){order}"
    )?;
    let name_w = b
        .throttled
        .iter()
        .map(|t| t.point.chars().count())
        .max()
        .unwrap_or(4)
        .max(16);
    writeln!(
        w,
        "{:>7}  {:>7}  {:>7}  {:>9}  {:>9}  {:>9}  {:<name_w$}",
        "now", "worst", "changes", "first(s)", "calls±95%", "total±95%", "name"
    )?;
    for t in &b.throttled {
        let row = report.points.iter().find(|p| p.name == t.point);
        // The count's interval where calls between bursts were estimated; "exact" otherwise.
        let calls = row.map_or_else(
            || "-".to_string(),
            |p| match p.nr_ci95 {
                Some(ci) if p.nr > 0 => format!("±{:.1}%", 100.0 * ci as f64 / p.nr as f64),
                Some(_) => "-".to_string(),
                None if p.nr_estimated => "at least".to_string(),
                None => "exact".to_string(),
            },
        );
        let ci = row.filter(|p| p.total_ns > 0).map_or_else(
            || "-".to_string(),
            |p| {
                if lower_bound(p) {
                    "at least".to_string()
                } else {
                    format!(
                        "±{:.1}%",
                        100.0 * p.total_ci95_ns as f64 / p.total_ns as f64
                    )
                }
            },
        );
        let worst = if t.worst == "off" {
            format!("off@{:.0}/s", t.off_calls_per_s)
        } else {
            t.worst.clone()
        };
        writeln!(
            w,
            "{:>7}  {:>7}  {:>7}  {:>9.3}  {:>9}  {:>9}  {:<name_w$}",
            t.now,
            worst,
            t.changes,
            t.first_at_s,
            calls,
            ci,
            escape(&t.point)
        )?;
    }
    let counts = if b.throttled.iter().any(|t| t.worst == "burst") {
        "counts stay exact but for points in bursts (estimated between them: ~ in the nr column, calls±95% here; ≥ where too few windows saw a call)"
    } else {
        "every count is exact"
    };
    writeln!(
        w,
        "{} points throttled to keep profpoint's cost under the budget (PROFPOINT_BUDGET); {counts}; every change is in the JSON report",
        b.throttled.len()
    )?;
    if let Some(ws) = &b.wall_sampler {
        writeln!(
            w,
            "Times of points timed one call in N are the wall sampler's (each thread's current point read every {} ms by the budget's thread, no signal): {} samples over {:.3} s, {:.1} ms of its own CPU",
            ws.period_ns as f64 / 1e6,
            ws.samples,
            ws.periods as f64 * ws.period_ns as f64 / 1e9,
            ws.own_ms
        )?;
    }
    Ok(())
}

/// One line: counting alone cost more than the budget, who made it, and the knobs.
fn write_counting_over(b: &BudgetReport, over: &CountingOver, w: &mut dyn Write) -> io::Result<()> {
    let knob = if b.bursts_allowed {
        "PROFPOINT_DISABLE for them would help"
    } else {
        "PROFPOINT_DISABLE for them, or PROFPOINT_BUDGET=<percent>,bursts (their calls then estimated), would help"
    };
    writeln!(w)?;
    writeln!(
        w,
        "Counting alone cost {:.1}% of the CPU time, over the budget of {}; every call is still counted. Most of it: {}; {knob}",
        over.percent,
        b.percent
            .map_or_else(|| "off".to_string(), |p| format!("{p}%")),
        named(&over.points)
    )
}

/// One line: the points cost more than the budget, how that cost was paid, who made it, and
/// the knobs.
fn write_over(b: &BudgetReport, over: &BudgetOver, w: &mut dyn Write) -> io::Result<()> {
    let parts: Vec<String> = over
        .parts
        .iter()
        .map(|p| format!("{:.2}% {}", p.percent, p.part))
        .collect();
    let why = if over.why.is_empty() {
        String::new()
    } else {
        format!(" ({})", over.why)
    };
    writeln!(w)?;
    writeln!(
        w,
        "The points cost {:.2}% of the CPU time, over the budget of {}: {}{why}. Most of it: {}; PROFPOINT_DISABLE for them, or a larger budget, would help",
        b.cost_percent,
        b.percent
            .map_or_else(|| "off".to_string(), |p| format!("{p}%")),
        parts.join(", "),
        named(&over.points)
    )
}

/// Points with their shares of a cost: `a (60%), b (30%)`.
fn named(points: &[CountingShare]) -> String {
    let names: Vec<String> = points
        .iter()
        .map(|s| format!("{} ({:.0}%)", escape(&s.point), 100.0 * s.share))
        .collect();
    names.join(", ")
}

/// The tracepoints section: every tracepoint that is enabled, was hit or could not be switched
/// (all of them are in the JSON report); each refusal is a line of its own under the table.
fn write_tracepoints(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<_> = report
        .tracepoints
        .iter()
        .filter(|t| t.enabled || t.hits > 0 || t.error.is_some() || t.probe_panics > 0)
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
    for t in report.tracepoints.iter().filter(|t| t.error.is_some()) {
        let e = t.error.as_deref().unwrap_or_default();
        writeln!(w, "tracepoint {} {}", escape(&t.name), escape(e))?;
    }
    for t in report.tracepoints.iter().filter(|t| t.probe_panics > 0) {
        writeln!(
            w,
            "tracepoint {}: its probes panicked {} times (each caught; the program went on)",
            escape(&t.name),
            t.probe_panics
        )?;
    }
    Ok(())
}

/// The names as the table prints them: control characters escaped (a name from
/// `define_profile_point!` is any `&str`, and a newline would split its row), and `file:line`
/// added to names that more than one point has, so every row says which point it is.
fn shown_names(points: &[PointReport]) -> Vec<String> {
    let escaped: Vec<String> = points.iter().map(|p| escape(&p.name)).collect();
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    for n in &escaped {
        *seen.entry(n.as_str()).or_default() += 1;
    }
    escaped
        .iter()
        .zip(points)
        .map(|(n, p)| {
            if seen[n.as_str()] > 1 {
                format!("{n} ({}:{})", p.file, p.line)
            } else {
                n.clone()
            }
        })
        .collect()
}

/// `name` with its control characters escaped as Rust writes them: `\n`, `\t`, `\x1b`.
pub(crate) fn escape(name: &str) -> String {
    if !name.chars().any(char::is_control) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && u32::from(c) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Which footnotes the rows used.
#[derive(Default)]
struct Marks {
    recursive: bool,
    asynchronous: bool,
    sampled: bool,
    uncertain: bool,
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
        if p.uncertain() {
            self.uncertain = true;
            m.push_str(" ?");
        }
        m
    }
}

/// Seconds with 9 decimals, as the Lego kernel's table prints them; `~` marks an estimate.
fn secs(ns: u64, estimated: bool) -> String {
    format!(
        "{}{}.{:09}",
        if estimated { "~" } else { "" },
        ns / 1_000_000_000,
        ns % 1_000_000_000
    )
}

// The renderer's method on the model lives with the renderer: the model names no renderer.
impl Report {
    /// The Lego kernel's points table, with the extra columns; see [`write_table`].
    pub fn to_table(&self) -> String {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        write_table(self, &mut out).expect("writing to memory");
        String::from_utf8_lossy(&out).into_owned()
    }
}

#[cfg(test)]
mod tests;
