//! The SVG chart read by an XML parser (roxmltree): axes, units and labels that neither
//! overlap nor leave the picture, at 10 and 500 points and on a real run's snapshot.

use super::*;

/// A report of `n` points made from a real one's row (names, calls and times set here): one
/// point called once, one async point (no self time), one with a name longer than a column.
fn report_of(n: usize) -> profpoint::Report {
    work();
    let mut r = profpoint::snapshot();
    let template = r
        .points
        .iter()
        .find(|p| p.name == "consumers::outer")
        .unwrap()
        .clone();
    r.points = (0..n as u64)
        .map(|i| {
            let mut p = template.clone();
            p.name = format!("crate_{}::module::function_{i}", i % 7);
            // Totals from 1 ns to about 3 s, so every unit shows up.
            p.total_ns = 3_000_000_000 >> (i % 32);
            p.self_ns = Some(p.total_ns / 3);
            p.nr = 1 + i * 997;
            p
        })
        .collect();
    r.points[0].nr = 1;
    r.points[1].name = format!("{}::the_function", "very_long_module_path".repeat(8));
    r.points[2].kind = "async".into();
    r.points[2].self_ns = None;
    r.points.sort_by_key(|p| std::cmp::Reverse(p.total_ns));
    r
}

/// One `<text>` of the chart: its box (monospace advance estimated at 0.6 em) and content.
#[derive(Debug)]
struct Label {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
    text: String,
}

/// The chart's labels, parsed with roxmltree; the SVG's width and height.
fn labels(svg: &str) -> (Vec<Label>, f64, f64) {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not XML: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let num = |n: roxmltree::Node<'_, '_>, a: &str| -> Option<f64> {
        n.attribute(a).map(|v| v.parse().unwrap())
    };
    let (w, h) = (num(root, "width").unwrap(), num(root, "height").unwrap());
    let font = num(root, "font-size").unwrap();
    let mut out = Vec::new();
    for t in root.descendants().filter(|n| n.has_tag_name("text")) {
        let text: String = t
            .descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .collect();
        let size = num(t, "font-size").unwrap_or(font);
        let width = text.chars().count() as f64 * size * 0.6;
        let (x, y) = (num(t, "x").unwrap(), num(t, "y").unwrap());
        let x0 = match t.attribute("text-anchor") {
            Some("end") => x - width,
            Some("middle") => x - width / 2.0,
            _ => x,
        };
        // From the ascent to the descent of the font (about 0.8 em above the baseline, 0.2 below).
        out.push(Label {
            x0,
            y0: y - 0.8 * size,
            x1: x0 + width,
            y1: y + 0.2 * size,
            text,
        });
    }
    (out, w, h)
}

/// Checks a chart of the report `r`, and writes it to `$PROFPOINT_SVG_OUT/NAME.svg` for
/// `scripts/render-svg` to render in Chromium.
fn check_svg(name: &str, r: &profpoint::Report) {
    let svg = r.to_svg();
    if let Some(dir) = std::env::var_os("PROFPOINT_SVG_OUT") {
        std::fs::write(Path::new(&dir).join(format!("{name}.svg")), &svg).unwrap();
    }
    let (labels, w, h) = labels(&svg);
    let texts: Vec<&str> = labels.iter().map(|l| l.text.as_str()).collect();
    // Every label inside the picture, no two overlapping.
    for l in &labels {
        assert!(
            l.x0 >= 0.0 && l.y0 >= 0.0 && l.x1 <= w && l.y1 <= h,
            "{name}: outside the {w}x{h} picture: {l:?}"
        );
    }
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            let dx = a.x1.min(b.x1) - a.x0.max(b.x0);
            let dy = a.y1.min(b.y1) - a.y0.max(b.y0);
            assert!(
                !(dx > 0.5 && dy > 0.5),
                "{name}: overlapping labels {a:?} and {b:?}"
            );
        }
    }
    // An axis with units: tick labels are a number and a time unit, from 0.
    let ticks: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| {
            t.split_once(' ').is_some_and(|(v, u)| {
                v.parse::<f64>().is_ok() && ["ns", "µs", "ms", "s"].contains(&u)
            })
        })
        .collect();
    assert!(ticks.len() >= 4, "{name}: no axis with units: {texts:?}");
    assert!(
        ticks.iter().any(|t| t.starts_with("0 ")),
        "{name}: {ticks:?}"
    );
    // Every point called has its name (or its end, when shortened) and its figures.
    let called: Vec<_> = r.points.iter().filter(|p| p.nr > 0).collect();
    for p in &called {
        let shown = texts.iter().any(|t| {
            *t == p.name || (t.starts_with('…') && p.name.ends_with(t.trim_start_matches('…')))
        });
        assert!(shown, "{name}: no label for {}", p.name);
    }
    let figures: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| {
            // A row's figures start with its total (`~` when estimated), not the header.
            (t.ends_with(" call") || t.ends_with(" calls"))
                && t.starts_with(|c: char| c.is_ascii_digit() || c == '~')
        })
        .collect();
    assert_eq!(
        figures.len(),
        called.len(),
        "{name}: figures for every point called"
    );
    for f in &figures {
        assert!(
            !f.contains(" 1 calls") && !f.starts_with("1 calls"),
            "{name}: {f}"
        );
    }
    for p in &called {
        let want = if p.nr == 1 {
            "1 call".to_string()
        } else {
            "calls".to_string()
        };
        assert!(figures.iter().any(|f| f.ends_with(&want)), "{name}: {want}");
    }
    // An async point says it has no self time.
    if called.iter().any(|p| p.self_ns.is_none()) {
        assert!(
            figures.iter().any(|f| f.contains("no self time")),
            "{name}: {figures:?}"
        );
    }
}

/// Called by one test only, once: its row says "1 call" even when every test shares a process.
#[profpoint::profile_point]
fn only_once() {
    std::thread::sleep(Duration::from_millis(1));
}

#[test]
fn svg_chart_of_a_real_run_parses_with_axes_units_and_labels() {
    work();
    only_once();
    let r = profpoint::snapshot();
    check_svg("snapshot", &r);
    let svg = r.to_svg();
    let row = svg
        .lines()
        .skip_while(|l| !l.contains("<title>consumers::svg::only_once:"))
        .take(5)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(row.contains(", 1 call</text>"), "only_once: {row}");
}

#[test]
fn svg_chart_of_10_points_has_legible_labels() {
    check_svg("points-10", &report_of(10));
}

#[test]
fn svg_chart_of_500_points_has_legible_labels() {
    check_svg("points-500", &report_of(500));
}
