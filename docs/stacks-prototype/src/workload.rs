//! A known call tree: round -> caller_a (9 calls) / caller_b (1 call) -> hot, and hot runs
//! std code: sort (core::slice::sort), SipHash (HashMap), formatting (core::fmt).

use std::collections::HashMap;
use std::fmt::Write;
use std::hint::black_box;

const N: usize = 2048;

#[inline(never)]
pub fn hot(seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut v: Vec<u64> = (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    v.sort_unstable();
    let mut m: HashMap<u64, u32> = HashMap::with_capacity(512);
    for y in &v[..1024] {
        *m.entry(y % 4096).or_insert(0) += 1;
    }
    let mut s = String::with_capacity(4096);
    for y in &v[..128] {
        let _ = write!(s, "{y:x},{} ", y % 1000);
    }
    black_box(v[N / 2] ^ m.len() as u64 ^ s.len() as u64)
}

#[inline(never)]
pub fn caller_a(seed: u64) -> u64 {
    let mut acc = 0;
    for i in 0..9 {
        acc ^= hot(black_box(seed.wrapping_add(i)));
    }
    acc
}

#[inline(never)]
pub fn caller_b(seed: u64) -> u64 {
    hot(black_box(seed.wrapping_mul(3)))
}

#[inline(never)]
pub fn round(seed: u64) -> u64 {
    black_box(caller_a(seed)) ^ black_box(caller_b(seed))
}

/// Recursion deeper than any depth limit, on whatever stack the thread has.
#[inline(never)]
pub fn recurse(n: u32, seed: u64) -> u64 {
    if n == 0 {
        return hot(seed);
    }
    black_box(recurse(black_box(n - 1), seed)).wrapping_add(1)
}

/// Time in the vDSO: clock_gettime in a loop.
#[inline(never)]
pub fn vdso_loop() -> u64 {
    let mut acc = 0u64;
    for _ in 0..20_000 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        acc = acc.wrapping_add(ts.tv_nsec as u64);
    }
    acc
}

/// JIT-like code: a loop copied into an anonymous executable mapping (no module, no unwind
/// info): `mov rax, rdi; 1: dec rax; jnz 1b; ret`.
pub fn jit_fn() -> extern "C" fn(u64) -> u64 {
    let code: [u8; 10] = [0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3, 0x90];
    unsafe {
        let p = libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        std::ptr::copy_nonoverlapping(code.as_ptr(), p as *mut u8, code.len());
        libc::mprotect(p, 4096, libc::PROT_READ | libc::PROT_EXEC);
        std::mem::transmute(p)
    }
}

#[inline(never)]
pub fn jit_caller(f: extern "C" fn(u64) -> u64) -> u64 {
    black_box(f(black_box(2_000_000)))
}
