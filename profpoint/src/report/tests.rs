use super::tree::scale_to_rows;
use super::*;

/// An estimated total above the wall time times the threads is cut to it, its interval
/// widened to cover the truth; an exact one, or one within the run, is left alone.
#[test]
fn an_estimate_above_the_run_is_cut_to_it() {
    let (c, e) = counts(10, 100);
    let p = &point::all()[0];
    let clk = clock::info();
    let mut r = point_report(p, &c, &e, &clk, 1_000, 0.0);
    r.kind = "sync".into();
    r.self_ns = Some(9_000);
    r.total_ns = 10_000;
    r.avg_ns = 1_000;
    r.total_ci95_ns = 50;
    r.estimated = false;
    let exact = r.clone();
    within_the_run(&mut r, 1_000, 2);
    assert_eq!(r, exact, "an exact figure is never changed");
    r.estimated = true;
    let within = r.clone();
    within_the_run(&mut r, 10_000, 1);
    assert_eq!(r, within, "within the run: unchanged");
    within_the_run(&mut r, 1_000, 2);
    assert_eq!(r.total_ns, 2_000);
    assert_eq!(r.self_ns, Some(2_000));
    assert_eq!(r.avg_ns, 200);
    assert_eq!(r.total_ci95_ns, 2_000);
    assert!((r.wall_percent - 200.0).abs() < 1e-9);
}

/// A point whose calls were all left untimed (counted by the budget, or sampled 1 in N with
/// fewer than N calls) has an unknown time, not a measured 0: marked estimated, with the
/// run's wall time as its interval.
#[test]
fn a_point_with_no_timed_call_is_an_estimate_with_the_run_as_its_interval() {
    let p = &point::all()[0];
    let clk = clock::info();
    let c = Counts {
        skipped: 30,
        ..Counts::default()
    };
    let mut e = Est::default();
    e.fold(&c.scalars());
    let r = point_report(p, &c, &e, &clk, 5_000_000, 0.0);
    assert!(r.estimated, "{r:?}");
    assert_eq!((r.nr, r.timed, r.total_ns), (30, 0, 0), "{r:?}");
    assert_eq!(r.total_ci95_ns, 5_000_000, "{r:?}");
    // Nothing to estimate with no call at all.
    let none = point_report(p, &Counts::default(), &e, &clk, 5_000_000, 0.0);
    assert!(!none.estimated && none.total_ci95_ns == 0, "{none:?}");
}

/// A point in segments (a span) sampled 1 in 4: its idle time, measured on the timed calls
/// only, stands for every call as its total does; exact, it is left as measured.
#[test]
fn a_sampled_point_s_idle_time_stands_for_every_call() {
    let p = &point::all()[0];
    let clk = clock::info();
    let mut c = Counts {
        timed: 10,
        total: 10 * 1_000,
        idle: 10 * 500,
        ..Counts::default()
    };
    let exact = point_report(p, &c, &counts(10, 1_000).1, &clk, u64::MAX / 4, 0.0);
    assert!(!exact.estimated);
    assert_eq!(exact.idle_ns, clk.to_ns(5_000));
    c.skipped = 30;
    let mut e = Est::default();
    e.fold(&c.scalars());
    let r = point_report(p, &c, &e, &clk, u64::MAX / 4, 0.0);
    assert!(r.estimated);
    let want = clk.to_ns(20_000);
    assert!(
        r.idle_ns.abs_diff(want) <= 1,
        "{} against {want}",
        r.idle_ns
    );
    assert!(
        r.total_ns.abs_diff(clk.to_ns(40_000)) <= 1,
        "{}",
        r.total_ns
    );
}

/// A point's counts with `outer` timed outermost calls of `each` ticks.
fn counts(outer: u64, each: u64) -> (Counts, Est) {
    let c = Counts {
        timed: outer,
        total: outer * each,
        ..Counts::default()
    };
    let mut e = Est::default();
    e.fold(&c.scalars());
    (c, e)
}

/// Isolated means without spread (the error bars are their own test).
fn means(m: &[Option<f64>]) -> Vec<Option<budget::IsolatedMean>> {
    m.iter()
        .map(|m| m.map(|mean| budget::IsolatedMean { mean, stderr: 0.0 }))
        .collect()
}

fn node(calls: u64, timed: u64, total_ns: u64, self_ns: Option<i64>) -> TreeNode {
    let mut node = TreeNode::default();
    node.calls = calls;
    node.timed = timed;
    node.total_ns = total_ns;
    node.self_ns = self_ns;
    node
}

#[test]
fn a_throttled_point_s_tree_nodes_are_scaled_to_its_row() {
    // Point 0, in bursts: two paths that saw 30 and 10 of its calls, every one timed (300
    // and 100 ns of self time, 600 and 100 of total); its row: 4,000 calls, 80,000 ns
    // total, 40,000 ns self. Point 1, sampled one call in 4: its nodes count every call
    // (its row says as many), so they stay. Point 2 has no row (not estimated); point 3 is
    // async (no self time), in bursts.
    let mut nodes = vec![
        node(30, 30, 600, Some(300)),
        node(10, 10, 100, Some(100)),
        node(40, 10, 500, Some(200)),
        node(5, 5, 50, Some(50)),
        node(2, 2, 100, None),
    ];
    let of = [0, 0, 1, 2, 3];
    let row = |calls, total_ns, self_ns| {
        Some(Row {
            calls,
            total_ns,
            self_ns,
        })
    };
    let rows = [
        row(4000, 80_000, Some(40_000)),
        row(40, 2000, Some(800)),
        None,
        row(20, 1000, None),
    ];
    let before = nodes.clone();
    scale_to_rows(&mut nodes, &of, &rows);
    // Point 0: calls 3,000 and 1,000; self 30,000 and 10,000 (its paths' 3:1); total in
    // its paths' 6:1, within the rounding of a stored ns per timed call (0.5 ns times 100
    // calls a timed one).
    assert_eq!((nodes[0].calls, nodes[1].calls), (3000, 1000));
    assert_eq!(
        (nodes[0].est_self_ns(), nodes[1].est_self_ns()),
        (30_000, 10_000)
    );
    let total = |n: &TreeNode| n.total_ns * n.calls / n.timed;
    assert!((total(&nodes[0]) + total(&nodes[1])).abs_diff(80_000) <= 100);
    assert!(total(&nodes[0]).abs_diff(6 * total(&nodes[1])) <= 6 * 100);
    assert!(nodes[0].estimated && nodes[1].estimated);
    // Points 1 and 2 untouched.
    assert_eq!(nodes[2..4], before[2..4]);
    // Point 3: calls and total scaled, no self time.
    assert_eq!((nodes[4].calls, nodes[4].self_ns), (20, None));
    assert_eq!(total(&nodes[4]), 1000);
    assert!(nodes[4].estimated);
}

#[test]
fn an_isolated_point_s_self_time_is_its_calls_less_its_children_s() {
    // 0 (10 calls of 100 ticks alone) calls 1 (20 calls of 30 alone); 1 is called as
    // often from 2, which has no isolated mean; 0 also calls itself, and 3 (no isolated
    // mean: priced at its own mean call, 5 ticks).
    let all = vec![
        counts(10, 100),
        counts(40, 30),
        counts(5, 50),
        counts(10, 5),
    ];
    let iso = budget::Isolation {
        means: means(&[Some(100.0), Some(30.0), None, None]),
        edges: vec![
            ((1, 2), [20.0, 20.0, 600.0]),
            ((3, 2), [20.0, 20.0, 600.0]),
            ((1, 1), [7.0, 7.0, 700.0]),
            ((1, 4), [3.0, 0.0, 0.0]),
            ((0, 1), [10.0, 10.0, 1000.0]),
        ],
    };
    let own = |iso: &budget::Isolation| -> Vec<Option<f64>> {
        from_isolated(&all, iso)
            .iter()
            .map(|s| s.map(|s| s.own))
            .collect()
    };
    // 0: 1,000 less half of 1's 40 calls at 30 (600) less all of 3's 10 calls at 5 (50).
    assert_eq!(
        own(&iso),
        [Some(1000.0 - 600.0 - 50.0), Some(1200.0), None, None]
    );
    // Its total is its isolated mean call times its calls, whatever its counters say.
    let split = from_isolated(&all, &iso);
    assert_eq!(split[0].map(|s| (s.mean, s.total)), Some((100.0, 1000.0)));
    assert_eq!(split[1].map(|s| s.total), Some(40.0 * 30.0));
    // Never below zero: a parent whose children's means add up to more than its own.
    let iso = budget::Isolation {
        means: means(&[Some(10.0), Some(30.0), None, None]),
        ..iso
    };
    assert_eq!(own(&iso)[0], Some(0.0));
    // 1's calls from 0 take three times as long as those from 2 in the windows: 0 is
    // charged 1.5 times 1's mean call for them (its share of 1's ticks), 2 half.
    let iso = budget::Isolation {
        means: means(&[Some(100.0), Some(30.0), Some(60.0), None]),
        edges: vec![((1, 2), [20.0, 20.0, 900.0]), ((3, 2), [20.0, 20.0, 300.0])],
    };
    let own = own(&iso);
    assert_eq!(own[0], Some(1000.0 - 0.5 * 40.0 * 30.0 * 1.5));
    assert_eq!(own[2], Some(300.0 - 0.5 * 40.0 * 30.0 * 0.5));
}

#[test]
fn a_child_s_preempted_call_is_not_what_its_parent_s_calls_of_it_cost() {
    // 0 (10 calls of 1,000 ticks alone) makes every call of 1: 40 calls of 30 ticks, and
    // one more in which its thread was preempted for 1,000,000 ticks.
    let mut child = counts(41, 30);
    child.0.total += 1_000_000;
    child.0.max = 1_000_030;
    child.1 = Est::default();
    child.1.fold(&child.0.scalars());
    let all = vec![counts(10, 1000), child];
    let iso = budget::Isolation {
        means: means(&[Some(1000.0), None]),
        edges: vec![((1, 2), [41.0, 41.0, 41.0 * 30.0])],
    };
    let s = from_isolated(&all, &iso)[0].unwrap();
    // Priced at its usual 30 ticks, not at the preemption's share of its total (~24,400).
    assert_eq!(s.own, 10_000.0 - 41.0 * 30.0);
}

#[test]
fn an_isolated_total_s_error_bar_is_its_mean_s_times_its_calls() {
    let all = vec![counts(10, 100)];
    let iso = budget::Isolation {
        means: vec![Some(budget::IsolatedMean {
            mean: 90.0,
            stderr: 5.0,
        })],
        edges: vec![],
    };
    let s = from_isolated(&all, &iso)[0].unwrap();
    assert_eq!((s.total, s.own), (900.0, 900.0));
    assert!((s.ci95 - 1.96 * 5.0 * 10.0).abs() < 1e-9);
}

/// xorshift64*: reproducible values for the report's float fields.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// A float of the kinds reports hold: percentages, ratios, rates, seconds, and now and then
/// an edge (zero, integral, tiny, huge, not finite).
fn float(state: &mut u64) -> f64 {
    let r = next(state);
    match r % 8 {
        0 => [0.0, 100.0, 1e-7, 1e300, f64::NAN, f64::INFINITY, -0.0, 2.5][(r >> 8) as usize % 8],
        1 => f64::from_bits(next(state)),
        _ => (r >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((r % 7) as i32 * 2 - 4),
    }
}

/// The JSON report is exactly what serde_json writes for it (it was written by serde_json
/// before profpoint-json replaced it; readers of the schema see no change).
#[test]
fn json_is_what_serde_json_writes() {
    let mut state = 0x1234_5678_9abc_def0;
    let mut report = crate::snapshot();
    for round in 0..50 {
        let s = &mut state;
        report.clock.ghz = float(s);
        report.overhead = (round % 2 == 0).then(|| {
            let mut overhead = Overhead::default();
            overhead.per_call_ns = float(s);
            overhead.in_interval_ns = float(s);
            overhead
        });
        report.run.command = vec!["prog".into(), "--name=\"a b\"\n\t\u{1}é🦀".into()];
        let mut p = PointReport::default();
        p.name = format!("crate::f{round}<\"T\">");
        p.file = "src/\\lib.rs".into();
        p.line = round;
        p.enabled = round % 3 == 0;
        p.kind = "sync".into();
        p.sampling = (round % 2 == 1).then_some(round);
        p.estimated = round % 2 == 1;
        p.nr = next(s);
        p.timed = next(s) >> 3;
        p.total_ns = u64::MAX;
        p.self_ns = (round % 5 != 0).then(|| next(s) % 1000);
        p.avg_ns = 1;
        p.max_ns = next(s);
        p.p50_ns = 5;
        p.p90_ns = 9;
        p.p99_ns = 99;
        p.p999_ns = 999;
        p.stddev_ns = 3;
        p.wall_percent = float(s);
        p.total_ci95_ns = next(s) % 7;
        p.hist = vec![[5, next(s) % 9], [u64::MAX, 1]];
        p.sampled_self = (round % 3 == 1).then(|| next(s));
        p.idle_ns = next(s) % 11;
        report.points.push(p);
        let mut tp = TracepointInfo::default();
        tp.name = format!("net::rx{round}");
        tp.enabled = true;
        tp.probes = 2;
        tp.hits = next(s);
        tp.error = (round % 4 == 0).then(|| "W^X: \"mprotect\" failed".to_string());
        tp.probe_panics = round as u64 % 3;
        tp.file = "x.rs".into();
        tp.line = 7;
        report.tracepoints.push(tp);
        #[cfg(feature = "heatmap")]
        {
            let mut h = heatmap::Report::default();
            h.source = "perf task-clock".into();
            h.mode = "cpu".into();
            h.by = heatmap::By::Function;
            h.bucket_size = 16;
            h.requested_hz = 997;
            h.achieved_hz = (round % 2 == 0).then(|| float(s));
            h.achieved_hz_per_cpu_second = Some(float(s));
            h.user_cpu_seconds = float(s);
            h.sys_cpu_seconds = float(s);
            h.wall_seconds = float(s);
            h.total_samples = next(s);
            h.other = 1;
            h.excluded = 2;
            h.base = 3;
            h.warnings = vec!["throttled\n".into()];
            let mut row = heatmap::Row::default();
            row.address = next(s);
            row.function = "<alloc::vec::Vec<T> as Drop>::drop".into();
            row.library = Some("libc.so.6".into());
            row.nr = 70;
            row.percent = float(s);
            row.inlined = vec!["a".into(), "b".into()];
            h.rows = vec![row];
            report.heatmap = Some(h);
            let mut calibration = heatmap::pmu::Calibration::default();
            calibration.windows = 40;
            calibration.fixed.iter_mut().for_each(|f| *f = float(s));
            let mut pmu = heatmap::pmu::PmuReport::new(heatmap::pmu::Method::UniformLongPeriod);
            pmu.windows = 10;
            pmu.discarded = 1;
            pmu.long_period = 10_000_000;
            pmu.window = 3_000;
            pmu.calibration = calibration;
            pmu.events = vec![
                heatmap::pmu::Event::TaskClock,
                heatmap::pmu::Event::PageFaults,
            ];
            let mut row = heatmap::pmu::PmuRow::default();
            row.symbol = "f".into();
            row.windows = 3;
            row.cpi = Some(float(s));
            row.cm_per_ki = Some(float(s));
            row.cm_percent = Some(float(s));
            row.clock_percent = float(s);
            row.branch_misses_percent = Some(float(s));
            row.page_faults_per_ms = Some(float(s));
            row.l1d_misses_percent = Some(float(s));
            pmu.rows = vec![row];
            report.pmu = Some(pmu);
        }
        assert_eq!(
            report.to_json(),
            serde_json::to_string_pretty(&report).unwrap()
        );
    }
}

/// A synchronous test point named `$name`, in the linker's table like a user's.
#[cfg(not(any(loom, feature = "off")))]
macro_rules! sync_point {
    ($id:ident, $name:literal) => {
        #[linkme::distributed_slice(POINTS)]
        static $id: Point = Point::new(Name::Static($name), Kind::Sync, file!(), line!());
    };
}

/// A call split into segments (an async call's polls) reports as one call with its idle time.
#[cfg(not(any(loom, feature = "off")))]
mod split_call {
    use super::*;
    use crate::point::{Name, POINTS, Point, SplitCall};

    sync_point!(SPLIT, "segment::split");
    sync_point!(INSIDE, "segment::inside");

    /// One segment: time on this thread with a point nested in it.
    fn segment(call: &mut SplitCall) {
        let s = call.enter(&SPLIT);
        drop(INSIDE.guard());
        call.exit(s);
    }

    /// Two segments on two threads, a wait between them: one call, its busy time the point's
    /// total and its only distribution entry, its idle time reported; the nested point counts
    /// each of its calls, under the split point in the tree.
    #[test]
    fn a_call_in_segments_on_two_threads_is_one_call_with_its_idle_time() {
        crate::budget::set(None);
        let mut call = SplitCall::new();
        assert!(!call.entered());
        segment(&mut call);
        std::thread::sleep(std::time::Duration::from_millis(1));
        let mut call = std::thread::spawn(move || {
            segment(&mut call);
            call
        })
        .join()
        .unwrap();
        assert!(call.entered() && call.idle_ticks() > 0 && call.busy_ticks() > 0);
        let report = collect(&ReportOptions::default());
        let point = |name: &str| report.points.iter().find(|p| p.name == name).cloned();
        // Not finished: its time is in, its call is not.
        assert!(point("segment::split").is_none_or(|p| p.nr == 0));
        call.finish(&SPLIT);
        assert!(!call.entered(), "a finished call is new again");
        let report = collect(&ReportOptions::default());
        let point = |name: &str| report.points.iter().find(|p| p.name == name).unwrap();
        let split = point("segment::split");
        assert_eq!((split.nr, split.timed), (1, 1));
        assert_eq!(split.min_ns, split.max_ns);
        assert!(split.idle_ns > 0 && split.total_ns > 0);
        assert_eq!(point("segment::inside").nr, 2);
        let tree = report.tree.as_ref().unwrap();
        let calls = |path: &[&str]| {
            (0..tree.nodes.len())
                .filter(|&i| tree.path(i) == path)
                .map(|i| tree.nodes[i].calls)
                .sum::<u64>()
        };
        assert_eq!(calls(&["segment::split"]), 1);
        assert_eq!(calls(&["segment::split", "segment::inside"]), 2);
    }
}

/// A counted-only call stands in the report for its self time, not its total.
#[cfg(not(any(loom, feature = "off")))]
mod stand_in {
    use super::*;
    use crate::point::{Name, POINTS, Point};

    sync_point!(OUTER, "stand_in::outer");
    sync_point!(MID, "stand_in::mid");
    sync_point!(INNER, "stand_in::inner");

    /// A counted-only call adds its stand-in to the interval around it as it starts, and the
    /// points nested in it add their own times as they run: its stand-in is its mean self
    /// time, or the nested points' time would leave the parent twice.
    #[test]
    fn a_counted_call_stands_for_its_self_time_not_its_total() {
        crate::budget::set(None);
        MID.set_counting();
        // A mean call of 10,000,000 ticks (milliseconds), all of it in nested points.
        MID.set_means(10_000_000, 0);
        const CALLS: u64 = 100;
        for i in 0..CALLS {
            let _outer = OUTER.guard();
            let _mid = MID.guard();
            let _inner = INNER.guard();
            std::hint::black_box(i);
        }
        let report = collect(&ReportOptions::default());
        let point = |name: &str| report.points.iter().find(|p| p.name == name).unwrap();
        let outer = point("stand_in::outer");
        assert_eq!(outer.nr, CALLS);
        assert_eq!(point("stand_in::mid").nr, CALLS);
        // Standing for its total, every call would take milliseconds of self time the outer
        // point never had (its self time would read 0, clamped); standing for its self time
        // (0 here), the outer point keeps what lies between its clock reads and the inner
        // point's: the guards' own work.
        let own = outer.self_ns.unwrap();
        assert!(
            own > 0 && own <= outer.total_ns,
            "outer's self time {own} ns of {} ns over {CALLS} calls",
            outer.total_ns
        );
    }
}

/// The bound on an estimated total counts the threads that called the point, not every
/// thread of the process: a point called on three threads is held to three walls.
#[cfg(not(any(loom, feature = "off")))]
mod threads_per_point {
    use super::*;
    use crate::point::{Name, POINTS, Point};

    sync_point!(ON_THREE, "bound::on_three");
    sync_point!(NEVER, "bound::never");

    #[test]
    fn each_point_counts_the_threads_that_called_it() {
        // Alive at once, so on three shards (a thread's shard is reused once it ends).
        let barrier = std::sync::Barrier::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    drop(ON_THREE.guard());
                    barrier.wait();
                });
            }
        });
        let index = |p: &Point| {
            point::all()
                .iter()
                .position(|q| std::ptr::eq(q, p))
                .unwrap()
        };
        let per = shard::shards_per_point(point::all().len());
        assert_eq!(per[index(&ON_THREE)], 3, "{per:?}");
        assert_eq!(per[index(&NEVER)], 0);
    }
}

mod sampled_times {
    use super::super::tree::{Sampling, sampled_times};

    fn measured(parent: Option<usize>, ns: f64) -> Sampling {
        Sampling {
            parent,
            measured_ns: ns,
            sampled: false,
            before_ns: 0.0,
            samples: 0,
        }
    }

    fn sampled(parent: Option<usize>, timed_ns: f64, before_ns: f64, samples: u64) -> Sampling {
        Sampling {
            parent,
            measured_ns: timed_ns,
            sampled: true,
            before_ns,
            samples,
        }
    }

    /// Two sampled children whose estimates add up to more than their measured parent are
    /// shrunk to fit it (each above what its timed calls measured), so the parent's self time
    /// is 0, not negative; a measured sibling keeps its figure; the intervals cover the moves.
    #[test]
    fn children_never_outgrow_their_parent() {
        // Period 1 ms: the parent measured 100 ms; children sampled 70 and 50 ms (their timed
        // calls 10 and 5 ms), a measured child of 10 ms.
        let nodes = [
            measured(None, 100e6),
            sampled(Some(0), 10e6, 0.0, 70),
            sampled(Some(0), 5e6, 0.0, 50),
            measured(Some(0), 10e6),
        ];
        let out = sampled_times(&nodes, 1e6, 1e9);
        let t: Vec<f64> = out
            .iter()
            .map(|o| o.map_or(f64::NAN, |o| o.total_ns))
            .collect();
        assert_eq!(t[0], 100e6, "a measured total stands");
        assert!(
            t[3].is_nan(),
            "a measured leaf with no sampled child is left alone"
        );
        let kids = t[1] + t[2] + 10e6;
        assert!(
            (kids - 100e6).abs() < 1.0,
            "children fill the parent exactly: {t:?}"
        );
        assert!(t[1] >= 10e6 && t[2] >= 5e6, "{t:?}");
        // The excesses over the lower bounds (60 and 45 ms) shrink in proportion to the 75 ms
        // left: 75 of 105.
        assert!((t[1] - (10e6 + 60e6 * 75.0 / 105.0)).abs() < 1.0, "{t:?}");
        let parent = out[0].unwrap();
        assert!(parent.self_ns.abs() < 1.0, "{parent:?}");
        for i in [1, 2] {
            let o = out[i].unwrap();
            let est = nodes[i].samples as f64 * 1e6;
            assert!(o.ci95_ns >= (est - o.total_ns).abs(), "{o:?}");
            assert!(o.self_ns >= 0.0 && o.self_ns <= o.total_ns, "{o:?}");
        }
    }

    /// A sampled parent with few samples is held up to its measured children (a lower bound
    /// the truth obeys) and to what its own timed calls measured; `before` is added to its
    /// samples; an outermost one is held to the run's bound.
    #[test]
    fn a_sampled_total_keeps_its_lower_and_upper_bounds() {
        let nodes = [
            sampled(None, 1e6, 2e6, 3),
            measured(Some(0), 40e6),
            sampled(None, 0.0, 0.0, 5_000),
        ];
        let out = sampled_times(&nodes, 1e6, 1e9);
        let p = out[0].unwrap();
        // 2 ms before + 3 samples (+ the child's none) = 5 ms, under the child's 40 ms.
        assert_eq!(p.total_ns, 40e6);
        assert_eq!(p.self_ns, 0.0);
        assert!(
            p.ci95_ns >= 35e6,
            "the clamp's move is in the interval: {p:?}"
        );
        // 5 s of samples against a 1 s bound.
        assert_eq!(out[2].unwrap().total_ns, 1e9);
        // An unclamped estimate: before + subtree samples, the Poisson interval plus a period.
        let out = sampled_times(&[sampled(None, 0.0, 1e6, 100)], 1e6, 1e12);
        let o = out[0].unwrap();
        assert_eq!(o.total_ns, 101e6);
        assert!((o.ci95_ns - (1.96 * 10.0 + 1.0) * 1e6).abs() < 1.0, "{o:?}");
    }
}
