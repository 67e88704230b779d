//! The targets for per-function metrics by alternating sample periods, checked in one run:
//! each line says PASS, MISS or SKIP (with the reason), and the exit status is 1 on any MISS.
//!
//! 1. The software mode (always; no PMU needed), on `fault_pages`/`spin`, whose page-fault
//!    rates are counted around each call as the ground truth:
//!    - the windows' page faults/ms in `fault_pages` within 25% of the truth, counted in the
//!      same run;
//!    - `spin` (truth 0) under 1% of `fault_pages`' rate, while uniform sampling at the long
//!      period, emulated from the same run, smears at least 10% into it (the patch's point);
//!    - overhead at the defaults at most 5% of wall time, interleaved with runs without it;
//!    - signals at most 2.2x those of uniform sampling at the long period.
//! 2. The hardware mode (where a PMU exists), on the patch's six functions, against counters
//!    read around each call:
//!    - CPI within 15% for the compute-bound functions (all but `dcache_miss`);
//!    - branch-misses/KI and cache-misses/KI: every pair of functions whose truths differ by 2x
//!      or more is ranked the same way; `branch_mispredicts` leads BM/KI, `dcache_miss` CM/KI;
//!    - the windows' mean CPI error below uniform long-period sampling's;
//!    - overhead at the defaults at most 5% of wall time.
//!
//! Run: `cargo bench -p profpoint-heatmap --bench pmu_targets`.

#[cfg(target_os = "linux")]
use profpoint_test_support::faults;

#[cfg(target_os = "linux")]
use profpoint_test_support::seed;

#[cfg(target_os = "linux")]
use profpoint_test_support::workload;

#[cfg(target_os = "linux")]
mod linux {
    use profpoint_heatmap::pmu::{self, Counters, Event, PmuConfig, PmuReport};
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use super::faults;
    use super::seed;
    use super::workload;

    /// Prints one verdict; returns whether it passed.
    fn check(name: &str, measured: f64, limit: f64, below: bool, unit: &str) -> bool {
        let pass = if below {
            measured <= limit
        } else {
            measured >= limit
        };
        println!(
            "{:<4}  {name:<66} {measured:>9.2} {unit:<5} ({} {limit:.2})",
            if pass { "PASS" } else { "MISS" },
            if below { "limit" } else { "at least" }
        );
        pass
    }

    fn row<'a>(r: &'a PmuReport, suffix: &str) -> Option<&'a pmu::PmuRow> {
        r.rows.iter().find(|x| x.symbol.ends_with(suffix))
    }

    /// The windows' report and the uniform long-period baseline from the same run, printed.
    fn both_reports(profile: &pmu::PmuProfile) -> (PmuReport, PmuReport) {
        let r = profile.report(20);
        let u = profile.uniform_report_through(20, &[]);
        let mut text = Vec::new();
        r.write_table(&mut text).expect("writing to memory");
        u.write_table(&mut text).expect("writing to memory");
        println!("{}", String::from_utf8_lossy(&text));
        (r, u)
    }

    /// A sampler past its calibration (steady state), for the overhead rounds.
    fn calibrated(config: PmuConfig) -> pmu::PmuSampler {
        let mut s = pmu::start(config).expect("the mode started once already");
        s.calibrated();
        s
    }

    /// Overhead of running `work` under a sampler started by `start`, interleaved with runs
    /// without it: the ratio of median wall times per round, minus one.
    fn overhead(start: &dyn Fn() -> Option<pmu::PmuSampler>, work: &mut dyn FnMut()) -> f64 {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..9 {
            let t = Instant::now();
            work();
            without.push(t.elapsed().as_secs_f64());
            let s = start();
            let t = Instant::now();
            work();
            with.push(t.elapsed().as_secs_f64());
            drop(s);
        }
        workload::median(&with) / workload::median(&without) - 1.0
    }

    fn software() -> bool {
        let mut ok = true;
        if let Err(e) = Counters::open_with(Event::TaskClock, &[Event::PageFaults]) {
            println!("SKIP  software mode: {e}");
            return true;
        }
        let config = PmuConfig {
            long_period: 2_000_000,
            window: 300_000,
            ..PmuConfig::software()
        };
        let mut sampler = pmu::start(config).expect("the software mode starts where it can count");
        sampler.calibrated();
        let before = sampler.recorded();
        // The ground truth in the same run: a second group on this thread, read around every call
        // of fault_pages (the fault rate drifts with the machine's state).
        let truth = Counters::open_with(Event::TaskClock, &[Event::PageFaults]).expect("checked");
        let cpu0 = workload::process_cpu();
        let (ns, faults) = faults::workload(Duration::from_secs(4), Some(&|| truth.read()));
        let cpu = workload::process_cpu() - cpu0;
        drop(truth);
        let true_rate = 1e6 * faults as f64 / ns as f64;
        let profile = sampler.stop();
        let windows = profile.windows.len() - before;
        let (r, u) = both_reports(&profile);
        println!("      ground truth in fault_pages: {true_rate:.1} page faults/ms");
        let rate = |r: &PmuReport, f: &str| row(r, f).and_then(|x| x.page_faults_per_ms);
        match (rate(&r, "fault_pages"), rate(&r, "spin"), rate(&u, "spin")) {
            (Some(f), Some(s), Some(us)) => {
                ok &= check(
                    "software: fault_pages page faults/ms, error against the truth",
                    100.0 * (f / true_rate - 1.0).abs(),
                    25.0,
                    true,
                    "%",
                );
                ok &= check(
                    "software: spin's page faults/ms, share of fault_pages' (truth 0)",
                    100.0 * s / f,
                    1.0,
                    true,
                    "%",
                );
                ok &= check(
                    "software: uniform long-period sampling's smear into spin, same share",
                    100.0 * us / f,
                    10.0,
                    false,
                    "%",
                );
            }
            _ => {
                println!("MISS  software: a function got no credited window");
                ok = false;
            }
        }
        // Two signals per window against one per uniform sample at the same long period: the
        // heatmap's perf task-clock sampling on the same workload, measured the same way (both
        // skip firings that land in the kernel).
        let hz = (1e9 / profile.config.long_period as f64) as u32;
        let uniform = profpoint_heatmap::start(
            profpoint_heatmap::Config::new()
                .hz(hz)
                .source(profpoint_heatmap::Source::PerfTaskClock),
        )
        .expect("uniform task-clock sampling starts where the software mode does");
        let cpu0 = workload::process_cpu();
        faults::workload(Duration::from_secs(2), None);
        let ucpu = workload::process_cpu() - cpu0;
        let samples = uniform.stop().total_samples();
        println!(
            "      signals per CPU second: windows {:.0}, uniform at {hz} Hz {:.0}",
            (2 * windows) as f64 / cpu,
            samples as f64 / ucpu
        );
        ok &= check(
            "software: signals per CPU second, ratio to uniform at the long period",
            ((2 * windows) as f64 / cpu) / (samples as f64 / ucpu),
            2.2,
            true,
            "x",
        );
        let buf = workload::input();
        // A fixed amount of work (wall time is what is compared): as many calls as fit in 300 ms.
        let t = Instant::now();
        let mut calls = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            black_box(workload::workload(black_box(&buf)));
            calls += 1;
        }
        let o = overhead(&|| Some(calibrated(PmuConfig::software())), &mut || {
            for _ in 0..calls {
                black_box(workload::workload(black_box(&buf)));
            }
        });
        ok &= check(
            "software: overhead at the defaults, wall time",
            100.0 * o,
            5.0,
            true,
            "%",
        );
        ok
    }

    fn hardware() -> bool {
        if let Err(e) = pmu::available() {
            println!("SKIP  hardware mode: {e}");
            return true;
        }
        let mut ok = true;
        let events = PmuConfig::default().events;
        let buf: Vec<u64> = (0..seed::BUF as u64 / 8).collect();
        let mut rng = 0x1234_5678_9abc_def1u64;
        let counters = Counters::open(&events).expect("checked above");
        let mut truth = vec![vec![0u64; events.len() + 1]; 6];
        for round in 0..60 {
            for f in seed::order(round) {
                let a = counters.read();
                seed::call(f, &buf, &mut rng);
                let b = counters.read();
                for (t, (x, y)) in truth[f].iter_mut().zip(a.iter().zip(&b)) {
                    *t += y - x;
                }
            }
        }
        drop(counters);
        let at = |e: Event| 1 + events.iter().position(|x| *x == e).unwrap();
        let per_ki =
            |t: &[u64], e: Event| 1000.0 * t[at(e)] as f64 / t[at(Event::Instructions)] as f64;
        let true_cpi: Vec<f64> = truth
            .iter()
            .map(|t| t[0] as f64 / t[at(Event::Instructions)] as f64)
            .collect();
        let true_bm: Vec<f64> = truth
            .iter()
            .map(|t| per_ki(t, Event::BranchMisses))
            .collect();
        let true_cm: Vec<f64> = truth
            .iter()
            .map(|t| per_ki(t, Event::CacheMisses))
            .collect();

        let mut sampler = pmu::start(PmuConfig::default()).expect("the hardware mode starts");
        sampler.calibrated();
        let t = Instant::now();
        let mut round = 0;
        while t.elapsed() < Duration::from_secs(5) {
            for f in seed::order(round) {
                seed::call(f, &buf, &mut rng);
            }
            round += 1;
        }
        let profile = sampler.stop();
        let (r, u) = both_reports(&profile);
        println!("      ground truth (counters around every call):");
        for (i, name) in seed::NAMES.iter().enumerate() {
            println!(
                "      {name:<20} CPI {:>6.2}  BM/KI {:>7.2}  CM/KI {:>7.2}",
                true_cpi[i], true_bm[i], true_cm[i]
            );
        }
        let get = |r: &PmuReport, i: usize| row(r, seed::NAMES[i]).cloned();
        let (mut err_w, mut err_u) = (Vec::new(), Vec::new());
        for (i, &cpi) in true_cpi.iter().enumerate() {
            let (Some(w), Some(uu)) = (get(&r, i), get(&u, i)) else {
                println!("MISS  hardware: {} got no credited window", seed::NAMES[i]);
                ok = false;
                continue;
            };
            let e = |x: Option<f64>| 100.0 * (x.unwrap_or(f64::INFINITY) / cpi - 1.0).abs();
            if seed::NAMES[i] != "dcache_miss" {
                ok &= check(
                    &format!("hardware: CPI error, {}", seed::NAMES[i]),
                    e(w.cpi),
                    15.0,
                    true,
                    "%",
                );
            }
            err_w.push(e(w.cpi));
            err_u.push(e(uu.cpi));
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        ok &= check(
            "hardware: mean CPI error, windows minus uniform long-period sampling",
            mean(&err_w) - mean(&err_u),
            0.0,
            true,
            "pp",
        );
        for (label, truth, pick) in [
            (
                "BM/KI",
                &true_bm,
                (|x: &pmu::PmuRow| x.bm_per_ki) as fn(&pmu::PmuRow) -> Option<f64>,
            ),
            ("CM/KI", &true_cm, |x: &pmu::PmuRow| x.cm_per_ki),
        ] {
            let sampled: Vec<f64> = (0..6)
                .map(|i| get(&r, i).and_then(|x| pick(&x)).unwrap_or(f64::NAN))
                .collect();
            let mut discordant = 0;
            let mut pairs = 0;
            for a in 0..6 {
                for b in 0..6 {
                    if truth[a] >= 2.0 * truth[b].max(1e-3) {
                        pairs += 1;
                        if sampled[a].is_nan() || sampled[b].is_nan() || sampled[a] <= sampled[b] {
                            discordant += 1;
                        }
                    }
                }
            }
            ok &= check(
                &format!("hardware: {label} pairs ranked against the truth ({pairs} pairs)"),
                discordant as f64,
                0.0,
                true,
                "pairs",
            );
            let leader = |v: &[f64]| {
                (0..6)
                    .max_by(|&a, &b| v[a].total_cmp(&v[b]))
                    .map_or("-", |i| seed::NAMES[i])
            };
            let expected = if label == "BM/KI" {
                "branch_mispredicts"
            } else {
                "dcache_miss"
            };
            let pass = leader(&sampled) == expected;
            println!(
                "{:<4}  hardware: {label} leader is {expected} (sampled: {})",
                if pass { "PASS" } else { "MISS" },
                leader(&sampled)
            );
            ok &= pass;
        }
        let o = overhead(&|| Some(calibrated(PmuConfig::default())), &mut || {
            for round in 0..6 {
                for f in seed::order(round) {
                    seed::call(f, &buf, &mut rng);
                }
            }
        });
        ok &= check(
            "hardware: overhead at the defaults, wall time",
            100.0 * o,
            5.0,
            true,
            "%",
        );
        ok
    }

    pub(super) fn main() {
        // `cargo test --benches` runs this with no arguments worth a long run: stay quick there.
        if std::env::args().any(|a| a == "--list") {
            return;
        }
        let ok = software() & hardware();
        if !ok {
            std::process::exit(1);
        }
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "SKIPPED pmu_targets: the heatmap and per-function metrics samplers run on Linux only"
    );
}
