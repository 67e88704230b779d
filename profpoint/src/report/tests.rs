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
    TreeNode {
        parent: None,
        name: String::new(),
        file: String::new(),
        line: 0,
        calls,
        timed,
        total_ns,
        self_ns,
        estimated: false,
    }
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
        report.overhead = (round % 2 == 0).then(|| Overhead {
            per_call_ns: float(s),
            in_interval_ns: float(s),
        });
        report.run.command = vec!["prog".into(), "--name=\"a b\"\n\t\u{1}é🦀".into()];
        report.points.push(PointReport {
            name: format!("crate::f{round}<\"T\">"),
            file: "src/\\lib.rs".into(),
            line: round,
            enabled: round % 3 == 0,
            kind: "sync".into(),
            sampling: (round % 2 == 1).then_some(round),
            estimated: round % 2 == 1,
            nr: next(s),
            nr_ci95: None,
            nr_estimated: false,
            timed: next(s) >> 3,
            nested: 0,
            total_ns: u64::MAX,
            self_ns: (round % 5 != 0).then(|| next(s) % 1000),
            avg_ns: 1,
            min_ns: 0,
            max_ns: next(s),
            p50_ns: 5,
            p90_ns: 9,
            p99_ns: 99,
            p999_ns: 999,
            stddev_ns: 3,
            wall_percent: float(s),
            total_ci95_ns: next(s) % 7,
            hist: vec![[5, next(s) % 9], [u64::MAX, 1]],
            sampled_self: (round % 3 == 1).then(|| next(s)),
            idle_ns: next(s) % 11,
        });
        report.tracepoints.push(TracepointInfo {
            name: format!("net::rx{round}"),
            enabled: true,
            probes: 2,
            counting: false,
            hits: next(s),
            error: (round % 4 == 0).then(|| "W^X: \"mprotect\" failed".to_string()),
            probe_panics: round as u64 % 3,
            file: "x.rs".into(),
            line: 7,
        });
        #[cfg(feature = "heatmap")]
        {
            report.heatmap = Some(heatmap::Report {
                source: "perf task-clock".into(),
                mode: "cpu".into(),
                by: heatmap::By::Function,
                bucket_size: 16,
                requested_hz: 997,
                achieved_hz: (round % 2 == 0).then(|| float(s)),
                achieved_hz_per_cpu_second: Some(float(s)),
                user_cpu_seconds: float(s),
                sys_cpu_seconds: float(s),
                wall_seconds: float(s),
                total_samples: next(s),
                other: 1,
                proc_samples: 0,
                excluded: 2,
                base: 3,
                warnings: vec!["throttled\n".into()],
                rows: vec![heatmap::Row {
                    address: next(s),
                    function: "<alloc::vec::Vec<T> as Drop>::drop".into(),
                    library: Some("libc.so.6".into()),
                    nr: 70,
                    percent: float(s),
                    location: None,
                    inlined: vec!["a".into(), "b".into()],
                }],
                stacks: None,
            });
            let mut calibration = heatmap::pmu::Calibration {
                windows: 40,
                ..Default::default()
            };
            calibration.fixed.iter_mut().for_each(|f| *f = float(s));
            report.pmu = Some(heatmap::pmu::PmuReport {
                method: heatmap::pmu::Method::UniformLongPeriod,
                windows: 10,
                discarded: 1,
                overlong: 0,
                long_period: 10_000_000,
                window: 3_000,
                calibration,
                events: vec![
                    heatmap::pmu::Event::TaskClock,
                    heatmap::pmu::Event::PageFaults,
                ],
                warnings: vec![],
                rows: vec![heatmap::pmu::PmuRow {
                    symbol: "f".into(),
                    windows: 3,
                    cpi: Some(float(s)),
                    bm_per_ki: None,
                    cm_per_ki: Some(float(s)),
                    cm_percent: Some(float(s)),
                    clock_percent: float(s),
                    instructions_percent: None,
                    branch_misses_percent: Some(float(s)),
                    page_faults_per_ms: Some(float(s)),
                    l1d_reads_percent: None,
                    l1d_misses_percent: Some(float(s)),
                }],
            });
        }
        assert_eq!(
            report.to_json(),
            serde_json::to_string_pretty(&report).unwrap()
        );
    }
}
