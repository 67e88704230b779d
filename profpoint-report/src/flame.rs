//! Flame graphs as SVG, drawn by `inferno` from folded stacks (`folded.rs`): the same
//! drawing as `inferno-flamegraph` and `cargo flamegraph` (search, zoom, tooltips in the SVG's
//! own script). Pure functions of the model: colours are derived from the frame names, not
//! drawn at random, so a report renders to the same bytes every time.

use crate::folded::StackSource;
use crate::model::Report;

/// A flame graph of folded stacks (`root;caller;leaf COUNT` lines). `title` heads the image;
/// `count_name` names the counts in tooltips (`samples`, `ns`). An empty input gives inferno's
/// "no stack counts found" image (a valid SVG that says so).
pub fn flame_svg(folded: &str, title: &str, count_name: &str) -> String {
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.count_name = count_name.to_string();
    // Colour by a hash of the name, not at random: the same report, the same bytes.
    opt.hash = true;
    opt.deterministic = true;
    let mut out = Vec::new();
    let lines = folded.lines();
    // inferno writes into a Vec, which does not fail; an error is its "no stacks" case.
    if let Err(e) = inferno::flamegraph::from_lines(&mut opt, lines, &mut out) {
        out.clear();
        return format!(
            "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"1200\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"30\">{}: {}</text></svg>\n",
            xml_text(title),
            xml_text(&e.to_string())
        );
    }
    String::from_utf8(out).unwrap_or_default()
}

fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Report {
    /// A flame graph of `source` (see [`Report::stack_source`]).
    pub fn flame_svg_of(&self, source: StackSource) -> String {
        let (title, unit) = match source {
            StackSource::Sampled => ("profpoint: sampled stacks", "samples"),
            StackSource::Points => ("profpoint: points tree (self time)", "ns"),
        };
        flame_svg(&self.folded_of(source), title, unit)
    }

    /// A flame graph of the sampled stacks when the report has them, else of the points tree.
    pub fn flame_svg(&self) -> String {
        self.flame_svg_of(self.stack_source().unwrap_or(StackSource::Points))
    }

    /// A flame graph of the points tree, whatever else the report holds.
    pub fn points_flame_svg(&self) -> String {
        self.flame_svg_of(StackSource::Points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::folded::tests::tree;
    use crate::folded::{FoldedValue, points_folded};

    /// The `<title>` texts of the SVG's frames (inferno writes `NAME (COUNT UNIT, P%)`).
    fn titles(svg: &str) -> Vec<&str> {
        svg.split("<title>")
            .skip(1)
            .filter_map(|t| t.split("</title>").next())
            .collect()
    }

    #[test]
    fn inferno_draws_every_path_of_the_points_tree() {
        let svg = flame_svg(&points_folded(&tree(), FoldedValue::SelfNs), "points", "ns");
        assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
        let t = titles(&svg);
        // Frame widths are totals: main = 100 + 50 + 30 + 5 + 40 = 225 ns, parse = 80 ns.
        assert!(t.contains(&"all (225 ns, 100%)"), "{t:?}");
        assert!(t.contains(&"main (225 ns, 100.00%)"), "{t:?}");
        assert!(t.contains(&"parse (80 ns, 35.56%)"), "{t:?}");
        // lex under parse and lex under main: two frames.
        assert_eq!(
            t.iter().filter(|x| x.starts_with("lex (")).count(),
            2,
            "{t:?}"
        );
        // Deterministic: the same report, the same bytes.
        assert_eq!(
            svg,
            flame_svg(&points_folded(&tree(), FoldedValue::SelfNs), "points", "ns")
        );
    }

    #[test]
    fn no_stacks_still_gives_an_svg_that_says_so() {
        let svg = flame_svg("", "points", "ns");
        assert!(svg.contains("<svg") && svg.contains("</svg>"), "{svg}");
    }

    #[cfg(feature = "heatmap")]
    #[test]
    fn a_reports_flame_graph_is_of_its_sampled_stacks_when_it_has_them() {
        use crate::folded::tests::{heat, stacks};
        let mut r = Report::empty();
        r.tree = Some(tree());
        let points = r.flame_svg();
        assert!(titles(&points).contains(&"main (225 ns, 100.00%)"));
        r.heatmap = Some(heat(Some(stacks())));
        let sampled = r.flame_svg();
        let t = titles(&sampled);
        assert!(t.contains(&"caller_a (90 samples, 80.36%)"), "{t:?}");
        assert!(t.contains(&"caller_b (10 samples, 8.93%)"), "{t:?}");
        assert_eq!(r.points_flame_svg(), points);
    }
}
