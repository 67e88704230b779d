//! What `profpoint top` shows: the rows made from two successive reports (calls per second
//! between them), their order and filter, and the screen drawn from them. No terminal here:
//! the tests draw into ratatui's test backend.

use profpoint_report::Report;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row as TRow, Table};
use std::collections::HashMap;

/// The keys rows are sorted by (the key that selects each, in `top`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortKey {
    /// Total time (`t`).
    Total,
    /// Self time (`s`).
    SelfTime,
    /// Calls (`c`).
    Calls,
    /// p99 of the timed calls (`9`).
    P99,
    /// Calls per second over the last interval (`r`).
    Rate,
    /// Name, A first (`n`).
    Name,
}

impl SortKey {
    /// `--sort`'s values.
    pub(crate) fn parse(s: &str) -> Result<SortKey, String> {
        Ok(match s {
            "total" => SortKey::Total,
            "self" => SortKey::SelfTime,
            "calls" => SortKey::Calls,
            "p99" => SortKey::P99,
            "rate" => SortKey::Rate,
            "name" => SortKey::Name,
            _ => {
                return Err(format!(
                    "{s:?}: expected one of total, self, calls, p99, rate, name"
                ));
            }
        })
    }

    fn title(self) -> &'static str {
        match self {
            SortKey::Total => "total",
            SortKey::SelfTime => "self",
            SortKey::Calls => "calls",
            SortKey::P99 => "p99",
            SortKey::Rate => "calls/s",
            SortKey::Name => "name",
        }
    }
}

/// One point's row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) calls: u64,
    /// Calls per second since the previous report (`None` for the first, or a new process).
    pub(crate) rate: Option<f64>,
    pub(crate) total_ns: u64,
    pub(crate) self_ns: Option<u64>,
    pub(crate) avg_ns: u64,
    pub(crate) p50_ns: u64,
    pub(crate) p99_ns: u64,
    pub(crate) max_ns: u64,
    /// Times are estimates (sampled or counted calls): marked `~`.
    pub(crate) estimated: bool,
}

/// The rows of `now`, with each point's calls per second since `prev` (the same process's
/// previous report).
pub(crate) fn rows(now: &Report, prev: Option<&Report>) -> Vec<Row> {
    let prev = prev.filter(|p| p.run.pid == now.run.pid && p.wall_ns < now.wall_ns);
    let before: HashMap<(&str, &str, u32), u64> = prev.map_or_else(HashMap::new, |p| {
        p.points
            .iter()
            .map(|q| ((q.name.as_str(), q.file.as_str(), q.line), q.nr))
            .collect()
    });
    let secs = prev.map_or(0.0, |p| (now.wall_ns - p.wall_ns) as f64 / 1e9);
    now.points
        .iter()
        .map(|p| Row {
            name: p.name.clone(),
            calls: p.nr,
            rate: before
                .get(&(p.name.as_str(), p.file.as_str(), p.line))
                .filter(|&&b| b <= p.nr && secs > 0.0)
                .map(|&b| (p.nr - b) as f64 / secs),
            total_ns: p.total_ns,
            self_ns: p.self_ns,
            avg_ns: p.avg_ns,
            p50_ns: p.p50_ns,
            p99_ns: p.p99_ns,
            max_ns: p.max_ns,
            estimated: p.estimated,
        })
        .collect()
}

/// Sorts `rows` by `key`, largest first (names from A) unless `reverse`; ties by name.
pub(crate) fn sort(rows: &mut [Row], key: SortKey, reverse: bool) {
    let f = |r: &Row| -> f64 {
        match key {
            SortKey::Total => r.total_ns as f64,
            SortKey::SelfTime => r.self_ns.map_or(-1.0, |n| n as f64),
            SortKey::Calls => r.calls as f64,
            SortKey::P99 => r.p99_ns as f64,
            SortKey::Rate => r.rate.unwrap_or(-1.0),
            SortKey::Name => 0.0,
        }
    };
    rows.sort_by(|a, b| {
        let o = if key == SortKey::Name {
            a.name.cmp(&b.name)
        } else {
            f(b).total_cmp(&f(a)).then_with(|| a.name.cmp(&b.name))
        };
        if reverse { o.reverse() } else { o }
    });
}

/// Whether `name` passes the filter: a glob over the whole name (`*`, `?`, as
/// `PROFPOINT_DISABLE`'s), or, without a wildcard, text anywhere in it.
pub(crate) fn passes(filter: &str, name: &str) -> bool {
    let f = filter.trim();
    if f.is_empty() {
        true
    } else if f.contains(['*', '?']) {
        profpoint_glob::glob_matches(f, name)
    } else {
        name.contains(f)
    }
}

/// `s` safe to print on a terminal, cut to `max` characters: a control character (an escape
/// sequence's start) is shown as `\u{..}`, never sent.
pub(crate) fn printable(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i >= max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A duration in nanoseconds, in 3 or 4 significant figures and its unit.
pub(crate) fn ns(n: u64) -> String {
    let f = n as f64;
    if n < 1_000 {
        format!("{n} ns")
    } else if n < 1_000_000 {
        format!("{:.3} µs", f / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.3} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

fn rate(r: Option<f64>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r >= 100.0 => format!("{r:.0}"),
        Some(r) => format!("{r:.1}"),
    }
}

/// Whether the server answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Link {
    /// No answer yet.
    Waiting,
    /// The last request was answered (at this local time, `HH:MM:SS`).
    Live(String),
    /// The last request failed, why; the table is the last one that came (at that time, if any).
    Gone(String, Option<String>),
}

/// Everything on the screen.
#[derive(Debug)]
pub(crate) struct View {
    pub(crate) addr: String,
    pub(crate) report: Option<Report>,
    pub(crate) rows: Vec<Row>,
    pub(crate) key: SortKey,
    pub(crate) reverse: bool,
    pub(crate) filter: String,
    /// The filter being typed (after `/`), shown in the bottom line.
    pub(crate) typing: Option<String>,
    pub(crate) paused: bool,
    pub(crate) link: Link,
    /// The first row shown (scrolled with the arrows and page keys).
    pub(crate) scroll: usize,
    pub(crate) every_s: f64,
}

/// The smallest screen the table fits on.
pub(crate) const MIN_W: u16 = 60;
pub(crate) const MIN_H: u16 = 6;

impl View {
    pub(crate) fn new(addr: String, key: SortKey, filter: String, every_s: f64) -> View {
        View {
            addr,
            report: None,
            rows: Vec::new(),
            key,
            reverse: false,
            filter,
            typing: None,
            paused: false,
            link: Link::Waiting,
            scroll: 0,
            every_s,
        }
    }

    /// A new report: its rows (rates against the one before), kept in order.
    pub(crate) fn update(&mut self, report: Report) {
        self.rows = rows(&report, self.report.as_ref());
        self.report = Some(report);
        self.resort();
    }

    pub(crate) fn resort(&mut self) {
        sort(&mut self.rows, self.key, self.reverse);
    }

    /// The rows that pass the filter, in order.
    pub(crate) fn shown(&self) -> Vec<&Row> {
        let f = self.typing.as_deref().unwrap_or(&self.filter);
        self.rows.iter().filter(|r| passes(f, &r.name)).collect()
    }

    /// Draws the whole screen: the status line, the table, the totals, the keys.
    pub(crate) fn draw(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        if area.width < MIN_W || area.height < MIN_H {
            let msg = format!(
                "terminal too small: {}x{}, profpoint top needs {MIN_W}x{MIN_H} (q quits)",
                area.width, area.height
            );
            frame.render_widget(Paragraph::new(msg), area);
            return;
        }
        let [status, table, totals, keys] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(2),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
        frame.render_widget(Paragraph::new(self.status_line()), status);
        let shown = self.shown();
        self.draw_table(frame, table, &shown);
        frame.render_widget(Paragraph::new(self.totals_line(&shown)), totals);
        let bottom = match &self.typing {
            Some(t) => Line::from(vec![
                Span::styled(" filter: ", Style::new().add_modifier(Modifier::BOLD)),
                Span::raw(printable(t, 200)),
                Span::raw("_   (Enter keeps it, Esc drops it; * and ? are wildcards)"),
            ]),
            None => Line::from(
                " t total  s self  c calls  9 p99  r calls/s  n name  i invert  / filter  space pause  q quit",
            )
            .style(Style::new().fg(Color::DarkGray)),
        };
        frame.render_widget(Paragraph::new(bottom), keys);
    }

    fn status_line(&self) -> Line<'static> {
        let addr = printable(&self.addr, 60);
        let every = format!("every {} s", self.every_s);
        let (text, style) = match (&self.link, self.paused) {
            (_, true) => (
                format!(" profpoint top {addr}: PAUSED (space resumes)"),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ),
            (Link::Waiting, _) => (
                format!(" profpoint top {addr}: waiting for the first answer"),
                Style::new(),
            ),
            (Link::Live(at), _) => (
                format!(" profpoint top {addr}: live, {at}, {every}"),
                Style::new().fg(Color::Green),
            ),
            (Link::Gone(why, at), _) => (
                format!(
                    " {addr} not answering{}: {}; retrying {every}",
                    at.as_ref()
                        .map_or(String::new(), |t| format!(" (the table is from {t})")),
                    printable(why, 160)
                ),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
        };
        let run = self.report.as_ref().map_or(String::new(), |r| {
            format!("  pid {}, up {:.0} s", r.run.pid, r.wall_ns as f64 / 1e9)
        });
        Line::from(vec![Span::styled(text, style), Span::raw(run)])
    }

    fn totals_line(&self, shown: &[&Row]) -> Line<'static> {
        let Some(r) = &self.report else {
            return Line::from("");
        };
        let calls: u64 = shown.iter().map(|r| r.calls).sum();
        let rates: Vec<f64> = shown.iter().filter_map(|r| r.rate).collect();
        let self_ns: u64 = shown.iter().filter_map(|r| r.self_ns).sum();
        let filt = if self.filter.is_empty() {
            String::new()
        } else {
            format!(" matching {:?}", printable(&self.filter, 40))
        };
        Line::from(format!(
            " {} of {} points{filt}: {} calls, {} calls/s, self {} in all (wall {:.1} s); sorted by {}{}",
            shown.len(),
            r.points.len(),
            calls,
            if rates.is_empty() {
                "-".to_string()
            } else {
                rate(Some(rates.iter().sum()))
            },
            ns(self_ns),
            r.wall_ns as f64 / 1e9,
            self.key.title(),
            if self.reverse { ", inverted" } else { "" }
        ))
        .style(Style::new().add_modifier(Modifier::BOLD))
    }

    fn draw_table(&self, frame: &mut Frame<'_>, area: Rect, shown: &[&Row]) {
        let titles = [
            ("calls", SortKey::Calls),
            ("calls/s", SortKey::Rate),
            ("total", SortKey::Total),
            ("self", SortKey::SelfTime),
            ("avg", SortKey::Total),
            ("p50", SortKey::Total),
            ("p99", SortKey::P99),
            ("max", SortKey::Total),
        ];
        let head_style = |k: Option<SortKey>, title: &str| {
            let sorted =
                k == Some(self.key) && (title != "avg" && title != "p50" && title != "max");
            if sorted {
                Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            }
        };
        let mut head =
            vec![Cell::from(Line::from("name")).style(head_style(Some(SortKey::Name), "name"))];
        for (t, k) in titles {
            head.push(Cell::from(Line::from(t).right_aligned()).style(head_style(Some(k), t)));
        }
        let body_h = area.height.saturating_sub(1) as usize;
        let first = self.scroll.min(shown.len().saturating_sub(1));
        let rows = shown.iter().skip(first).take(body_h).map(|r| {
            let mark = if r.estimated { "~" } else { "" };
            let cells = [
                r.calls.to_string(),
                rate(r.rate),
                format!("{mark}{}", ns(r.total_ns)),
                r.self_ns
                    .map_or_else(|| "-".into(), |n| format!("{mark}{}", ns(n))),
                ns(r.avg_ns),
                ns(r.p50_ns),
                ns(r.p99_ns),
                ns(r.max_ns),
            ];
            let mut row = vec![Cell::from(printable(&r.name, 400))];
            row.extend(
                cells
                    .into_iter()
                    .map(|c| Cell::from(Line::from(c).right_aligned())),
            );
            TRow::new(row)
        });
        let widths = [
            Constraint::Min(16),
            Constraint::Length(12),
            Constraint::Length(9),
            Constraint::Length(11),
            Constraint::Length(11),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(10),
        ];
        let table = Table::new(rows, widths)
            .header(TRow::new(head))
            .column_spacing(1);
        frame.render_widget(table, area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    /// A report of three points, one with HTML and an escape character in its name, at
    /// `wall_s` seconds with each point's calls.
    fn fixture(wall_s: u64, calls: [u64; 3]) -> Report {
        let text = format!(
            r#"{{"schema":"profpoint.report","version":3,"wall_ns":{wall},
            "run":{{"command":["svc"],"pid":42,"start_unix_ns":0,"cpu_model":"","kernel":"","shards":1}},
            "points":[
            {{"name":"svc::handle_hash","file":"s.rs","line":1,"enabled":true,"kind":"sync","sampling":null,"estimated":false,"nr":{a},"timed":{a},"nested":0,
              "total_ns":2000000000,"self_ns":2000000000,"avg_ns":50000,"min_ns":1,"max_ns":900000,"p50_ns":40000,"p90_ns":1,"p99_ns":700000,"p999_ns":1,"stddev_ns":1,"wall_percent":1.0}},
            {{"name":"svc::handle_sort","file":"s.rs","line":2,"enabled":true,"kind":"sync","sampling":null,"estimated":false,"nr":{b},"timed":{b},"nested":0,
              "total_ns":9000000000,"self_ns":9000000000,"avg_ns":1000000,"min_ns":1,"max_ns":50000000,"p50_ns":800000,"p90_ns":1,"p99_ns":3500000,"p999_ns":1,"stddev_ns":1,"wall_percent":1.0}},
            {{"name":"<script>x</script>\u001b[2J","file":"s.rs","line":3,"enabled":true,"kind":"sync","sampling":null,"estimated":false,"nr":{c},"timed":{c},"nested":0,
              "total_ns":30000,"self_ns":30000,"avg_ns":500,"min_ns":1,"max_ns":900,"p50_ns":400,"p90_ns":1,"p99_ns":800,"p999_ns":1,"stddev_ns":1,"wall_percent":0.0}}
            ]}}"#,
            wall = wall_s * 1_000_000_000,
            a = calls[0],
            b = calls[1],
            c = calls[2]
        );
        Report::from_json(&text).unwrap()
    }

    fn screen(v: &View, w: u16, h: u16) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| v.draw(f)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    fn names(v: &View) -> Vec<&str> {
        v.shown().iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn rates_come_from_two_reports_and_every_key_sorts() {
        let mut v = View::new("127.0.0.1:9464".into(), SortKey::Total, String::new(), 1.0);
        v.update(fixture(10, [1000, 100, 10]));
        assert!(v.rows.iter().all(|r| r.rate.is_none()));
        v.update(fixture(12, [5000, 120, 10]));
        let rate = |n: &str| v.rows.iter().find(|r| r.name.ends_with(n)).unwrap().rate;
        assert_eq!(rate("hash"), Some(2000.0));
        assert_eq!(rate("sort"), Some(10.0));
        assert_eq!(rate("[2J"), Some(0.0));
        assert_eq!(names(&v)[0], "svc::handle_sort");
        for (key, first) in [
            (SortKey::Calls, "svc::handle_hash"),
            (SortKey::Rate, "svc::handle_hash"),
            (SortKey::P99, "svc::handle_sort"),
            (SortKey::SelfTime, "svc::handle_sort"),
            (SortKey::Name, "<script>x</script>\u{1b}[2J"),
        ] {
            v.key = key;
            v.resort();
            assert_eq!(names(&v)[0], first, "{key:?}");
        }
        v.key = SortKey::Calls;
        v.reverse = true;
        v.resort();
        assert_eq!(names(&v)[0], "<script>x</script>\u{1b}[2J");
        v.filter = "*::handle_s?rt".into();
        assert_eq!(names(&v), ["svc::handle_sort"]);
        v.filter = "hash".into();
        assert_eq!(names(&v), ["svc::handle_hash"]);
        // A report of another process: no rates against the last one.
        let mut other = fixture(13, [1, 1, 1]);
        other.run.pid = 7;
        v.update(other);
        assert!(v.rows.iter().all(|r| r.rate.is_none()));
    }

    #[test]
    fn the_screen_holds_the_table_the_totals_and_the_keys() {
        let mut v = View::new("127.0.0.1:9464".into(), SortKey::Total, String::new(), 1.0);
        v.update(fixture(10, [1000, 100, 10]));
        v.update(fixture(12, [5000, 120, 10]));
        v.link = Link::Live("17:40:01".into());
        let s = screen(&v, 120, 8);
        assert!(
            s[0].contains("profpoint top 127.0.0.1:9464: live, 17:40:01"),
            "{s:#?}"
        );
        assert!(
            s[1].starts_with("name") && s[1].contains("calls/s") && s[1].contains("p99"),
            "{s:#?}"
        );
        assert!(s[2].starts_with("svc::handle_sort"), "{s:#?}");
        assert!(
            s[2].contains("120") && s[2].contains("10.0") && s[2].contains("9.000 s"),
            "{s:#?}"
        );
        assert!(s[2].contains("3.500 ms"), "{s:#?}");
        assert!(
            s[3].starts_with("svc::handle_hash") && s[3].contains("2000"),
            "{s:#?}"
        );
        // The escape character is shown, never sent.
        assert!(s[4].starts_with("<script>x</script>\\u{1b}[2J"), "{s:#?}");
        assert!(s.iter().all(|l| !l.contains('\u{1b}')));
        assert!(
            s[6].contains("3 of 3 points: 5130 calls, 2010 calls/s"),
            "{s:#?}"
        );
        assert!(s[6].contains("sorted by total"), "{s:#?}");
        assert!(s[7].contains("q quit"), "{s:#?}");

        // The server goes away: the status line says so, the table stays.
        v.link = Link::Gone("connection refused".into(), Some("17:40:01".into()));
        let s = screen(&v, 120, 8);
        assert!(
            s[0].contains("not answering (the table is from 17:40:01): connection refused"),
            "{s:#?}"
        );
        assert!(s[2].starts_with("svc::handle_sort"), "{s:#?}");

        // Typing a filter narrows the rows as it is typed.
        v.typing = Some("sort".into());
        let s = screen(&v, 120, 8);
        assert!(
            s[2].starts_with("svc::handle_sort") && s[3].is_empty(),
            "{s:#?}"
        );
        assert!(s[7].contains("filter: sort_"), "{s:#?}");
    }

    #[test]
    fn a_small_terminal_gets_a_line_saying_so() {
        let mut v = View::new("a:1".into(), SortKey::Total, String::new(), 1.0);
        v.update(fixture(10, [1, 1, 1]));
        let s = screen(&v, 40, 4);
        assert!(s[0].starts_with("terminal too small: 40x4"), "{s:#?}");
    }
}
