//! Owner-only words: the loads and stores of the hot path, the same at every opt-level.
//!
//! # Concept
//! A point's counters are written only by the thread that owns them and read by reporters on
//! other threads (`shard/`), so every access is a relaxed atomic one, which on x86_64 is a
//! plain `mov` (and an owner's add a plain `add` to memory). That is what an optimised build
//! makes of `AtomicU64::load(Relaxed)`. An unoptimised one (a user's debug build, where
//! profpoint is compiled at the user's opt-level 0) makes each of them two or three function
//! calls (`load`, `atomic_load`, a match on the ordering): a large share of an enabled
//! point's instructions at opt-level 0, and a point several times dearer there than in
//! release (BENCHMARKS.md, "Figures behind design choices").
//!
//! # Mechanism
//! In builds with debug assertions on x86_64 (a user's debug build) each accessor is one
//! instruction of inline assembly, which is inlined at every opt-level: `mov` for a load or a store, `add` to memory for an owner's increment (which
//! also makes the increment a single instruction that a signal handler on the same thread
//! cannot split, at opt-level 0 too), `rdtsc` for the clock. Inline assembly may access memory
//! that Rust code accesses atomically, as the hardware's memory model allows: an aligned
//! 8-, 4- or 1-byte `mov` on x86_64 is single-copy atomic, which is all a relaxed access is
//! (portable-atomic and atomic-memcpy implement atomics with inline assembly on the same
//! ground). The asm blocks are not `nomem`, so the compiler neither caches nor reorders memory
//! accesses across them; with x86's total store order that also gives the seqlock's release
//! ordering, which is why [`release_fence`] is an empty asm block there. Elsewhere, and in
//! every build without debug assertions (release), each accessor is the std atomic with
//! `Relaxed` (or the fence it stands for): optimised, those are the same instructions, and the
//! optimiser may schedule and combine them, which an asm block (a compiler barrier) forbids:
//! with the asm accessors in release the enabled path took about twice the instructions and a
//! sampled call twice the time (BENCHMARKS.md, "Figures behind design choices"). `rdtsc` is
//! asm in every build (it
//! touches no memory, so it is no barrier).
//!
//! # Extending
//! A new owner-only field is an atomic of one of these widths, read and written through these
//! functions only on the hot path (anywhere else the std methods are as good).

// The 64-bit words and pointers are the shards' (`crate::sync`: std's, or loom's in the
// model-checking build); the 8- and 32-bit ones are also the points' own, always std's.
use crate::sync::atomic::{AtomicPtr, AtomicU64};
#[cfg(not(all(target_arch = "x86_64", debug_assertions, not(loom))))]
use std::sync::atomic::Ordering;
use std::sync::atomic::{AtomicU8, AtomicU32};

/// Relaxed load.
#[inline(always)]
pub(crate) fn get(c: &AtomicU64) -> u64 {
    #[cfg(all(target_arch = "x86_64", debug_assertions, not(loom)))]
    {
        let v: u64;
        // SAFETY: `c` is a valid, aligned `AtomicU64` (same layout as `u64`, as std
        // documents); an aligned 8-byte `mov` is an atomic read on x86_64 (see the module
        // docs). The block touches no other memory and no stack.
        unsafe {
            std::arch::asm!("mov {v}, qword ptr [{p}]", p = in(reg) c as *const AtomicU64, v = out(reg) v,
                options(nostack, preserves_flags, readonly));
        }
        v
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions, not(loom))))]
    {
        // Relaxed: see the module docs.
        c.load(Ordering::Relaxed)
    }
}

/// Relaxed store.
#[inline(always)]
pub(crate) fn set(c: &AtomicU64, v: u64) {
    #[cfg(all(target_arch = "x86_64", debug_assertions, not(loom)))]
    // SAFETY: as in `get`, for an aligned 8-byte write to the atomic's own memory.
    unsafe {
        std::arch::asm!("mov qword ptr [{p}], {v}", p = in(reg) c as *const AtomicU64, v = in(reg) v,
            options(nostack, preserves_flags));
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions, not(loom))))]
    // Relaxed: see the module docs.
    c.store(v, Ordering::Relaxed);
}

/// Adds `d` to a word only the calling thread writes: one `add` to memory on x86_64 (no
/// `lock`: no other thread writes it; a signal handler on this thread cannot split it).
#[inline(always)]
pub(crate) fn add(c: &AtomicU64, d: u64) {
    #[cfg(all(target_arch = "x86_64", debug_assertions, not(loom)))]
    // SAFETY: as in `set`; the read-modify-write is one instruction, so it is atomic with
    // respect to this thread's signal handlers, and only this thread writes the word.
    unsafe {
        std::arch::asm!("add qword ptr [{p}], {d}", p = in(reg) c as *const AtomicU64, d = in(reg) d,
            options(nostack));
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions, not(loom))))]
    // Relaxed: only the owner writes; readers order through the slot's seqlock.
    c.store(c.load(Ordering::Relaxed).wrapping_add(d), Ordering::Relaxed);
}

/// Relaxed load of a 32-bit word.
#[inline(always)]
pub(crate) fn get32(c: &AtomicU32) -> u32 {
    #[cfg(all(target_arch = "x86_64", debug_assertions))]
    {
        let v: u32;
        // SAFETY: as in `get`, for an aligned 4-byte read.
        unsafe {
            std::arch::asm!("mov {v:e}, dword ptr [{p}]", p = in(reg) c as *const AtomicU32, v = out(reg) v,
                options(nostack, preserves_flags, readonly));
        }
        v
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions)))]
    {
        // Relaxed: see the module docs.
        c.load(Ordering::Relaxed)
    }
}

/// Relaxed store of a 32-bit word.
#[inline(always)]
pub(crate) fn set32(c: &AtomicU32, v: u32) {
    #[cfg(all(target_arch = "x86_64", debug_assertions))]
    // SAFETY: as in `set`, for an aligned 4-byte write.
    unsafe {
        std::arch::asm!("mov dword ptr [{p}], {v:e}", p = in(reg) c as *const AtomicU32, v = in(reg) v,
            options(nostack, preserves_flags));
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions)))]
    // Relaxed: see the module docs.
    c.store(v, Ordering::Relaxed);
}

/// Relaxed load of a byte.
#[inline(always)]
pub(crate) fn get8(c: &AtomicU8) -> u8 {
    #[cfg(all(target_arch = "x86_64", debug_assertions))]
    {
        let v: u8;
        // SAFETY: as in `get`, for a 1-byte read.
        unsafe {
            std::arch::asm!("mov {v}, byte ptr [{p}]", p = in(reg) c as *const AtomicU8, v = out(reg_byte) v,
                options(nostack, preserves_flags, readonly));
        }
        v
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions)))]
    {
        // Relaxed: see the module docs.
        c.load(Ordering::Relaxed)
    }
}

/// Relaxed load of a pointer.
#[inline(always)]
pub(crate) fn get_ptr<T>(c: &AtomicPtr<T>) -> *mut T {
    #[cfg(all(target_arch = "x86_64", debug_assertions, not(loom)))]
    {
        let v: *mut T;
        // SAFETY: as in `get`: `AtomicPtr<T>` has the layout of `*mut T`, 8 aligned bytes.
        unsafe {
            std::arch::asm!("mov {v}, qword ptr [{p}]", p = in(reg) c as *const AtomicPtr<T>, v = out(reg) v,
                options(nostack, preserves_flags, readonly));
        }
        v
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions, not(loom))))]
    {
        // Relaxed: see the module docs.
        c.load(Ordering::Relaxed)
    }
}

/// A release fence: orders the stores before it before the stores after it. On x86_64 the
/// hardware keeps stores in order, so only the compiler must not move them: an empty asm
/// block (not `nomem`) does that.
#[inline(always)]
pub(crate) fn release_fence() {
    #[cfg(all(target_arch = "x86_64", debug_assertions, not(loom)))]
    // SAFETY: an empty instruction sequence.
    unsafe {
        std::arch::asm!("", options(nostack, preserves_flags));
    }
    #[cfg(not(all(target_arch = "x86_64", debug_assertions, not(loom))))]
    crate::sync::atomic::fence(Ordering::Release);
}

/// The time-stamp counter, one instruction at every opt-level.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: `rdtsc` reads a counter into edx:eax; it touches no memory.
    unsafe {
        std::arch::asm!("rdtsc", out("eax") lo, out("edx") hi, options(nostack, nomem, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accessors_read_and_write_the_atomics() {
        let a = AtomicU64::new(5);
        add(&a, 7);
        assert_eq!(get(&a), 12);
        set(&a, u64::MAX);
        add(&a, 2);
        assert_eq!(get(&a), 1, "wraps like wrapping_add");
        let b = AtomicU32::new(3);
        set32(&b, 9);
        assert_eq!(get32(&b), 9);
        let c = AtomicU8::new(200);
        assert_eq!(get8(&c), 200);
        let mut x = 1u8;
        let p = AtomicPtr::new(&mut x as *mut u8);
        assert_eq!(get_ptr(&p), &mut x as *mut u8);
        release_fence();
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn rdtsc_advances() {
        let a = rdtsc();
        let b = rdtsc();
        assert!(b >= a);
    }
}
