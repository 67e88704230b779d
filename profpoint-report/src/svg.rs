//! The points as an SVG bar chart: one row per point, a bar for its total time with its self
//! time darker inside it, the figures beside it. Self-contained (no script, no external
//! style), so it opens in any browser and embeds in a page or a CI artefact.

use super::Report;
use std::fmt::Write;

/// Escapes text for XML content and attribute values.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const ROW: usize = 22;
const NAME_W: usize = 360;
const BAR_W: usize = 480;
const FIG_W: usize = 260;

pub(super) fn render(r: &Report) -> String {
    let points: Vec<_> = r.points.iter().filter(|p| p.nr > 0).collect();
    let longest = points.iter().map(|p| p.total_ns).max().unwrap_or(0).max(1);
    let height = ROW * (points.len() + 3);
    let width = NAME_W + BAR_W + FIG_W;
    let mut o = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(
        o,
        r#"<text x="4" y="16" font-weight="bold">Profile points: total time (light) and self time (dark), wall {:.3} s</text>"#,
        r.wall_ns as f64 / 1e9
    );
    for (i, p) in points.iter().enumerate() {
        let y = ROW * (i + 1) + 8;
        let tw = (BAR_W as f64 * p.total_ns as f64 / longest as f64).max(1.0);
        // An async point has no self time: no dark bar.
        let self_ns = p.self_ns.unwrap_or(0);
        let sw = (BAR_W as f64 * self_ns.min(p.total_ns) as f64 / longest as f64).max(0.0);
        let name = xml(&p.name);
        let _ = writeln!(
            o,
            r#"<g><title>{name}: total {:.6} s, self {:.6} s, {} calls, avg {} ns, p99 {} ns</title>"#,
            p.total_ns as f64 / 1e9,
            self_ns as f64 / 1e9,
            p.nr,
            p.avg_ns,
            p.p99_ns
        );
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="end">{name}</text>"#,
            NAME_W - 8,
            y + 14
        );
        let _ = writeln!(
            o,
            r##"<rect x="{NAME_W}" y="{}" width="{tw:.1}" height="{}" fill="#9ecae1"/>"##,
            y + 2,
            ROW - 6
        );
        let _ = writeln!(
            o,
            r##"<rect x="{NAME_W}" y="{}" width="{sw:.1}" height="{}" fill="#3182bd"/>"##,
            y + 2,
            ROW - 6
        );
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}">{}{:.6} s  {} calls</text></g>"#,
            NAME_W + BAR_W + 8,
            y + 14,
            if p.estimated { "~" } else { "" },
            p.total_ns as f64 / 1e9,
            p.nr
        );
    }
    let _ = writeln!(o, "</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::xml;

    #[test]
    fn text_is_escaped() {
        assert_eq!(xml(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
