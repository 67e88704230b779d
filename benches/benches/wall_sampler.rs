//! The budget's wall sampler (times of points timed one call in N): what it costs, and whether
//! its intervals cover the truth. Each case runs as a child process (this bench again), the
//! two cost cases interleaved, one after the other, in one run.
//!
//! ```text
//! cargo bench -p profpoint-benches --bench wall_sampler
//! ```
//!
//! - **Cost.** A thread in a point, sleeping 1 ms at a time, for 1.5 s: with the point
//!   sampled one call in 16 (`PROFPOINT_SAMPLE`: the sampler runs) and without (the budget's
//!   controller runs, the sampler does not). The children's CPU time differs by the sampler's
//!   cost; its share of one core is that over the wall time (target: at most 0.5%). The
//!   sampler's own figure in the report is printed beside it.
//! - **Coverage.** `hot` (~2 us of work a call, sampled one call in 16) called 100 times in
//!   each call of `outer` (timed on every call), for 1.5 s: the child times every call of
//!   `hot` from outside (its truth, which holds two clock reads more a call than the point's
//!   own interval), and a run is covered when the report's total is within its 95% interval
//!   of the truth, widened by that outside timing's cost. Target: 19 of 20 runs, and in every
//!   run `hot`'s total at most `outer`'s.

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    const COST_RUNS: usize = 10;
    const COVERAGE_RUNS: usize = 20;
    const RUN: Duration = Duration::from_millis(1500);

    #[profpoint::profile_point]
    #[inline(never)]
    fn sleepy() {
        std::thread::sleep(Duration::from_millis(1));
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn hot(x: u64) -> u64 {
        let t = Instant::now();
        let mut x = x;
        while t.elapsed() < Duration::from_micros(2) {
            x = black_box(x).wrapping_mul(3);
        }
        x
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn outer(x: u64, truth: &mut Duration) -> u64 {
        let mut x = x;
        for _ in 0..100 {
            let t = Instant::now();
            x = hot(x);
            *truth += t.elapsed();
        }
        x
    }

    fn child(mode: &str) {
        let t = Instant::now();
        match mode {
            "sleepy" => {
                while t.elapsed() < RUN {
                    sleepy();
                }
            }
            "coverage" => {
                let (mut x, mut truth) = (1u64, Duration::ZERO);
                while t.elapsed() < RUN {
                    x = outer(x, &mut truth);
                }
                black_box(x);
                // The outside timing's own cost a call: two clock reads.
                let n = 1_000_000u32;
                let c = Instant::now();
                for _ in 0..n {
                    black_box(Instant::now());
                }
                let per_read = c.elapsed().as_nanos() as f64 / f64::from(n);
                println!("{} {per_read}", truth.as_nanos());
            }
            _ => panic!("unknown mode {mode}"),
        }
    }

    /// Runs this bench as a child in `mode`; its stdout, its report, its CPU time (s) and its
    /// wall time (s).
    fn run(mode: &str, sample: Option<&str>) -> (String, profpoint::Report, f64, f64) {
        let json = std::env::temp_dir().join(format!(
            "pp-wall-sampler-{}-{mode}.json",
            std::process::id()
        ));
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.env("PP_WALL_CHILD", mode)
            .env("PROFPOINT_REPORT", format!("json:{}", json.display()))
            .env_remove("PROFPOINT_SAMPLE")
            .env_remove("PROFPOINT_BUDGET");
        if let Some(s) = sample {
            cmd.env("PROFPOINT_SAMPLE", s);
        }
        let before = children_cpu();
        let t = Instant::now();
        let out = cmd.output().expect("the child runs");
        let wall = t.elapsed().as_secs_f64();
        let cpu = children_cpu() - before;
        assert!(
            out.status.success(),
            "{mode}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let r = profpoint::Report::from_json(&std::fs::read_to_string(&json).unwrap())
            .expect("the child's report");
        let _ = std::fs::remove_file(&json);
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            r,
            cpu,
            wall,
        )
    }

    /// CPU time of the waited-for children so far, seconds.
    fn children_cpu() -> f64 {
        // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage.
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub(super) fn main() {
        if let Ok(mode) = std::env::var("PP_WALL_CHILD") {
            return child(&mode);
        }
        let mut missed = false;
        // Cost: sampled and not, interleaved.
        let (mut with, mut without, mut own) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..COST_RUNS {
            let (_, r, cpu, wall) = run("sleepy", Some("*::sleepy=16"));
            let w = r
                .budget
                .wall_sampler
                .clone()
                .expect("the sampler ran for a sampled point");
            with.push(cpu / wall);
            own.push(w.own_ms / 1e3 / wall);
            let (_, r, cpu, wall) = run("sleepy", None);
            assert!(r.budget.wall_sampler.is_none(), "no sampler unthrottled");
            without.push(cpu / wall);
        }
        let share = 100.0 * (median(with.clone()) - median(without.clone()));
        println!(
            "wall sampler cost: {share:.2}% of one core (children's CPU {:.2}% with it, {:.2}% without, medians of {COST_RUNS} interleaved runs); its own figure {:.2}% [target <= 0.5%]",
            100.0 * median(with),
            100.0 * median(without),
            100.0 * median(own)
        );
        if share > 0.5 {
            println!("MISS: the sampler costs more than 0.5% of one core");
            missed = true;
        }
        // Coverage.
        let mut covered = 0;
        let mut rel = Vec::new();
        for i in 0..COVERAGE_RUNS {
            let (out, r, _, _) = run("coverage", Some("*::hot=16"));
            let mut it = out.split_whitespace().map(|s| s.parse::<f64>().unwrap());
            let (truth, per_read) = (it.next().unwrap(), it.next().unwrap());
            let point = |name: &str| {
                r.points
                    .iter()
                    .find(|p| p.name.ends_with(name))
                    .cloned()
                    .unwrap()
            };
            let (h, o) = (point("::hot"), point("::outer"));
            let slack = 2.0 * per_read * h.nr as f64;
            let off = (h.total_ns as f64 - truth).abs();
            let ok = off <= h.total_ci95_ns as f64 + slack && h.total_ns <= o.total_ns;
            covered += usize::from(ok);
            rel.push((h.total_ns as f64 - truth) / truth);
            println!(
                "  run {i:2}: hot {:.1} ms ±{:.1} (sampled: {}), truth {:.1} ms, outer {:.1} ms{}",
                h.total_ns as f64 / 1e6,
                h.total_ci95_ns as f64 / 1e6,
                h.estimated,
                truth / 1e6,
                o.total_ns as f64 / 1e6,
                if ok { "" } else { "  NOT COVERED" }
            );
        }
        println!(
            "wall sampler coverage: {covered} of {COVERAGE_RUNS} runs within their 95% interval, error {:+.1}% median [target >= 19 of 20]",
            100.0 * median(rel)
        );
        if covered < 19 {
            println!("MISS: fewer than 19 of 20 intervals covered the truth");
            missed = true;
        }
        if missed {
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
    println!("SKIPPED: the wall sampler bench measures children's CPU time with Linux's getrusage");
}
