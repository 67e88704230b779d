//! The points as CSV (RFC 4180 quoting), one row per point, for spreadsheets and scripts.

use crate::model::Report;
use std::fmt::Write;

/// The CSV header row, also the field order of every row.
/// Columns are only ever added at the end: a script that reads by position keeps working.
pub(super) const HEADER: &str = "name,enabled,kind,sampling,estimated,nr,timed,nested,total_ns,self_ns,avg_ns,min_ns,max_ns,p50_ns,p90_ns,p99_ns,p999_ns,stddev_ns,wall_percent,file,line,total_ci95_ns,sampled_self,nr_ci95,nr_estimated,idle_ns";

pub(super) fn points_csv(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(HEADER);
    out.push('\n');
    for p in &report.points {
        // Writing into a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4},{},{},{},{},{},{},{}",
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
            p.sampled_self.map_or(String::new(), |n| n.to_string()),
            p.nr_ci95.map_or(String::new(), |n| n.to_string()),
            p.nr_estimated,
            p.idle_ns
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
    fn columns_are_added_at_the_end_and_every_row_has_them_all() {
        let mut r = Report::empty();
        let mut estimated = point("a::sampled", Some(7));
        estimated.nr_ci95 = Some(40);
        estimated.nr_estimated = true;
        estimated.idle_ns = 9;
        r.points = vec![estimated, point("a::not", None)];
        let text = points_csv(&r);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        // The columns of earlier versions keep their places.
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
        assert_eq!((at("total_ci95_ns"), at("sampled_self")), (21, 22));
        assert_eq!(
            header[23..],
            ["nr_ci95", "nr_estimated", "idle_ns"],
            "{text}"
        );
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 2, "{text}");
        for row in &rows {
            assert_eq!(row.len(), header.len(), "{text}");
        }
        assert_eq!(rows[0][0], "a::sampled");
        assert_eq!(rows[0][22..], ["7", "40", "true", "9"]);
        assert_eq!(rows[1][0], "a::not");
        assert_eq!(rows[1][22..], ["", "", "false", "0"]);
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a::b"), "a::b");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
