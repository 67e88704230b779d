//! A program to compare with itself: three annotated functions called in a loop for a set
//! time, one of which can be made slower by an argument. `scripts/compare-check` runs it in
//! pairs under a background CPU load and checks what `profpoint compare` says of them.
//!
//! ```text
//! cargo build --release -p profpoint-examples --example compare_demo
//! PROFPOINT_REPORT=json:base.json target/release/examples/compare_demo --seconds 1
//! PROFPOINT_REPORT=json:new.json target/release/examples/compare_demo --seconds 1 --slow 2
//! profpoint compare base.json new.json --fail-on-regression
//! ```
//!
//! `step` does about 22 us of arithmetic (times `--slow`, default 1); `parse` (about 2 us) and
//! `checksum` (about 40 us, every tenth round) never change. The work is a dependent chain of
//! multiply-adds, so its time is proportional to its length on any machine.

use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Iterations of the chain in `step` at `--slow 1`: tens of microseconds, long enough for
/// the histograms to tell a 2x slowdown (its time is in BENCHMARKS.md, "compare").
const STEP: u64 = 20_000;

/// A dependent chain of `n` multiply-adds: its time grows with `n`, whatever the optimiser.
fn chain(mut x: u64, n: u64) -> u64 {
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

/// The function whose work `--slow` multiplies.
#[profpoint::profile_point]
fn step(x: u64, slow: u64) -> u64 {
    chain(x, STEP * slow)
}

/// A short function that never changes.
#[profpoint::profile_point]
fn parse(x: u64) -> u64 {
    chain(x, 2_000)
}

/// A longer, rarer function that never changes.
#[profpoint::profile_point]
fn checksum(x: u64) -> u64 {
    chain(x, 35_000)
}

struct Args {
    seconds: f64,
    slow: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seconds: 1.0,
        slow: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next();
        let value = |what: &str| {
            v.clone()
                .ok_or_else(|| format!("{flag}: expected {what} after it"))
        };
        match flag.as_str() {
            "--seconds" => {
                let v = value("a duration in seconds")?;
                args.seconds = match v.parse::<f64>() {
                    Ok(s) if s > 0.0 && s <= 3600.0 => s,
                    _ => return Err(format!("--seconds {v:?}: expected seconds from 0 to 3600")),
                };
            }
            "--slow" => {
                let v = value("a work factor")?;
                args.slow = match v.parse::<u64>() {
                    Ok(n) if (1..=100).contains(&n) => n,
                    _ => {
                        return Err(format!(
                            "--slow {v:?}: expected a work factor from 1 to 100"
                        ));
                    }
                };
            }
            _ => {
                return Err(format!(
                    "unknown argument {flag:?}: expected --seconds S or --slow N (usage: compare_demo [--seconds S] [--slow N])"
                ));
            }
        }
    }
    Ok(args)
}

#[profpoint::main]
fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("compare_demo: {e}");
            return ExitCode::from(2);
        }
    };
    let end = Instant::now() + Duration::from_secs_f64(args.seconds);
    let (mut x, mut rounds) = (1u64, 0u64);
    while Instant::now() < end {
        x = step(x, args.slow);
        x = parse(x);
        if rounds % 10 == 0 {
            x = checksum(x);
        }
        rounds += 1;
    }
    println!("compare_demo: {rounds} rounds, checksum {x:x}");
    ExitCode::SUCCESS
}
