//! Fixed-size, lock-free aggregation of stacks: open addressing on a 64-bit hash of the
//! frames, a slot claimed by one CAS (0 -> hash), its frames written by the claimer only and
//! published by a Release store of `len`. Insert-only, bounded probing: a sample that finds
//! no slot within `MAX_PROBE` is counted in `dropped`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub const MAX_PROBE: usize = 16;

pub struct Slot {
    key: AtomicU64,
    count: AtomicU64,
    /// 0 until the claimer has written the frames; then len + 1.
    len: AtomicU32,
}

pub struct StackTable {
    slots: Box<[Slot]>,
    frames: Box<[UnsafeCell<u64>]>,
    depth: usize,
    mask: usize,
    pub dropped: AtomicU64,
    pub inserted: AtomicU64,
}

// SAFETY: a slot's frames are written only by the thread whose CAS claimed it, before the
// Release store of `len`, and read only after an Acquire load of `len` saw it non-zero.
unsafe impl Sync for StackTable {}

#[inline(always)]
pub fn hash(frames: &[u64]) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3 ^ frames.len() as u64;
    for &f in frames {
        h = (h ^ f).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    }
    h | 1 // never 0 (0 = empty slot)
}

impl StackTable {
    pub fn new(slots_pow2: usize, depth: usize) -> Self {
        assert!(slots_pow2.is_power_of_two());
        let slots = (0..slots_pow2)
            .map(|_| Slot { key: AtomicU64::new(0), count: AtomicU64::new(0), len: AtomicU32::new(0) })
            .collect();
        let frames = (0..slots_pow2 * depth).map(|_| UnsafeCell::new(0)).collect();
        let t = StackTable { slots, frames, depth, mask: slots_pow2 - 1, dropped: AtomicU64::new(0), inserted: AtomicU64::new(0) };
        // Touch every page now (the allocator may hand out lazily zeroed pages): no page
        // fault inside the handler.
        for s in t.slots.iter() {
            s.count.store(0, Ordering::Relaxed);
        }
        for f in t.frames.iter() {
            unsafe { std::ptr::write_volatile(f.get(), 0) };
        }
        t
    }

    pub fn bytes(&self) -> usize {
        self.slots.len() * (std::mem::size_of::<Slot>() + 8 * self.depth)
    }

    /// Async-signal-safe: atomics and plain stores into preallocated memory only.
    #[inline(always)]
    pub fn insert(&self, frames: &[u64]) {
        let n = frames.len().min(self.depth);
        let frames = &frames[..n];
        let h = hash(frames);
        let mut i = (h as usize) & self.mask;
        for _ in 0..MAX_PROBE {
            let s = &self.slots[i];
            let k = s.key.load(Ordering::Relaxed);
            if k == h {
                s.count.fetch_add(1, Ordering::Relaxed);
                return;
            }
            if k == 0 {
                match s.key.compare_exchange(0, h, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => {
                        let base = i * self.depth;
                        for (j, &f) in frames.iter().enumerate() {
                            // SAFETY: we own this slot's frames (our CAS claimed it).
                            unsafe { *self.frames[base + j].get() = f };
                        }
                        s.len.store(n as u32 + 1, Ordering::Release);
                        s.count.fetch_add(1, Ordering::Relaxed);
                        self.inserted.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(actual) if actual == h => {
                        s.count.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(_) => {}
                }
            }
            i = (i + 1) & self.mask;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// After the run (no handler running): every published stack and its count.
    pub fn drain(&self) -> Vec<(Vec<u64>, u64)> {
        let mut out = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            let l = s.len.load(Ordering::Acquire);
            if l == 0 {
                continue;
            }
            let base = i * self.depth;
            let f = (0..(l - 1) as usize).map(|j| unsafe { *self.frames[base + j].get() }).collect();
            out.push((f, s.count.load(Ordering::Relaxed)));
        }
        out
    }

    pub fn used(&self) -> usize {
        self.slots.iter().filter(|s| s.key.load(Ordering::Relaxed) != 0).count()
    }
}
