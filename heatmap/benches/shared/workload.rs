// The CPU-bound workload every sampler-overhead bench measures (heatmap's own and
// `benches/benches/heatmap_vs_pprof.rs`), included with `#[path]` so all of them time the same
// code: FNV-1a over a 64 KiB buffer, 40 times (~3.5 ms), which a compiler cannot fold away.

use std::hint::black_box;

/// The workload: returns the hash so nothing is optimised out.
#[inline(never)]
pub(crate) fn workload(buf: &[u8]) -> u64 {
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
