//! The points as an SVG bar chart: one row per point called, longest total first; a light bar
//! for its total time with its self time as a dark bar inside it, on a time axis drawn above
//! and below the rows (ticks with their unit, gridlines), and the figures beside each bar.
//! Self-contained (no script, no external style, no font file), so it opens in any browser and
//! embeds in a page or a CI artefact.
//!
//! # Layout
//! Text is monospace at 12 px, so its width is known without measuring it: about 0.6 em a
//! character (DejaVu Sans Mono, Liberation Mono and Courier all advance 0.6 em). Every column is
//! as wide as its longest text, and text that would pass a column's edge is shortened instead:
//! a name longer than [`NAME_CHARS`] keeps its end (the function, `…` for the rest), the whole
//! name staying in the row's tooltip. Rows are [`ROW`] px apart whatever the number of points,
//! so 500 points are as legible as 10 (the picture grows, the text does not shrink); the axis
//! is repeated under the last row so a long chart has one in view at either end.
//! `scripts/render-svg` renders it in headless Chromium and checks, with the browser's own text
//! boxes, that no two labels overlap and none leaves the picture.

use crate::model::Report;
use std::fmt::Write;

/// Escapes text for XML content and attribute values.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Font size of every label, px.
const FONT_PX: f64 = 12.0;
/// Advance of one monospace character at [`FONT_PX`], px (0.6 em, rounded up).
const CHAR_PX: f64 = 7.3;
/// Distance between two rows, px: the font's line plus room between bars.
const ROW: f64 = 20.0;
/// The longest name shown whole; longer ones keep their last characters.
const NAME_CHARS: usize = 64;
/// Width of the bars' area, px.
const BAR_W: f64 = 480.0;
/// Space between columns and around the picture, px.
const GAP: f64 = 12.0;
/// Height of an axis: tick marks and their labels, px.
const AXIS_H: f64 = 28.0;
/// The names' column header.
const NAME_HEADER: &str = "point";
/// The figures' column header.
const FIG_HEADER: &str = "total, self, calls";
/// The total-time bar's colour (light blue).
const TOTAL_FILL: &str = "#9ecae1";
/// The self-time bar's colour (dark blue), drawn over the total's.
const SELF_FILL: &str = "#3182bd";

/// `n` with thousands separators.
fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `"1 call"`, `"2 calls"`.
fn calls(n: u64) -> String {
    if n == 1 {
        "1 call".into()
    } else {
        format!("{} calls", count(n))
    }
}

/// The time unit a value of `ns` reads best in: (name, nanoseconds per unit).
fn unit(ns: f64) -> (&'static str, f64) {
    if ns >= 1e9 {
        ("s", 1e9)
    } else if ns >= 1e6 {
        ("ms", 1e6)
    } else if ns >= 1e3 {
        ("µs", 1e3)
    } else {
        ("ns", 1.0)
    }
}

/// A duration with three significant digits and its unit: `24.6 ms`, `812 µs`, `3 ns`.
fn dur(ns: u64) -> String {
    let ns = ns as f64;
    let (u, per) = unit(ns);
    let v = ns / per;
    let digits = if per == 1.0 || v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {u}")
}

/// The axis: a step of 1, 2 or 5 times a power of ten giving at most 6 intervals up to
/// `longest`, and the axis's end (a whole number of steps at or past `longest`).
fn ticks(longest: u64) -> (f64, f64) {
    let longest = longest.max(1) as f64;
    let raw = longest / 6.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * pow)
        .find(|s| longest / s <= 6.0)
        .unwrap_or(10.0 * pow)
        .max(1.0);
    (step, (longest / step).ceil() * step)
}

/// A tick's label, in the unit the axis's `end` reads best in, with as many decimals as the
/// `step` needs: `0 s`, `0.5 s`, ... `3.0 s`; `0 ms`, `20 ms`, ... `100 ms`.
fn tick_label(v: f64, step: f64, end: f64) -> String {
    let (u, per) = unit(end);
    let s = step / per;
    let digits = if s.fract() == 0.0 {
        0
    } else if (s * 10.0).fract() == 0.0 {
        1
    } else {
        2
    };
    if v == 0.0 {
        return format!("0 {u}");
    }
    format!("{:.digits$} {u}", v / per)
}

/// Width in px of `s` at [`FONT_PX`] in monospace.
fn width(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_PX
}

/// `name` shortened to [`NAME_CHARS`]: its end kept, `…` for the rest.
fn short_name(name: &str) -> String {
    let n = name.chars().count();
    if n <= NAME_CHARS {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n - (NAME_CHARS - 1)).collect();
    format!("…{tail}")
}

/// The text beside a bar: total, self (or why there is none), calls.
fn figures(p: &super::PointReport) -> String {
    let est = if p.estimated { "~" } else { "" };
    let selfs = match p.self_ns {
        Some(s) => format!("self {est}{}", dur(s)),
        None => "no self time (async)".into(),
    };
    format!("{est}{}, {selfs}, {}", dur(p.total_ns), calls(p.nr))
}

pub(super) fn render(r: &Report) -> String {
    let points: Vec<_> = r.points.iter().filter(|p| p.nr > 0).collect();
    let names: Vec<String> = points.iter().map(|p| xml(&short_name(&p.name))).collect();
    let figs: Vec<String> = points.iter().map(|p| figures(p)).collect();
    let longest = points.iter().map(|p| p.total_ns).max().unwrap_or(0);
    let (step, end) = ticks(longest);
    let title = format!(
        "Profile points: time of each point, {} of {} called (wall time {})",
        points.len(),
        r.points.len(),
        dur(r.wall_ns)
    );
    let legend_total = "total time (outermost calls)";
    let legend_self = "self time (minus the points nested in it)";
    let legend_w = 14.0 + 6.0 + width(legend_total) + 24.0 + 14.0 + 6.0 + width(legend_self);
    // Columns: names (right-aligned), bars, figures.
    let name_w = points
        .iter()
        .map(|p| short_name(&p.name).chars().count())
        .max()
        .unwrap_or(0)
        .max(NAME_HEADER.len() + 2) as f64
        * CHAR_PX;
    let fig_w = figs
        .iter()
        .map(|f| width(f))
        .fold(width(FIG_HEADER), f64::max);
    let bar_x = GAP + name_w + GAP;
    // The last tick's label is centred on the axis's end: the figures start past its half.
    let last_tick = width(&tick_label(end, step, end));
    let fig_x = bar_x + BAR_W + (last_tick / 2.0).ceil() + GAP;
    let w = (fig_x + fig_w + GAP)
        .max(GAP + width(&title).max(legend_w) + GAP)
        .ceil();
    let top = 48.0; // title and legend
    let rows_y = top + AXIS_H;
    let rows_h = ROW * points.len() as f64;
    let h = (rows_y + rows_h + AXIS_H + GAP).ceil();
    let mut o = String::new();
    let scale = |ns: f64| BAR_W * ns / end;
    // Writing into a String cannot fail.
    let _ = writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans Mono, Liberation Mono, Menlo, Consolas, monospace" font-size="{FONT_PX}">"#
    );
    let _ = writeln!(o, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let _ = writeln!(
        o,
        r#"<text x="{GAP}" y="18" font-weight="bold">{}</text>"#,
        xml(&title)
    );
    // The legend: a swatch of each bar's colour and what it shows.
    let self_x = GAP + 20.0 + width(legend_total) + 24.0;
    let _ = writeln!(
        o,
        r##"<g class="legend"><rect x="{GAP}" y="29" width="14" height="11" fill="{TOTAL_FILL}"/><text x="{}" y="38">{legend_total}</text><rect x="{self_x}" y="29" width="14" height="11" fill="{SELF_FILL}"/><text x="{}" y="38">{legend_self}</text></g>"##,
        GAP + 20.0,
        self_x + 20.0
    );
    // The axes above and below the rows, and the gridlines between them.
    let n_ticks = (end / step).round() as u64;
    let axis = |o: &mut String, y: f64, labels_below: bool| {
        let _ = writeln!(
            o,
            r##"<line x1="{bar_x}" y1="{y}" x2="{}" y2="{y}" stroke="#444444"/>"##,
            bar_x + BAR_W
        );
        for i in 0..=n_ticks {
            let v = step * i as f64;
            let x = bar_x + scale(v);
            let (t1, t2, ty) = if labels_below {
                (y, y + 4.0, y + 17.0)
            } else {
                (y - 4.0, y, y - 8.0)
            };
            let _ = writeln!(
                o,
                r##"<line x1="{x:.1}" y1="{t1}" x2="{x:.1}" y2="{t2}" stroke="#444444"/><text class="tick" x="{x:.1}" y="{ty}" text-anchor="middle">{}</text>"##,
                xml(&tick_label(v, step, end))
            );
        }
    };
    // Every other row shaded, so the eye follows a row from its name across to its figures.
    for i in (1..points.len()).step_by(2) {
        let _ = writeln!(
            o,
            r##"<rect x="{GAP}" y="{:.1}" width="{:.1}" height="{ROW}" fill="#f2f2f2"/>"##,
            rows_y + ROW * i as f64,
            w - 2.0 * GAP
        );
    }
    // Column headers, on the upper axis's line.
    let _ = writeln!(
        o,
        r##"<g class="headers" fill="#444444"><text x="{}" y="{:.1}" text-anchor="end">{NAME_HEADER}</text><text x="{fig_x}" y="{:.1}">{FIG_HEADER}</text></g>"##,
        bar_x - GAP - 2.0 * CHAR_PX,
        rows_y - 10.0,
        rows_y - 10.0
    );
    let _ = writeln!(o, r#"<g class="axis">"#);
    axis(&mut o, rows_y - 2.0, false);
    axis(&mut o, rows_y + rows_h + 2.0, true);
    for i in 1..=n_ticks {
        let x = bar_x + scale(step * i as f64);
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{rows_y}" x2="{x:.1}" y2="{}" stroke="#dddddd"/>"##,
            rows_y + rows_h
        );
    }
    let _ = writeln!(o, "</g>");
    for (i, p) in points.iter().enumerate() {
        let y = rows_y + ROW * i as f64;
        let base = y + ROW / 2.0 + FONT_PX * 0.35; // the text's baseline, centred in the row
        let tw = scale(p.total_ns as f64).max(1.0);
        let sw = p.self_ns.map_or(0.0, |s| scale(s.min(p.total_ns) as f64));
        let self_txt = p
            .self_ns
            .map_or_else(|| "none (async)".into(), |s| format!("{} ns", count(s)));
        let _ = writeln!(
            o,
            r#"<g class="point"><title>{}: total {} ns, self {self_txt}, {}, avg {} ns, p99 {} ns{}</title>"#,
            xml(&p.name),
            count(p.total_ns),
            calls(p.nr),
            count(p.avg_ns),
            count(p.p99_ns),
            if p.estimated { " (estimated)" } else { "" }
        );
        let _ = writeln!(
            o,
            r#"<text class="name" x="{}" y="{base:.1}" text-anchor="end">{}</text>"#,
            bar_x - GAP,
            names[i]
        );
        let _ = writeln!(
            o,
            r##"<rect class="total" x="{bar_x}" y="{:.1}" width="{tw:.1}" height="{:.1}" fill="{TOTAL_FILL}"/>"##,
            y + 3.0,
            ROW - 6.0
        );
        if p.self_ns.is_some() {
            let _ = writeln!(
                o,
                r##"<rect class="self" x="{bar_x}" y="{:.1}" width="{sw:.1}" height="{:.1}" fill="{SELF_FILL}"/>"##,
                y + 3.0,
                ROW - 6.0
            );
        }
        let _ = writeln!(
            o,
            r#"<text class="figures" x="{fig_x}" y="{base:.1}">{}</text></g>"#,
            xml(&figs[i])
        );
    }
    let _ = writeln!(o, "</svg>");
    o
}

// The renderer's method on the model lives with the renderer: the model names no renderer.
impl Report {
    /// The points as a self-contained SVG bar chart: total and self time per point on a time
    /// axis with units, the figures beside each bar.
    pub fn to_svg(&self) -> String {
        render(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(xml(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
    }

    #[test]
    fn one_call_is_singular() {
        assert_eq!(calls(1), "1 call");
        assert_eq!(calls(0), "0 calls");
        assert_eq!(calls(1234567), "1,234,567 calls");
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(dur(3), "3 ns");
        assert_eq!(dur(812_000), "812 µs");
        assert_eq!(dur(24_565_055), "24.6 ms");
        assert_eq!(dur(1_500_000_000), "1.50 s");
    }

    #[test]
    fn the_axis_ends_on_a_tick_past_the_longest_bar() {
        for longest in [1, 7, 999, 24_565_055, 3_000_000_000, 123_456_789_012] {
            let (step, end) = ticks(longest);
            assert!(end >= longest as f64, "{longest}");
            assert!((end / step).round() <= 6.0, "{longest}: {step} {end}");
            assert!((end / step).round() >= 1.0, "{longest}: {step} {end}");
        }
        assert_eq!(ticks(24_565_055), (5e6, 25e6));
        assert_eq!(tick_label(10e6, 5e6, 25e6), "10 ms");
        assert_eq!(tick_label(0.0, 5e8, 3e9), "0 s");
        assert_eq!(tick_label(1.5e9, 5e8, 3e9), "1.5 s");
        assert_eq!(tick_label(2e9, 5e8, 3e9), "2.0 s");
    }

    #[test]
    fn a_report_of_no_point_is_a_chart_all_the_same() {
        let svg = render(&Report::empty());
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(svg.contains("0 of 0 called"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn long_names_keep_their_end() {
        let long = format!("{}::the_function", "a".repeat(100));
        let s = short_name(&long);
        assert_eq!(s.chars().count(), NAME_CHARS);
        assert!(s.starts_with('…') && s.ends_with("::the_function"), "{s}");
        assert_eq!(short_name("x::y"), "x::y");
    }
}
