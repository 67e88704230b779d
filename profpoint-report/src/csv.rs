//! The points as CSV (RFC 4180 quoting), one row per point, for spreadsheets and scripts.

use crate::model::Report;
use std::fmt::Write;

/// The CSV header row, also the field order of every row.
pub(super) const HEADER: &str = "name,enabled,kind,sampling,estimated,nr,timed,nested,total_ns,self_ns,avg_ns,min_ns,max_ns,p50_ns,p90_ns,p99_ns,p999_ns,stddev_ns,wall_percent,file,line,total_ci95_ns,sampled_self";

pub(super) fn points_csv(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(HEADER);
    out.push('\n');
    for p in &report.points {
        // Writing into a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{},{},{},{}",
            quote(&p.name),
            p.enabled,
            p.kind,
            p.sampling.map_or(String::new(), |n| n.to_string()),
            p.estimated,
            p.nr,
            p.timed,
            p.nested,
            p.total_ns,
            p.self_ns.map_or(String::new(), |n| n.to_string()),
            p.avg_ns,
            p.min_ns,
            p.max_ns,
            p.p50_ns,
            p.p90_ns,
            p.p99_ns,
            p.p999_ns,
            p.stddev_ns,
            p.wall_percent,
            quote(&p.file),
            p.line,
            p.total_ci95_ns,
            p.sampled_self.map_or(String::new(), |n| n.to_string())
        );
    }
    out
}

/// Quotes a field when it holds a comma, a quote or a line break.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

// The renderer's method on the model lives with the renderer: the model names no renderer.
impl Report {
    /// The points as CSV: a header row, then one row per point.
    pub fn to_csv(&self) -> String {
        points_csv(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(name: &str, sampled_self: Option<u64>) -> crate::model::PointReport {
        crate::model::PointReport {
            sampled_self,
            ..crate::model::test_point(name, 3)
        }
    }

    /// The sampler's self time is the last column: its count, or empty where the JSON has
    /// null; every row has the header's number of cells.
    #[test]
    fn sampled_self_is_the_last_column() {
        let mut r = Report::empty();
        r.points = vec![point("a::sampled", Some(7)), point("a::not", None)];
        let text = points_csv(&r);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header.last(), Some(&"sampled_self"));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 2, "{text}");
        for row in &rows {
            assert_eq!(row.len(), header.len(), "{text}");
        }
        assert_eq!((rows[0][0], *rows[0].last().unwrap()), ("a::sampled", "7"));
        assert_eq!((rows[1][0], *rows[1].last().unwrap()), ("a::not", ""));
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a::b"), "a::b");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
