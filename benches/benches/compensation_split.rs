//! The overhead budget's check of compensation on a deep call tree: do the compensated self times
//! of the annotated tree split its time as the un-annotated tree's samples do?
//!
//! cargo bench -p profpoint-benches --bench compensation_split
//!
//! One process holds the same four-level tree twice (root -> 4 mid -> 4 low each -> 4 leaves
//! each; each function does its own work and calls its children), bare and annotated. The bare
//! tree runs under the heatmap sampler (the un-annotated program's split, by samples of its
//! own functions); the annotated tree runs compensated (`profpoint::compensate(true)`), then
//! uncompensated, then compensated under the default overhead budget, and each split is read
//! from the points' self times. Target: every level's compensated share within 3 percentage
//! points of the sampled share. Under `cargo test --benches` the phases are short and only
//! printed.

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    /// About `n` ns of work that the optimiser cannot remove (inlined into its caller, so its
    /// samples are the caller's).
    #[inline(always)]
    fn work(n: u64) -> u64 {
        let mut x = n;
        for i in 0..n {
            x = black_box(x.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i);
        }
        x
    }

    macro_rules! tree {
        ($m:ident $(, #[$attr:meta])?) => {
            mod $m {
                use super::work;
                $(#[$attr])?
                #[inline(never)]
                pub(crate) fn root() -> u64 {
                    let mut x = work(4000);
                    for i in 0..4 {
                        x ^= mid(i);
                    }
                    x
                }
                $(#[$attr])?
                #[inline(never)]
                pub(crate) fn mid(i: u64) -> u64 {
                    let mut x = work(800 + i);
                    for j in 0..4 {
                        x ^= low(j);
                    }
                    x
                }
                $(#[$attr])?
                #[inline(never)]
                pub(crate) fn low(j: u64) -> u64 {
                    let mut x = work(200 + j);
                    for k in 0..4 {
                        x ^= leaf(k);
                    }
                    x
                }
                $(#[$attr])?
                #[inline(never)]
                pub(crate) fn leaf(k: u64) -> u64 {
                    work(30 + k)
                }
            }
        };
    }

    tree!(bare);
    tree!(annotated, #[profpoint::profile_point]);

    const LEVELS: [&str; 4] = ["root", "mid", "low", "leaf"];

    fn run(d: Duration, f: fn() -> u64) {
        let t = Instant::now();
        while t.elapsed() < d {
            black_box(f());
        }
    }

    /// Shares (percent) of the four levels from any per-level figure.
    fn shares(v: [f64; 4]) -> [f64; 4] {
        let sum: f64 = v.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        v.map(|x| 100.0 * x / sum)
    }

    /// The bare tree's split by heatmap samples of its own functions.
    fn sampled_split(d: Duration) -> Result<([f64; 4], u64), String> {
        let sampler = profpoint::heatmap::start(profpoint::heatmap::Config::new().hz(997))
            .map_err(|e| format!("the heatmap cannot start here: {e}"))?;
        run(d, bare::root);
        let report = sampler.stop().report(&profpoint::heatmap::ReportOptions {
            top: 50,
            ..Default::default()
        });
        let mut v = [0.0; 4];
        let mut n = 0;
        for row in &report.rows {
            for (i, level) in LEVELS.iter().enumerate() {
                if row.function.ends_with(&format!("bare::{level}")) {
                    v[i] += row.nr as f64;
                    n += row.nr;
                }
            }
        }
        if n == 0 {
            return Err(format!(
                "no sample named a bare function (rows: {:?})",
                report.rows.iter().map(|r| &r.function).collect::<Vec<_>>()
            ));
        }
        Ok((shares(v), n))
    }

    /// The annotated tree's split by its points' self times, after `d` of calls.
    fn points_split(d: Duration) -> [f64; 4] {
        profpoint::reset();
        run(d, annotated::root);
        let r = profpoint::snapshot();
        if r.budget.running && !r.budget.throttled.is_empty() {
            // What the budget made of the levels (their states at the end).
            let states: Vec<String> = LEVELS
                .iter()
                .map(|level| {
                    let name = format!("compensation_split::linux::annotated::{level}");
                    let now = r.budget.throttled.iter().find(|t| t.point == name);
                    format!("{level} {}", now.map_or("on", |t| t.now.as_str()))
                })
                .collect();
            println!("      under the budget: {}", states.join(", "));
        }
        let mut v = [0.0; 4];
        for (i, level) in LEVELS.iter().enumerate() {
            let name = format!("compensation_split::linux::annotated::{level}");
            v[i] = r
                .points
                .iter()
                .find(|p| p.name == name)
                .unwrap_or_else(|| panic!("no point {name} in the report (renamed?)"))
                .self_ns
                .unwrap_or(0) as f64;
        }
        shares(v)
    }

    pub(crate) fn main() {
        let quick = !std::env::args().any(|a| a == "--bench");
        let d = Duration::from_millis(if quick { 100 } else { 3000 });
        // Warm both trees (page faults, the points' first-use work).
        run(Duration::from_millis(20), bare::root);
        run(Duration::from_millis(20), annotated::root);

        let sampled = sampled_split(d);
        profpoint::set_budget(None);
        profpoint::compensate(true);
        let compensated = points_split(d);
        profpoint::compensate(false);
        let raw = points_split(d);
        profpoint::compensate(true);
        profpoint::set_budget(Some(2.0));
        let budgeted = points_split(d);
        profpoint::set_budget(None);
        profpoint::compensate(false);

        println!("compensation_split: share of the tree's time per level, percent");
        println!(
            "{:>6}  {:>16}  {:>12}  {:>14}  {:>22}",
            "level", "sampled (bare)", "compensated", "uncompensated", "compensated, budget 2%"
        );
        let sampled_v = sampled.as_ref().map(|(v, _)| *v).ok();
        for (i, level) in LEVELS.iter().enumerate() {
            println!(
                "{:>6}  {:>16}  {:>12.1}  {:>14.1}  {:>22.1}",
                level,
                sampled_v.map_or("-".to_string(), |v| format!("{:.1}", v[i])),
                compensated[i],
                raw[i],
                budgeted[i]
            );
        }
        let mut check = profpoint_benches::Targets::default();
        match &sampled {
            Ok((v, n)) => {
                println!("      ({n} samples of the bare tree's functions)");
                let worst =
                    |s: &[f64; 4]| (0..4).map(|i| (s[i] - v[i]).abs()).fold(0.0f64, f64::max);
                println!(
                    "      largest gap to the samples: compensated {:.1} points, uncompensated {:.1}, compensated under the budget {:.1}",
                    worst(&compensated),
                    worst(&raw),
                    worst(&budgeted)
                );
                if !quick {
                    check.target(
                        "compensated self-time split vs sampled split, largest gap",
                        worst(&compensated),
                        3.0,
                        "points",
                    );
                }
            }
            Err(e) => println!("      SKIPPED the comparison: {e}"),
        }
        check.finish();
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "SKIPPED compensation_split: it compares with the heatmap sampler, which is Linux only"
    );
}
