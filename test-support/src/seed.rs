//! The alternating-period patch's benchmark functions for per-function hardware metrics, each with
//! a known character, shared by `examples/pmu_demo.rs` and `benches/pmu_targets.rs` (a dependency
//! of both).

use std::hint::black_box;

/// Bytes of the buffer `dcache_miss` reads at random (64 MiB: beyond the caches).
pub const BUF: usize = 64 << 20;

/// Floating-point divisions in a dependent chain: the divider stalls.
#[inline(never)]
pub fn fp_divider_stalls(n: u64) -> f64 {
    let mut x = 1.0e9f64;
    for i in 0..n {
        x = black_box(x) / (1.0 + (i & 7) as f64 * 1e-9);
    }
    x
}

/// Integer divisions in a dependent chain: the divider stalls.
#[inline(never)]
pub fn int_divider_stalls(n: u64) -> u64 {
    let mut x = u64::MAX;
    for i in 0..n {
        x = black_box(x) / (3 + (i & 7)) + u64::MAX / 2;
    }
    x
}

/// Branches on random bits: about half mispredicted.
#[inline(never)]
pub fn branch_mispredicts(n: u64, seed: &mut u64) -> u64 {
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

/// Float-to-integer conversions.
#[inline(never)]
pub fn double_to_int(n: u64) -> i64 {
    let mut acc = 0i64;
    for i in 0..n {
        acc = acc.wrapping_add(black_box(i as f64 * 1.37) as i64);
    }
    acc
}

/// Additions in a loop: about one instruction per cycle, nothing stalls.
#[inline(never)]
pub fn nops(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = black_box(x.wrapping_add(i));
    }
    x
}

/// Random reads of `buf`: a cache miss each.
#[inline(never)]
pub fn dcache_miss(n: u64, buf: &[u64], seed: &mut u64) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        sum += buf[(*seed >> 20) as usize % buf.len()];
    }
    sum
}

/// The six functions' names, in the order [`call`] numbers them.
pub const NAMES: [&str; 6] = [
    "fp_divider_stalls",
    "int_divider_stalls",
    "branch_mispredicts",
    "double_to_int",
    "nops",
    "dcache_miss",
];

/// Calls function `which` (an index into [`NAMES`]) once.
pub fn call(which: usize, buf: &[u64], seed: &mut u64) {
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
pub fn order(round: usize) -> [usize; 6] {
    let mut o = [0, 1, 2, 3, 4, 5];
    o.rotate_left(round % 6);
    if (round / 6) % 2 == 1 {
        o.reverse();
    }
    o
}
