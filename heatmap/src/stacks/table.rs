//! The fixed-size, lock-free aggregation of stacks (docs/stacks.md section 4).
//!
//! Open addressing on a 64-bit hash of the frames and the thread's tag: a slot is claimed by
//! one CAS (0 -> hash), its frames written by the claimer only and published by a Release
//! store of `len`. Insert-only, at most [`MAX_PROBE`] slots probed: a sample that finds no
//! slot is counted in `dropped`. Two stacks with the same 64-bit hash are merged (probability
//! ~n^2/2^65: 10^-11 for 16 Ki distinct stacks), cheaper than comparing frames per sample.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Slots probed before a sample is dropped.
pub(crate) const MAX_PROBE: usize = 16;

struct Slot {
    key: AtomicU64,
    count: AtomicU64,
    /// 0 until the claimer has written the frames; then frames + 1.
    len: AtomicU32,
    tag: AtomicU32,
}

pub(crate) struct StackTable {
    slots: Box<[Slot]>,
    frames: Box<[UnsafeCell<u64>]>,
    depth: usize,
    mask: usize,
    pub(crate) dropped: AtomicU64,
}

// SAFETY: a slot's frames are written only by the handler whose CAS claimed the slot, before
// its Release store of `len`, and read only after an Acquire load of `len` saw it non-zero;
// everything else is atomic.
unsafe impl Sync for StackTable {}

impl std::fmt::Debug for StackTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackTable")
            .field("slots", &self.slots.len())
            .field("depth", &self.depth)
            .finish()
    }
}

/// Multiply-xorshift over the frames and the tag; never 0 (0 marks an empty slot).
#[inline(always)]
pub(crate) fn hash(frames: &[u64], tag: u32) -> u64 {
    let mut h: u64 = 0x243f_6a88_85a3_08d3 ^ frames.len() as u64 ^ (u64::from(tag) << 32);
    for &f in frames {
        h = (h ^ f).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    }
    h | 1
}

impl StackTable {
    /// `slots` (rounded up to a power of two) of `depth` frames each, every page written now
    /// so that the handler never takes a page fault on it.
    pub(crate) fn new(slots: usize, depth: usize) -> StackTable {
        let slots = slots.max(1).next_power_of_two();
        let t = StackTable {
            slots: (0..slots)
                .map(|_| Slot {
                    key: AtomicU64::new(0),
                    count: AtomicU64::new(0),
                    len: AtomicU32::new(0),
                    tag: AtomicU32::new(0),
                })
                .collect(),
            frames: (0..slots * depth).map(|_| UnsafeCell::new(0)).collect(),
            depth,
            mask: slots - 1,
            dropped: AtomicU64::new(0),
        };
        for f in t.frames.iter() {
            // SAFETY: no one else sees the table yet; a volatile write forces the page in.
            unsafe { std::ptr::write_volatile(f.get(), 0) };
        }
        t
    }

    /// Adds one sample of `frames` (leaf first) on a thread tagged `tag`.
    /// Async-signal-safe: atomics and plain stores into preallocated memory, bounded loops.
    #[inline(always)]
    pub(crate) fn insert(&self, frames: &[u64], tag: u32) {
        let frames = &frames[..frames.len().min(self.depth)];
        let h = hash(frames, tag);
        let mut i = (h as usize) & self.mask;
        for _ in 0..MAX_PROBE {
            let Some(s) = self.slots.get(i) else { break };
            // Relaxed: the key only decides the slot; the frames are published by `len`.
            let k = s.key.load(Ordering::Relaxed);
            if k == h {
                // Relaxed: a tally, read after the drain.
                s.count.fetch_add(1, Ordering::Relaxed);
                return;
            }
            if k == 0 {
                // Relaxed: as above.
                match s
                    .key
                    .compare_exchange(0, h, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => {
                        let base = i * self.depth;
                        for (j, &f) in frames.iter().enumerate() {
                            if let Some(cell) = self.frames.get(base + j) {
                                // SAFETY: our CAS claimed this slot: its frames are ours.
                                unsafe { *cell.get() = f };
                            }
                        }
                        // Relaxed: published by the Release store of `len` below.
                        s.tag.store(tag, Ordering::Relaxed);
                        // Release: publishes the frames and the tag to readers of `len`.
                        s.len.store(frames.len() as u32 + 1, Ordering::Release);
                        // Relaxed: a tally.
                        s.count.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(actual) if actual == h => {
                        // Relaxed: a tally.
                        s.count.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(_) => {}
                }
            }
            i = (i + 1) & self.mask;
        }
        // Relaxed: a tally.
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// Every published stack: (frames leaf first, samples, tag). Exact after the drain; while
    /// handlers run (a snapshot) a count may be one short and a slot still being written is
    /// left out.
    pub(crate) fn read(&self) -> Vec<(Vec<u64>, u64, u32)> {
        let mut out = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            // Acquire: pairs with the claimer's Release store.
            let l = s.len.load(Ordering::Acquire);
            if l == 0 {
                continue;
            }
            let base = i * self.depth;
            let frames = (0..(l - 1) as usize)
                // SAFETY: `len` was published after these frames were written, and they are
                // never written again.
                .filter_map(|j| self.frames.get(base + j).map(|c| unsafe { *c.get() }))
                .collect();
            // Relaxed: tallies and the tag, ordered by the Acquire above.
            out.push((
                frames,
                s.count.load(Ordering::Relaxed),
                s.tag.load(Ordering::Relaxed),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_equal_stacks_together_and_tags_apart() {
        let t = StackTable::new(64, 4);
        t.insert(&[1, 2, 3], 0);
        t.insert(&[1, 2, 3], 0);
        t.insert(&[1, 2, 3], 7);
        t.insert(&[9, 8, 7, 6, 5, 4], 0); // cut to depth 4
        let mut v = t.read();
        v.sort();
        assert_eq!(
            v,
            vec![
                (vec![1, 2, 3], 1, 7),
                (vec![1, 2, 3], 2, 0),
                (vec![9, 8, 7, 6], 1, 0)
            ]
        );
        assert_eq!(t.dropped.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_full_table_drops_and_counts() {
        let t = StackTable::new(2, 1);
        for f in 1..=10u64 {
            t.insert(&[f], 0);
        }
        assert_eq!(t.read().len(), 2);
        assert_eq!(t.dropped.load(Ordering::Relaxed), 8);
    }
}
