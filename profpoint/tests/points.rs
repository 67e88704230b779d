//! Profile points from a user's point of view: every way to define one, what the numbers say.
//!
//! The tests of this file run side by side in one process under `cargo test`: each counts
//! calls of points of its own. The tests of whole reports (every point in the table, the
//! exposition, the charts) and of `reset` run in a process of their own (`in_own_process`).

mod common;
use common::pb::{packed_varints, pb_fields};
use common::runner::in_own_process;

use std::time::Duration;

fn point(name: &str) -> profpoint::PointReport {
    find(&profpoint::snapshot(), name)
}

fn find(r: &profpoint::Report, name: &str) -> profpoint::PointReport {
    r.points
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no point named {name}"))
}

const MS: u64 = 1_000_000;

#[profpoint::profile_point]
fn sleep_20ms() {
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn a_20ms_sleep_reads_at_least_20ms_and_well_under_200ms() {
    sleep_20ms();
    let p = point("points::sleep_20ms");
    assert_eq!(p.nr, 1);
    assert_eq!(p.timed, 1);
    assert!(
        p.total_ns >= 20 * MS && p.total_ns < 200 * MS,
        "{}",
        p.total_ns
    );
    assert_eq!(p.avg_ns, p.total_ns);
    assert!(p.min_ns <= p.p50_ns && p.p50_ns <= p.max_ns);
    // Percentiles are bucket midpoints, within 2% of the true value.
    assert!((p.p50_ns as f64 - p.total_ns as f64).abs() <= 0.02 * p.total_ns as f64);
}

#[profpoint::profile_point(name = "custom name")]
fn named() {}

#[test]
fn a_point_never_hit_is_listed_with_nr_zero_and_names_can_be_given() {
    let r = profpoint::snapshot();
    let p = r.points.iter().find(|p| p.name == "custom name").unwrap();
    assert_eq!((p.nr, p.total_ns), (0, 0));
    named();
    assert_eq!(point("custom name").nr, 1);
}

struct Db;

impl Db {
    #[profpoint::profile_point]
    fn query(&self, n: u32) -> u32 {
        n + 1
    }

    #[profpoint::profile_point]
    fn generic<T: Clone>(&self, t: &T) -> T {
        t.clone()
    }
}

#[test]
fn methods_and_generics_are_named_after_their_path() {
    let db = Db;
    assert_eq!(db.query(1), 2);
    assert_eq!(db.generic(&"a"), "a");
    assert_eq!(db.generic(&5u8), 5);
    assert_eq!(point("points::Db::query").nr, 1);
    // One point for every instantiation of a generic function.
    assert_eq!(point("points::Db::generic").nr, 2);
}

#[profpoint::profile_point]
fn early(x: i32) -> Result<i32, String> {
    if x < 0 {
        return Err("negative".into());
    }
    let v: i32 = format!("{x}").parse().map_err(|_| "parse".to_string())?;
    Ok(v)
}

#[profpoint::profile_point]
fn explodes() {
    panic!("boom");
}

#[test]
fn early_returns_question_marks_and_panics_all_count() {
    assert!(early(-1).is_err());
    assert_eq!(early(3), Ok(3));
    assert_eq!(point("points::early").nr, 2);
    assert!(std::panic::catch_unwind(explodes).is_err());
    let p = point("points::explodes");
    assert_eq!((p.nr, p.timed), (1, 1));
}

#[test]
fn profile_scope_times_until_the_guard_drops() {
    {
        let _g = profpoint::profile_scope!("block");
        std::thread::sleep(Duration::from_millis(20));
    }
    let p = point("block");
    assert_eq!(p.nr, 1);
    assert!(p.total_ns >= 20 * MS && p.total_ns < 200 * MS);
}

profpoint::define_profile_point!(FLUSH_TLB_OTHERS);

fn start_here() -> profpoint::Token {
    FLUSH_TLB_OTHERS.start()
}

#[test]
fn explicit_start_and_leave_may_be_in_different_scopes() {
    let t = start_here();
    std::thread::sleep(Duration::from_millis(20));
    FLUSH_TLB_OTHERS.leave(t);
    let p = point("FLUSH_TLB_OTHERS");
    assert_eq!(p.nr, 1);
    assert!(p.total_ns >= 20 * MS && p.total_ns < 200 * MS);
}

#[profpoint::profile_point]
fn outer() {
    std::thread::sleep(Duration::from_millis(20));
    inner();
}

#[profpoint::profile_point]
fn inner() {
    std::thread::sleep(Duration::from_millis(40));
}

#[test]
fn self_time_excludes_nested_points() {
    outer();
    // One report: every figure in it shares one clock calibration.
    let r = profpoint::snapshot();
    let o = find(&r, "points::outer");
    let i = find(&r, "points::inner");
    assert!(
        o.total_ns >= 60 * MS && o.total_ns < 300 * MS,
        "{}",
        o.total_ns
    );
    let (o_self, i_self) = (o.self_ns.unwrap(), i.self_ns.unwrap());
    assert!((20 * MS..40 * MS).contains(&o_self), "outer self {o_self}");
    assert_eq!(i_self, i.total_ns);
    // Self times add up to the outermost total (nothing counted twice, nothing lost).
    let sum = o_self + i_self;
    assert!(sum.abs_diff(o.total_ns) <= 2, "{sum} vs {}", o.total_ns);
}

#[profpoint::profile_point]
fn hot() -> u64 {
    std::hint::black_box(1)
}

#[test]
fn status_by_glob_turns_points_off_and_on() {
    assert_eq!(profpoint::disable("points::ho*"), 1);
    for _ in 0..10 {
        hot();
    }
    let p = point("points::hot");
    assert!(!p.enabled);
    assert_eq!(p.nr, 0, "an off point counts nothing");
    assert_eq!(profpoint::enable("points::hot"), 1);
    for _ in 0..10 {
        hot();
    }
    let p = point("points::hot");
    assert!(p.enabled);
    assert_eq!(p.nr, 10);
    assert_eq!(profpoint::enable("no::such::*"), 0);
}

#[profpoint::profile_point]
fn sampled() {
    std::hint::black_box(());
}

#[test]
fn sampled_timing_counts_every_call_and_marks_estimates() {
    assert_eq!(profpoint::set_sampling("points::sampled", 16), 1);
    for _ in 0..100_000 {
        sampled();
    }
    let p = point("points::sampled");
    assert_eq!(p.nr, 100_000, "every call is counted");
    assert_eq!(p.sampling, Some(16));
    assert!(p.estimated);
    // One call in ~16 timed: far fewer than all, but plenty (expected 6250).
    assert!(p.timed > 3_000 && p.timed < 12_000, "timed {}", p.timed);
}

#[profpoint::profile_point]
#[inline(never)]
fn counted(x: u64) -> u64 {
    std::hint::black_box(x + 1)
}

profpoint::define_profile_point!(COUNTED_EXPLICITLY);

#[test]
fn count_only_counts_every_call_and_times_none() {
    assert_eq!(profpoint::count_only("points::counted"), 1);
    assert_eq!(profpoint::count_only("COUNTED_EXPLICITLY"), 1);
    // From this thread (its slots made) and from new threads (first calls take the cold path).
    let run = || {
        for i in 0..10_000 {
            counted(i);
            let t = COUNTED_EXPLICITLY.start();
            let _g = COUNTED_EXPLICITLY.guard();
            COUNTED_EXPLICITLY.leave(t);
        }
    };
    run();
    std::thread::scope(|s| {
        s.spawn(run);
        s.spawn(run);
    });
    for name in ["points::counted", "COUNTED_EXPLICITLY"] {
        let p = point(name);
        let per_run = if name == "points::counted" {
            10_000
        } else {
            20_000
        };
        assert_eq!(p.nr, 3 * per_run, "{name}: every call is counted");
        assert_eq!((p.timed, p.total_ns), (0, 0), "{name}: none is timed");
        assert_eq!(p.sampling, Some(0), "{name}");
        assert!(p.enabled);
    }
    let mut out = Vec::new();
    profpoint::write_profile_points(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let row = text
        .lines()
        .find(|l| l.contains("points::counted"))
        .unwrap();
    assert!(row.trim_start().starts_with("count "), "{row}");
    // Timed again on request.
    profpoint::enable("points::counted");
    counted(0);
    assert_eq!(point("points::counted").timed, 1);
}

#[test]
fn reset_makes_a_new_zero() {
    if !in_own_process("reset_makes_a_new_zero") {
        return;
    }
    hot();
    hot();
    assert_eq!(point("points::hot").nr, 2);
    profpoint::reset();
    assert_eq!(point("points::hot").nr, 0);
    hot();
    assert_eq!(point("points::hot").nr, 1);
}

#[test]
fn the_table_has_the_seed_columns_a_header_and_a_footer() {
    if !in_own_process("the_table_has_the_seed_columns_a_header_and_a_footer") {
        return;
    }
    sleep_20ms();
    let mut out = Vec::new();
    profpoint::write_profile_points(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Profile Points");
    assert!(
        lines[1].contains("clock") && lines[1].contains("overhead"),
        "{}",
        lines[1]
    );
    assert!(!lines[1].contains("not measured"), "{}", lines[1]);
    for col in [
        "status", "name", "total(s)", "nr", "avg.ns", "p50.ns", "p99.ns", "max.ns", "%wall",
    ] {
        assert!(lines[2].contains(col), "missing column {col}: {}", lines[2]);
    }
    let row = lines
        .iter()
        .find(|l| l.contains("points::sleep_20ms"))
        .expect("row");
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[0], "on");
    // total in seconds with 9 decimals
    let total = fields[2];
    assert_eq!(total.split('.').nth(1).map(str::len), Some(9), "{total}");
    // sorted by total: the 20 ms point is the first row
    assert!(lines[4].contains("points::sleep_20ms"), "{}", lines[4]);
    assert!(text.contains("never hit"));
}

#[test]
fn the_prometheus_exposition_has_counters_and_summaries_per_point() {
    if !in_own_process("the_prometheus_exposition_has_counters_and_summaries_per_point") {
        return;
    }
    sleep_20ms();
    let text = profpoint::snapshot().to_prometheus();
    // The value of the series `metric{...}` whose labels include all of `has`.
    let value = |metric: &str, has: &[&str]| -> f64 {
        text.lines()
            .find(|l| {
                l.starts_with(&format!("{metric}{{"))
                    && l.contains(r#"point="points::sleep_20ms""#)
                    && has.iter().all(|h| l.contains(h))
            })
            .unwrap_or_else(|| panic!("no {metric} {has:?} in\n{text}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(value("profpoint_calls_total", &[]), 1.0);
    let t = value("profpoint_time_seconds_total", &[]);
    assert!((0.020..0.2).contains(&t), "{t}");
    assert_eq!(value("profpoint_latency_seconds_count", &[]), 1.0);
    assert!(value("profpoint_latency_seconds", &[r#"quantile="0.99""#]) >= 0.020);
    assert!(text.contains("# TYPE profpoint_latency_seconds summary"));
    // Series are told apart by location too.
    assert!(
        text.contains(r#"location="profpoint/tests/points.rs:"#),
        "{text}"
    );
    // Every sample line is `name{labels} value`, and no series appears twice.
    let mut seen = std::collections::HashSet::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, v) = l.rsplit_once(' ').unwrap();
        assert!(series.contains('{') && series.ends_with('}'), "{l}");
        assert!(v.parse::<f64>().is_ok(), "{l}");
        assert!(seen.insert(series.to_string()), "duplicate series {series}");
    }
}

#[test]
fn the_svg_chart_has_a_bar_per_point_hit() {
    if !in_own_process("the_svg_chart_has_a_bar_per_point_hit") {
        return;
    }
    sleep_20ms();
    outer();
    let r = profpoint::snapshot();
    let svg = r.to_svg();
    assert!(svg.starts_with("<?xml version=\"1.0\""), "{svg}");
    assert!(
        svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    let hit = r.points.iter().filter(|p| p.nr > 0).count();
    let timed_self = r
        .points
        .iter()
        .filter(|p| p.nr > 0 && p.self_ns.is_some())
        .count();
    assert_eq!(svg.matches("<g class=\"point\">").count(), hit);
    // Two bars (total, self) per point with a self time, and the names as text.
    assert_eq!(svg.matches("<rect class=\"total\"").count(), hit);
    assert_eq!(svg.matches("<rect class=\"self\"").count(), timed_self);
    for name in ["points::sleep_20ms", "points::outer", "points::inner"] {
        assert!(svg.contains(&format!(">{name}</text>")), "{name}");
    }
    // outer's self bar is shorter than its total bar (inner runs inside it).
    let row = svg
        .lines()
        .skip_while(|l| !l.contains("<title>points::outer:"))
        .take(5)
        .collect::<Vec<_>>();
    let width = |class: &str| -> f64 {
        let l = row
            .iter()
            .find(|l| l.contains(&format!("<rect class=\"{class}\"")))
            .unwrap();
        l.split("width=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(width("self") < width("total"), "{row:?}");
}

#[test]
fn the_pprof_profile_decodes_to_the_report_figures() {
    if !in_own_process("the_pprof_profile_decodes_to_the_report_figures") {
        return;
    }
    sleep_20ms();
    let r = profpoint::snapshot();
    let pb = common::pb::gunzip(&r.to_pprof());
    let top = pb_fields(&pb);
    let strings: Vec<String> = top
        .iter()
        .filter(|f| f.0 == 6)
        .map(|f| String::from_utf8(f.3.clone()).unwrap())
        .collect();
    assert_eq!(strings[0], "", "string 0 is empty");
    let types: Vec<(String, String)> = top
        .iter()
        .filter(|f| f.0 == 1)
        .map(|f| {
            let v = pb_fields(&f.3);
            (
                strings[v[0].2 as usize].clone(),
                strings[v[1].2 as usize].clone(),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("calls", "count"),
            ("self", "nanoseconds"),
            ("total", "nanoseconds")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let samples: Vec<_> = top.iter().filter(|f| f.0 == 2).collect();
    let functions: Vec<_> = top.iter().filter(|f| f.0 == 5).collect();
    assert_eq!(samples.len(), r.points.len());
    assert_eq!(functions.len(), r.points.len());
    // Point i is sample i, location i+1, function i+1: check the 20 ms one end to end.
    let i = r
        .points
        .iter()
        .position(|p| p.name == "points::sleep_20ms")
        .unwrap();
    let f = pb_fields(&functions[i].3);
    assert_eq!(strings[f[1].2 as usize], "points::sleep_20ms");
    let s = pb_fields(&samples[i].3);
    let values = packed_varints(&s[1].3);
    let p = &r.points[i];
    assert_eq!(values, [p.nr, p.self_ns.unwrap(), p.total_ns]);
}

#[profpoint::profile_point]
fn allocates() -> Vec<u64> {
    vec![1; 100]
}

/// A program that does not install the counting allocator (this one) has no memory in its
/// reports: no section, no point's figures, no column in the table, no field in the JSON.
#[test]
fn without_the_counting_allocator_reports_say_nothing_of_memory() {
    let v = allocates();
    assert!(!profpoint::alloc::installed());
    assert!(profpoint::alloc::outside_stats().is_none());
    let r = profpoint::snapshot();
    assert!(r.alloc.is_none());
    assert!(r.points.iter().all(|p| p.alloc.is_none()));
    let mut t = Vec::new();
    profpoint::write_table(&r, &mut t).unwrap();
    let t = String::from_utf8(t).unwrap();
    assert!(t.contains("points::allocates"), "{t}");
    assert!(!t.contains("allocs") && !t.contains("held.bytes"), "{t}");
    let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert!(j.get("alloc").is_none(), "{j}");
    assert!(
        j["points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p.get("alloc").is_none())
    );
    drop(v);
}
