//! The seed's benchmark for per-function hardware metrics: functions with known characters,
//! run in rotating order, measured two ways in one process:
//! 1. ground truth: a counting group read around every call;
//! 2. the alternating-period sampler (`heatmap::pmu`), as a user would run it.
//!
//! It prints both tables. Needs a hardware PMU: elsewhere it says why and exits with 2.
//!
//! ```text
//! cargo run --release -p heatmap --example pmu_demo
//! ```

use heatmap::pmu::{self, Counters, Event, PmuConfig};
use std::hint::black_box;

const BUF: usize = 64 << 20;

#[inline(never)]
fn fp_divider_stalls(n: u64) -> f64 {
    let mut x = 1.0e9f64;
    for i in 0..n {
        x = black_box(x) / (1.0 + (i & 7) as f64 * 1e-9);
    }
    x
}

#[inline(never)]
fn int_divider_stalls(n: u64) -> u64 {
    let mut x = u64::MAX;
    for i in 0..n {
        x = black_box(x) / (3 + (i & 7)) + u64::MAX / 2;
    }
    x
}

#[inline(never)]
fn branch_mispredicts(n: u64, seed: &mut u64) -> u64 {
    let mut hits = 0;
    for _ in 0..n {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        if black_box(*seed) & 1 == 1 {
            hits += 1;
        } else {
            hits = black_box(hits);
        }
    }
    hits
}

#[inline(never)]
fn double_to_int(n: u64) -> i64 {
    let mut acc = 0i64;
    for i in 0..n {
        acc = acc.wrapping_add(black_box(i as f64 * 1.37) as i64);
    }
    acc
}

#[inline(never)]
fn nops(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = black_box(x.wrapping_add(i));
    }
    x
}

#[inline(never)]
fn dcache_miss(n: u64, buf: &[u64], seed: &mut u64) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        sum += buf[(*seed >> 20) as usize % buf.len()];
    }
    sum
}

const NAMES: [&str; 6] = [
    "fp_divider_stalls",
    "int_divider_stalls",
    "branch_mispredicts",
    "double_to_int",
    "nops",
    "dcache_miss",
];

fn call(which: usize, buf: &[u64], seed: &mut u64) {
    let n = 200_000;
    match which {
        0 => drop(black_box(fp_divider_stalls(n))),
        1 => drop(black_box(int_divider_stalls(n))),
        2 => drop(black_box(branch_mispredicts(n, seed))),
        3 => drop(black_box(double_to_int(n))),
        4 => drop(black_box(nops(n))),
        _ => drop(black_box(dcache_miss(n / 4, buf, seed))),
    }
}

/// Rotations of the six functions, so no call order repeats between rounds.
fn order(round: usize) -> [usize; 6] {
    let mut o = [0, 1, 2, 3, 4, 5];
    o.rotate_left(round % 6);
    if (round / 6) % 2 == 1 {
        o.reverse();
    }
    o
}

fn main() {
    if let Err(e) = pmu::available() {
        eprintln!("pmu_demo: {e}");
        eprintln!(
            "pmu_demo: without a PMU, the software mode (PmuConfig::software(), \
             PROFPOINT_PMU=software) runs the same alternating windows on the CPU clock and \
             counts page faults; `cargo nextest run -p heatmap --test pmu_software` shows it \
             against a counted ground truth"
        );
        std::process::exit(2);
    }
    let buf: Vec<u64> = (0..BUF as u64 / 8).collect();
    let mut seed = 0x1234_5678_9abc_def1u64;
    let events = PmuConfig::default().events;

    // 1. Ground truth.
    let counters = Counters::open(&events).unwrap_or_else(|e| {
        eprintln!("pmu_demo: {e}");
        std::process::exit(2)
    });
    let mut truth = vec![vec![0u64; events.len() + 1]; 6];
    for round in 0..60 {
        for f in order(round) {
            let a = counters.read();
            call(f, &buf, &mut seed);
            let b = counters.read();
            for (t, (x, y)) in truth[f].iter_mut().zip(a.iter().zip(&b)) {
                *t += y - x;
            }
        }
    }
    drop(counters);
    println!("Ground truth (counters read around every call)");
    println!(
        "{:<20} {:>7} {:>8} {:>8} {:>6}",
        "Symbol", "CPI", "BM/KI", "CM/KI", "%CM"
    );
    let pos = |e: Event| 1 + events.iter().position(|x| *x == e).unwrap();
    for (f, t) in truth.iter().enumerate() {
        let ins = t[pos(Event::Instructions)] as f64;
        println!(
            "{:<20} {:>7.2} {:>8.2} {:>8.2} {:>6.1}",
            NAMES[f],
            t[0] as f64 / ins,
            1000.0 * t[pos(Event::BranchMisses)] as f64 / ins,
            1000.0 * t[pos(Event::CacheMisses)] as f64 / ins,
            100.0 * t[pos(Event::CacheMisses)] as f64
                / t[pos(Event::CacheReferences)].max(1) as f64,
        );
    }

    // 2. The sampler.
    let sampler = pmu::start(PmuConfig::default()).unwrap_or_else(|e| {
        eprintln!("pmu_demo: {e}");
        std::process::exit(2)
    });
    let t = std::time::Instant::now();
    let mut round = 0;
    while t.elapsed() < std::time::Duration::from_secs(5) {
        for f in order(round) {
            call(f, &buf, &mut seed);
        }
        round += 1;
    }
    let report = sampler.stop().report(20);
    println!();
    let mut out = std::io::stdout().lock();
    report.write_table(&mut out).expect("stdout");
}
