//! The software mode's workload with a known character, shared by `tests/pmu_software.rs` and
//! `benches/pmu_targets.rs`: `fault_pages` takes one page fault per
//! 4 KiB it writes, `spin` computes in registers and takes none.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// The page size the fault counts assume.
pub const PAGE: usize = 4096;
/// Bytes `fault_pages` maps and writes per call.
pub const CHUNK: usize = 16 << 20;

/// Maps `CHUNK` bytes of fresh anonymous memory, writes all of it, unmaps it.
#[inline(never)]
pub fn fault_pages() -> u64 {
    // SAFETY: an anonymous private mapping we own, written within its length, then unmapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            CHUNK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        // Every word of every page: the first write faults, the rest keep the function in
        // user space long enough for windows to begin there (user-only sampling cannot begin
        // one inside the kernel's fault handler).
        let b = p as *mut u64;
        for i in 0..CHUNK / 8 {
            std::ptr::write_volatile(b.add(i), i as u64);
        }
        libc::munmap(p, CHUNK);
    }
    (CHUNK / PAGE) as u64
}

/// Integer work in registers: no memory, no faults.
#[inline(never)]
pub fn spin(iters: u64) -> u64 {
    let (mut a, mut b) = (1u64, 2u64);
    for i in 0..iters {
        a = black_box(a.wrapping_mul(6364136223846793005).wrapping_add(i));
        b = b.rotate_left(7) ^ a;
    }
    a ^ b
}

/// Runs both functions in turn for `d`; returns (ns, faults) counted around `fault_pages` by
/// `truth`, the ground truth: it reads a counting group on this thread (task clock, page
/// faults; heatmap's `pmu::Counters::read`, passed in so that this crate needs no sampler).
pub fn workload(d: Duration, truth: Option<&dyn Fn() -> Vec<u64>>) -> (u64, u64) {
    let (mut ns, mut faults) = (0, 0);
    let t = Instant::now();
    while t.elapsed() < d {
        let before = truth.map(|read| read());
        black_box(fault_pages());
        if let (Some(read), Some(b)) = (truth, before) {
            let a = read();
            ns += a[0] - b[0];
            faults += a[1] - b[1];
        }
        black_box(spin(1_500_000));
    }
    (ns, faults)
}
