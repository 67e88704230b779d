//! The CPU-bound workload every sampler-overhead bench measures (heatmap's own and
//! `benches/benches/heatmap_vs_pprof.rs`), one crate so all of them time the same code: FNV-1a over a 64 KiB buffer, 40 times (~3.5 ms), which a compiler cannot fold away.

use std::hint::black_box;

/// The workload: returns the hash so nothing is optimised out.
#[inline(never)]
pub fn workload(buf: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..40 {
        for &b in buf {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h = black_box(h);
    }
    h
}

/// The workload's input: 64 KiB of scrambled bytes.
pub fn input() -> Vec<u8> {
    (0..65536u32).map(|i| (i * 2_654_435_761) as u8).collect()
}

/// The median of `v` (the upper one of an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The number of interleaved rounds: the first numeric argument, else `default`.
pub fn rounds_arg(default: usize) -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds of the whole process (every thread, signal handlers included).
pub fn process_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
