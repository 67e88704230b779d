use super::*;

use crate::model::test_point as point;

/// A point whose estimate's interval is wider than itself is marked `?` and explained;
/// a point in bursts reads `burst` in the status column, as in the budget's section; a
/// counting floor over the budget is one line naming the points and the knobs.
#[test]
fn uncertain_figures_bursts_and_the_counting_floor_are_said() {
    let mut r = Report::empty();
    r.points = vec![point("db::sure", 1), point("db::unsure", 2)];
    r.points[1].estimated = true;
    r.points[1].total_ns = 10;
    r.points[1].total_ci95_ns = 11;
    r.points[1].enabled = false;
    r.budget.percent = Some(2.0);
    r.budget.throttled = vec![crate::ThrottledPoint {
        point: "db::unsure".into(),
        now: "burst".into(),
        worst: "burst".into(),
        changes: 1,
        first_at_s: 0.1,
        off_calls_per_s: 1e8,
        isolated_avg_ns: None,
    }];
    r.budget.counting_over = Some(crate::CountingOver {
        percent: 7.5,
        rounds: 3,
        points: vec![crate::CountingShare {
            point: "db::sure".into(),
            share: 0.9,
        }],
    });
    let t = text(&r);
    let row = t
        .lines()
        .find(|l| l.contains("db::unsure ~ ?"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(row.trim_start().starts_with("burst"), "{row}");
    assert!(
        t.contains(" ? an estimate whose 95% interval is wider than itself"),
        "{t}"
    );
    let line = t
        .lines()
        .find(|l| l.starts_with("Counting alone cost 7.5% of the CPU time, over the budget of 2%"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        line.contains("db::sure (90%)") && line.contains(",bursts"),
        "{line}"
    );
    assert!(!text(&Report::empty()).contains(" ? an estimate"));
    assert!(!t.contains(" %wall = total"), "{t}");
    r.points[0].wall_percent = 114.17;
    assert!(
        text(&r).contains(" %wall = total / the run's wall time: above 100 where several threads")
    );
}

/// Points that cost more than the budget are one line: the share they reached, how it was
/// paid, who made it, and the knobs.
#[test]
fn a_budget_not_kept_is_said_with_its_parts_and_points() {
    let mut r = Report::empty();
    r.budget.percent = Some(2.0);
    r.budget.cost_percent = 3.1;
    r.budget.over = Some(crate::BudgetOver {
        parts: vec![
            crate::CostPart {
                part: "between bursts".into(),
                percent: 1.2,
            },
            crate::CostPart {
                part: "in bursts".into(),
                percent: 1.9,
            },
        ],
        points: vec![crate::CountingShare {
            point: "db::hot".into(),
            share: 0.85,
        }],
        why: "bursts have a least length".into(),
    });
    let t = text(&r);
    let line = t
        .lines()
        .find(|l| l.starts_with("The points cost 3.10% of the CPU time, over the budget of 2%"))
        .unwrap_or_else(|| panic!("{t}"));
    for part in [
        "1.20% between bursts",
        "1.90% in bursts",
        "(bursts have a least length)",
        "db::hot (85%)",
        "PROFPOINT_DISABLE",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    assert!(!text(&Report::empty()).contains("The points cost"));
}

/// A budget section that throttled one point says how far its self times rank, and where
/// the sampler's self times are (or how to get them).
#[test]
fn the_budget_section_says_how_far_self_times_rank() {
    let mut r = Report::empty();
    r.points = vec![point("db::hot", 1)];
    r.budget.percent = Some(2.0);
    r.budget.throttled = vec![crate::ThrottledPoint {
        point: "db::hot".into(),
        now: "count".into(),
        worst: "count".into(),
        changes: 1,
        first_at_s: 0.1,
        off_calls_per_s: 0.0,
        isolated_avg_ns: None,
    }];
    let without = text(&r);
    assert!(
        without.contains("may rank out of order; PROFPOINT_HEATMAP=1 adds"),
        "{without}"
    );
    r.points[0].sampled_self = Some(3);
    let with = text(&r);
    assert!(
        with.contains("for their order, see \"Self time from the sampler's stacks\""),
        "{with}"
    );
    assert!(
        with.contains("Self time from the sampler's stacks ("),
        "{with}"
    );
    assert!(!with.contains("PROFPOINT_HEATMAP=1 adds"), "{with}");
    // Nothing throttled: no budget section, no such line.
    r.budget.throttled.clear();
    assert!(!text(&r).contains("compensation's residue"));
}

fn table_of(points: Vec<PointReport>) -> String {
    let mut r = Report::empty();
    r.points = points;
    text(&r)
}

fn text(r: &Report) -> String {
    let mut out = Vec::new();
    write_table(r, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn control_characters_in_names_are_escaped_one_row_each() {
    let t = table_of(vec![
        point("db::\nquery", 1),
        point("a\tb", 2),
        point("red\x1b[31m", 3),
        point("nul\0\u{85}", 4),
    ]);
    let rows: Vec<&str> = t
        .lines()
        .filter(|l| l.trim_start().starts_with("on "))
        .collect();
    assert_eq!(rows.len(), 4, "{t}");
    for shown in [r"db::\nquery", r"a\tb", r"red\x1b[31m", r"nul\x00\u{85}"] {
        assert!(rows.iter().any(|r| r.contains(shown)), "{shown}: {t}");
    }
    assert!(
        !t.contains('\x1b') && !t.contains('\t') && !t.contains('\0'),
        "{t}"
    );
}

#[test]
fn points_sharing_a_name_are_told_apart_by_file_and_line() {
    let t = table_of(vec![
        point("db::query", 10),
        point("db::query", 20),
        point("db::scan", 30),
    ]);
    assert!(t.contains("db::query (src/db.rs:10) "), "{t}");
    assert!(t.contains("db::query (src/db.rs:20) "), "{t}");
    assert!(t.contains("db::scan "), "{t}");
    assert!(!t.contains("db::scan ("), "{t}");
    // Columns stay aligned: every row is as wide as the header.
    let widths: Vec<usize> = t
        .lines()
        .skip(2)
        .take(6)
        .map(|l| l.chars().count())
        .collect();
    assert!(widths.iter().all(|w| *w == widths[0]), "{widths:?}\n{t}");
}

#[test]
fn idle_time_is_listed_only_for_points_that_have_some() {
    let mut waited = point("a::polled", 1);
    waited.idle_ns = 2_500_000_000;
    let none = table_of(vec![point("a::plain", 2)]);
    assert!(!none.contains("Idle time"), "{none}");
    let some = table_of(vec![point("a::plain", 2), waited]);
    let line = some
        .lines()
        .find(|l| l.contains("idle") && l.contains("a::polled"))
        .unwrap_or_else(|| panic!("{some}"));
    assert!(line.contains("2.500000000 idle"), "{line}");
    assert!(
        !some
            .lines()
            .any(|l| l.contains("idle") && l.contains("a::plain"))
    );
}

#[test]
fn seconds_have_nine_decimals() {
    assert_eq!(secs(154_283, false), "0.000154283");
    assert_eq!(secs(16_981_247_886, true), "~16.981247886");
}

#[test]
fn the_sampled_self_section_lists_points_by_their_stacks_samples() {
    assert!(!table_of(vec![point("db::get", 1)]).contains("sampler's stacks"));
    let mut a = point("db::get", 1);
    a.sampled_self = Some(30);
    let mut b = point("db::put", 2);
    b.sampled_self = Some(90);
    let mut c = point("db::scope", 3);
    c.sampled_self = None;
    let t = table_of(vec![a, b, c]);
    let section = &t[t.find("sampler's stacks (120 samples").expect(&t)..];
    let put = section.find(" 75.00%        90  db::put").expect(section);
    let get = section.find(" 25.00%        30  db::get").expect(section);
    assert!(put < get, "{section}");
    assert!(!section.contains("db::scope"), "{section}");
}

/// The heatmap's by-function table says in one line why it differs from the stacks' self
/// time, when that is shown above it, and only then.
#[cfg(feature = "heatmap")]
#[test]
fn the_heatmap_table_says_why_it_differs_from_the_stacks_self_time() {
    let note = |r: &Report| -> Vec<String> {
        text(r)
            .lines()
            .filter(|l| l.starts_with("note: a row counts"))
            .map(str::to_owned)
            .collect()
    };
    let mut r = Report::empty();
    r.points = vec![point("app::parse", 1)];
    r.heatmap = Some(crate::folded::tests::heat(None));
    assert!(note(&r).is_empty(), "no stacks' self time, no note");
    r.points[0].sampled_self = Some(12);
    assert_eq!(note(&r), [BY_FUNCTION_VS_SAMPLED_SELF]);
    let t = text(&r);
    assert!(
        t.find("Heatmap (top #").unwrap() < t.find("note: a row counts").unwrap(),
        "{t}"
    );
    r.heatmap.as_mut().unwrap().by = crate::heatmap::By::Bucket;
    assert!(note(&r).is_empty(), "by bucket, no note");
}

/// Calls estimated between bursts read `~N` in the nr column and their interval in the
/// throttle section; calls too few windows saw read `≥N` and "at least", their times `≥` too;
/// others as they are.
#[test]
fn estimated_and_lower_bound_counts_are_marked() {
    let mut r = Report::empty();
    r.points = vec![
        point("db::exact", 1),
        point("db::estimated", 2),
        point("db::unknown", 3),
    ];
    r.points[0].nr = 7;
    r.points[1].nr = 1_000;
    r.points[1].nr_ci95 = Some(100);
    r.points[1].nr_estimated = true;
    r.points[2].nr = 5;
    r.points[2].nr_estimated = true;
    r.points[2].total_ns = 2_500_000_000;
    r.points[2].total_ci95_ns = 1_000;
    r.budget.percent = Some(2.0);
    r.budget.throttled = ["db::estimated", "db::unknown"]
        .iter()
        .map(|p| crate::ThrottledPoint {
            point: p.to_string(),
            now: "burst".into(),
            worst: "burst".into(),
            changes: 1,
            first_at_s: 0.1,
            off_calls_per_s: 1e8,
            isolated_avg_ns: None,
        })
        .collect();
    let t = r.to_table();
    let nr = |name: &str| {
        let l = t
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name}: {t}"));
        l.split_whitespace().nth(4).unwrap().to_string()
    };
    assert_eq!(nr("db::exact"), "7", "{t}");
    assert_eq!(nr("db::estimated"), "~1000", "{t}");
    assert_eq!(nr("db::unknown"), "≥5", "{t}");
    // Its time is the seen calls': a lower bound as well, whatever its strata's interval.
    let total = |name: &str| {
        let l = t
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name}: {t}"));
        // The first time after the name (a mark may stand between them).
        let f = l.split_whitespace().skip(2).find(|f| f.contains('.'));
        f.unwrap().to_string()
    };
    assert_eq!(total("db::unknown"), "≥2.500000000", "{t}");
    assert_eq!(total("db::exact"), "0.000000010", "{t}");
    let throttle = |name: &str| {
        t.lines()
            .rev()
            .find(|l| l.trim_end().ends_with(name))
            .unwrap_or_else(|| panic!("{name}: {t}"))
            .to_string()
    };
    assert!(throttle("db::estimated").contains("±10.0%"), "{t}");
    assert!(throttle("db::unknown").contains("at least"), "{t}");
    assert!(!throttle("db::unknown").contains('±'), "{t}");
}

/// The memory columns appear only in a report with the counting allocator's section; the rest
/// of every line is the same with and without them, and each row is as wide as the header.
#[test]
fn memory_columns_only_with_the_counting_allocator() {
    let mut r = Report::empty();
    r.points = vec![point("a::made", 1), point("a::none", 2)];
    let without = text(&r);
    assert!(!without.contains("alloc"), "{without}");
    r.points[0].alloc = Some(crate::model::AllocStats {
        allocs: 7,
        alloc_bytes: 4096,
        frees: 3,
        held_bytes: 1024,
        ..Default::default()
    });
    let mut a = crate::model::AllocReport::default();
    a.outside.allocs = 11;
    a.outside.alloc_bytes = 99;
    a.header_bytes = 8;
    r.alloc = Some(a);
    let with = text(&r);
    let row = with
        .lines()
        .find(|l| l.contains("a::made"))
        .unwrap_or_else(|| panic!("{with}"));
    let cells: Vec<&str> = row.split_whitespace().rev().take(4).collect();
    assert_eq!(cells, ["1024", "3", "4096", "7"], "{row}");
    let none = with.lines().find(|l| l.contains("a::none")).unwrap();
    assert!(
        none.split_whitespace().rev().take(4).all(|c| c == "0"),
        "{none}"
    );
    assert!(
        with.contains("outside any point: 11 allocs, 99 bytes"),
        "{with}"
    );
    // Without the section's lines, the table is the one without memory, cell for cell.
    let header = with.lines().position(|l| l.contains("allocs")).unwrap();
    let widths: Vec<usize> = with
        .lines()
        .skip(header)
        .take(5)
        .map(|l| l.chars().count())
        .collect();
    assert!(widths.iter().all(|w| *w == widths[0]), "{widths:?}\n{with}");
    for (a, b) in without.lines().zip(with.lines()) {
        assert!(b.starts_with(a.trim_end_matches('-')), "{a}\n{b}");
    }
}
