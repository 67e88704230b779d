//! With bursts opted in (`PROFPOINT_BUDGET=<percent>,bursts`), a point too hot even to count is
//! timed in bursts and its calls between them are estimated: does each estimate's 95% interval
//! cover the truth? Runs each phased shape 20 times (a child process each, this bench again),
//! counts the truth in the child, and prints per shape how many runs' estimated counts (and,
//! where the truth is known, totals) fell within their interval. Target: 19 of 20 for each.
//!
//! ```text
//! cargo bench -p profpoint-benches --bench burst_coverage
//! ```
//!
//! The shapes:
//! - `phased`: a tiny function called ~40 M times a second in some phases and not at all in
//!   others, a parent calling it 100 times in others, and a second thread with a hot function
//!   of its own;
//! - `rounds`: 9 rounds of 1 M calls of an empty point, other work between them;
//! - `timed`: a function of ~1 us of work in phases timed around it (its true total is the
//!   phases' time, within the loop's own cost), quiet phases between, at a 0.1% budget.
//!
//! A count is known exactly (the child counts its calls), so its interval is held to it as is.
//! A total's truth is the phases' time measured around the calls, which holds the loop and
//! the point's own cost too (the report takes the instrumentation out): a run counts as
//! covered when the truth is within the interval widened by that cost, measured in the same
//! child with the point switched off.

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    const RUNS: usize = 20;

    #[profpoint::profile_point]
    #[inline(never)]
    fn tiny(x: u64) -> u64 {
        black_box(x) + 1
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn parent(mut x: u64) -> u64 {
        for _ in 0..100 {
            x = tiny(x);
        }
        x
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn other(x: u64) -> u64 {
        black_box(x) ^ 0x9e37
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn empty() {}

    /// About a microsecond of arithmetic.
    #[inline(always)]
    fn spin(mut h: u64) -> u64 {
        for _ in 0..300 {
            h = black_box(h.wrapping_mul(0x0000_0100_0000_01b3) ^ (h >> 29));
        }
        h
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn chunk(x: u64) -> u64 {
        spin(x)
    }

    /// Un-annotated work for `d`.
    fn quiet(d: Duration) {
        let t = Instant::now();
        let mut h = 1;
        while t.elapsed() < d {
            h = spin(h);
        }
        black_box(h);
    }

    /// The child: runs `shape`, prints `truth NAME CALLS [TOTAL_NS]` lines on stdout; the
    /// report goes where PROFPOINT_REPORT says.
    fn child(shape: &str) {
        match shape {
            "phased" => {
                let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let s2 = stop.clone();
                let second = std::thread::spawn(move || {
                    let (mut x, mut n) = (0u64, 0u64);
                    while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                        for _ in 0..1000 {
                            x = other(x);
                        }
                        n += 1000;
                    }
                    black_box(x);
                    n
                });
                let (mut x, mut tiny_calls, mut parent_calls) = (0u64, 0u64, 0u64);
                for phase in 0..9 {
                    let t = Instant::now();
                    match phase % 3 {
                        0 => {
                            while t.elapsed() < Duration::from_millis(250) {
                                for _ in 0..10_000 {
                                    x = tiny(x);
                                }
                                tiny_calls += 10_000;
                            }
                        }
                        1 => quiet(Duration::from_millis(250)),
                        _ => {
                            while t.elapsed() < Duration::from_millis(250) {
                                for _ in 0..100 {
                                    x = parent(x);
                                }
                                parent_calls += 100;
                                tiny_calls += 100 * 100;
                            }
                        }
                    }
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                let other_calls = second.join().unwrap();
                black_box(x);
                println!("truth ::tiny {tiny_calls}");
                println!("truth ::parent {parent_calls}");
                println!("truth ::other {other_calls}");
            }
            "rounds" => {
                for _ in 0..9 {
                    for _ in 0..1_000_000 {
                        empty();
                    }
                    quiet(Duration::from_millis(100));
                }
                println!("truth ::empty 9000000");
            }
            "timed" => {
                // The loop and the point's own cost per call, measured here with it off: the
                // truth's margin.
                profpoint::disable("*::chunk");
                let n = 20_000u64;
                let t = Instant::now();
                let mut x = 0;
                for _ in 0..n {
                    x = chunk(x);
                }
                let off_ns = t.elapsed().as_nanos() as f64 / n as f64;
                let t = Instant::now();
                for _ in 0..n {
                    x = spin(x);
                }
                let bare_ns = t.elapsed().as_nanos() as f64 / n as f64;
                profpoint::enable("*::chunk");
                profpoint::reset();
                let (mut calls, mut total) = (0u64, Duration::ZERO);
                for _ in 0..6 {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(200) {
                        for _ in 0..1000 {
                            x = chunk(x);
                        }
                        calls += 1000;
                    }
                    total += t.elapsed();
                    quiet(Duration::from_millis(200));
                }
                black_box(x);
                println!(
                    "truth ::chunk {calls} {} {}",
                    total.as_nanos(),
                    (off_ns - bare_ns).max(0.0)
                );
            }
            other => panic!("unknown shape {other}"),
        }
    }

    /// One run of `shape` in a child: prints each point's truth and estimate of its calls
    /// (and of its total, where the child knows it); returns, per figure (`::tiny calls`,
    /// `::chunk total`), whether its interval covered the truth, and whether it was a lower bound.
    fn run(shape: &str, budget: &str) -> Vec<(String, bool, bool)> {
        let dir = std::env::temp_dir().join(format!("burst-coverage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join(format!("{shape}.json"));
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .env("BURST_COVERAGE_SHAPE", shape)
            .env("PROFPOINT_BUDGET", budget)
            .env("PROFPOINT_REPORT", format!("json:{}", json.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = profpoint::Report::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let verdict = |covered: bool| if covered { "covered" } else { "MISSED" };
        let mut outcomes = Vec::new();
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.first() != Some(&"truth") {
                continue;
            }
            let p = r.points.iter().find(|p| p.name.ends_with(f[1])).unwrap();
            let calls: u64 = f[2].parse().unwrap();
            let ci = p.nr_ci95;
            // A count with no interval is exact, or, marked estimated, a lower bound (the
            // calls seen: too few count windows saw a call for an interval), which holds when
            // it is not above the truth; its total then holds the seen calls' time only.
            let lower_bound = ci.is_none() && p.nr_estimated;
            let covered = match ci {
                None if lower_bound => p.nr <= calls,
                None => p.nr == calls,
                Some(ci) => p.nr.abs_diff(calls) <= ci,
            };
            let mut line = format!(
                "{} {} calls {calls} est {} ±{} {}",
                verdict(covered),
                f[1],
                p.nr,
                match ci {
                    Some(c) => c.to_string(),
                    None if p.nr_estimated => "? (a lower bound)".to_string(),
                    None => "0 (exact)".to_string(),
                },
                if p.estimated { "estimated" } else { "" }
            );
            outcomes.push((format!("{} calls", f[1]), covered, lower_bound));
            if let (Some(total), Some(margin)) = (f.get(3), f.get(4)) {
                let total: f64 = total.parse().unwrap();
                let margin = margin.parse::<f64>().unwrap() * calls as f64;
                let diff = (p.total_ns as f64 - total).abs();
                let ok = if lower_bound {
                    p.total_ns as f64 <= total + margin
                } else {
                    diff <= p.total_ci95_ns as f64 + margin
                };
                line += &format!(
                    "; {} total {total:.0} est {} ±{} (margin {margin:.0})",
                    verdict(ok),
                    p.total_ns,
                    p.total_ci95_ns
                );
                outcomes.push((format!("{} total", f[1]), ok, lower_bound));
            }
            println!("      {line}");
        }
        std::fs::remove_dir_all(&dir).ok();
        outcomes
    }

    pub(super) fn main() {
        if let Ok(shape) = std::env::var("BURST_COVERAGE_SHAPE") {
            child(&shape);
            return;
        }
        // `cargo bench` passes `--bench`; `cargo test --benches` runs one run of each shape.
        let runs = if std::env::args().any(|a| a == "--bench") {
            RUNS
        } else {
            1
        };
        let mut check = profpoint_benches::Targets::default();
        for (shape, budget) in [
            ("phased", "2%,bursts"),
            ("rounds", "2%,bursts"),
            ("timed", "0.1%,bursts"),
        ] {
            println!("== {shape} (PROFPOINT_BUDGET={budget}), {runs} runs");
            // Per figure: runs whose interval covered the truth, runs, and runs that gave a
            // lower bound.
            let mut tally: std::collections::BTreeMap<String, (usize, usize, usize)> =
                Default::default();
            for _ in 0..runs {
                for (figure, covered, bound) in run(shape, budget) {
                    let t = tally.entry(figure).or_default();
                    t.0 += usize::from(covered);
                    t.1 += 1;
                    t.2 += usize::from(bound);
                }
            }
            // At most 1 run in 20 outside the interval (19 of 20 covered).
            for (figure, (ok, n, bounds)) in &tally {
                println!(
                    "    {shape} {figure}: {ok} of {n} covered, {bounds} of them lower bounds"
                );
                check.target(
                    &format!("{shape} {figure}: runs not covered, of {n}"),
                    (n - ok) as f64,
                    *n as f64 / 20.0,
                    "runs",
                );
            }
        }
        if runs == RUNS {
            check.finish();
        }
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIPPED burst_coverage: profpoint's benches measure its Linux build");
}
