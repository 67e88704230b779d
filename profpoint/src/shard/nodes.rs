//! The points tree's storage: the node array and the per-shard bookkeeping beside it. The
//! shard holds these; the operations on them, which take the shard, are `crate::tree`'s.

use crate::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
// The child map's words: owner-only, outside loom's model (no other thread reads them).
use std::sync::atomic::AtomicU64 as Word;

/// Nodes per shard (the root included). 64 bytes each: 2 MiB of address space per shard,
/// touched only as nodes are made.
#[cfg(not(loom))]
pub(crate) const CAPACITY: u32 = 1 << 15;
/// A small tree under loom, whose atomics are built one by one.
#[cfg(loom)]
pub(crate) const CAPACITY: u32 = 64;

/// A token's node when its call is not in the tree (the shard's tree is full).
pub(crate) const NO_NODE: u32 = u32::MAX;

/// One path of points on one shard: its point, its parent node, and the calls made along it.
#[repr(C)]
pub(crate) struct Node {
    /// The point's index + 1 (0 only for the root). Written before the node is published.
    pub(crate) point: AtomicU32,
    /// The parent node (0: the root).
    pub(crate) parent: AtomicU32,
    /// The parent node's `point` (what `active_point` goes back to at leave).
    pub(crate) parent_point: AtomicU32,
    /// One-entry cache of this node's last child looked up (the cold path's first try:
    /// recursion hits it): the child node, and its point + 1 (0: none yet). Owner only.
    pub(crate) last_child: AtomicU32,
    pub(crate) last_child_point: AtomicU32,
    /// Wall-clock samples of this node as the thread's current one, in sampling periods
    /// (`budget/wall.rs`). Written only by the budget's thread, read by reports.
    pub(crate) samples: AtomicU32,
    /// Timed calls along this path.
    pub(crate) timed: AtomicU64,
    /// Calls along this path counted without their time (sampled 1-in-N, untimed).
    pub(crate) untimed: AtomicU64,
    /// Sum of the timed calls' intervals, in ticks.
    pub(crate) total: AtomicU64,
    /// Their self time (interval minus the points nested in it), ticks, two's complement (an
    /// untimed nested call counts at its point's mean: see `Scalars::self_signed`).
    pub(crate) self_ticks: AtomicU64,
    /// `total` when wall sampling began (`budget/wall.rs`; 0 for a node made after): the
    /// measured part of a throttled node's time, every call before then having been timed.
    /// Written once by the budget's thread, read by reports.
    pub(crate) before: AtomicU64,
}

// The size the capacity's comment states.
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Node>() == 64);

/// A shard's tree, apart from the node array the hot path reads (`Shard::nodes`).
pub(crate) struct Tree {
    /// Nodes made so far (the root is node 0): readers read up to it.
    pub(crate) len: AtomicU32,
    /// Calls not entered because the tree was full (owner only, relaxed).
    pub(crate) lost: std::sync::atomic::AtomicU64,
    /// `(parent, point + 1) -> node`, every node but the root (owner only; readers do not
    /// use it).
    pub(crate) map: ChildMap,
}

impl Tree {
    pub(crate) fn new() -> Tree {
        Tree {
            len: AtomicU32::new(0),
            lost: std::sync::atomic::AtomicU64::new(0),
            map: ChildMap::new(),
        }
    }
}

/// A zeroed array of [`CAPACITY`] nodes, never freed.
#[cfg(not(loom))]
pub(crate) fn alloc_nodes() -> *mut Node {
    let layout = std::alloc::Layout::array::<Node>(CAPACITY as usize).expect("fixed size");
    // SAFETY: the layout has a non-zero size; every field of `Node` is an atomic integer or a
    // `u32`, for which all-zero bytes are a valid value. Allocation failure is handled below.
    let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut Node;
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    p
}

/// The same under loom (its atomics are not plain integers).
#[cfg(loom)]
pub(crate) fn alloc_nodes() -> *mut Node {
    let v: Vec<Node> = (0..CAPACITY)
        .map(|_| Node {
            point: AtomicU32::new(0),
            parent: AtomicU32::new(0),
            parent_point: AtomicU32::new(0),
            last_child: AtomicU32::new(0),
            last_child_point: AtomicU32::new(0),
            samples: AtomicU32::new(0),
            timed: AtomicU64::new(0),
            untimed: AtomicU64::new(0),
            total: AtomicU64::new(0),
            self_ticks: AtomicU64::new(0),
            before: AtomicU64::new(0),
        })
        .collect();
    Box::leak(v.into_boxed_slice()).as_mut_ptr()
}

/// Entries of the first table: 256 (2 KiB), or `2 * CAPACITY` if fewer (loom's small tree).
const FIRST_BITS: u32 = if CAPACITY.trailing_zeros() + 1 < 8 {
    CAPACITY.trailing_zeros() + 1
} else {
    8
};
/// Tables: the last holds `2 * CAPACITY` entries, so it is never over half full.
const LEVELS: usize = (CAPACITY.trailing_zeros() + 2 - FIRST_BITS) as usize;

/// The tree's lookup of a node's child by point, `(parent node, point + 1) -> node`: the slow
/// path of entering a point whose slot cache missed (a point called from several parents in
/// turn misses on every call: `config()` under `encode` and under `encode_with_padding`).
///
/// It was a `Mutex<HashMap>`: a lock, an unlock and a SipHash, ~20 ns on every such call,
/// which overhead compensation (calibrated on a point with one parent) does not take out, so
/// the parent of such points read ~20 ns of self time per child call that its code never
/// spent (base64's `encode_with_padding`: 68 ns a call against perf's ~2). Only the shard's
/// owner makes or finds nodes, and no reader looks here (reports read the node array), so it
/// needs no lock: open addressing over packed words, relaxed owner-only loads and stores, a
/// multiply-shift hash, doubling when half full. The tables it outgrew stay allocated (no
/// `unsafe`, no reclamation): all of them together are smaller than the last one.
pub(crate) struct ChildMap {
    /// Table `k` has `1 << (FIRST_BITS + k)` entries; each is 0 (empty) or
    /// `point + 1 << 32 | parent << 16 | node` (both below `CAPACITY` <= 2^16).
    tables: [OnceLock<Box<[Word]>>; LEVELS],
    /// The table in use (an index into `tables`).
    level: AtomicU32,
    /// Entries in it.
    used: AtomicU32,
}

// Nodes fit the packed entry's 16-bit fields, and the last table has `2 * CAPACITY` entries.
const _: () = assert!(
    CAPACITY.is_power_of_two()
        && CAPACITY <= 1 << 16
        && FIRST_BITS + LEVELS as u32 - 1 == CAPACITY.trailing_zeros() + 1
);

impl ChildMap {
    pub(crate) fn new() -> ChildMap {
        ChildMap {
            tables: std::array::from_fn(|_| OnceLock::new()),
            level: AtomicU32::new(0),
            used: AtomicU32::new(0),
        }
    }

    fn table(&self) -> (&[Word], u32) {
        // Relaxed: owner-only.
        let level = self.level.load(Ordering::Relaxed);
        let t = self.tables[level as usize].get_or_init(|| zeroed(FIRST_BITS + level));
        (t, FIRST_BITS + level)
    }

    /// The node of `point1` under `parent`, if made.
    pub(crate) fn get(&self, parent: u32, point1: u32) -> Option<u32> {
        let (t, bits) = self.table();
        let key = key(parent, point1);
        let mask = t.len() - 1;
        let mut i = slot(key, bits);
        loop {
            // Relaxed: owner-only.
            let e = t[i].load(Ordering::Relaxed);
            if e == 0 {
                return None;
            }
            if e >> 16 == key {
                return Some((e & 0xffff) as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// Records a new node (`parent`, `point1` not in the map; `node < CAPACITY`).
    pub(crate) fn insert(&self, parent: u32, point1: u32, node: u32) {
        debug_assert!(parent < CAPACITY && node < CAPACITY);
        // Relaxed: owner-only.
        let used = self.used.load(Ordering::Relaxed) + 1;
        let (mut t, mut bits) = self.table();
        // Never past the last table: it holds twice the nodes a shard can make.
        if used as usize * 2 > t.len() && (self.level.load(Ordering::Relaxed) as usize) < LEVELS - 1
        {
            self.grow(t);
            (t, bits) = self.table();
        }
        put(t, bits, key(parent, point1) << 16 | u64::from(node));
        self.used.store(used, Ordering::Relaxed);
    }

    /// Moves every entry into the next table, which becomes the one in use.
    fn grow(&self, old: &[Word]) {
        let level = self.level.load(Ordering::Relaxed) + 1;
        let bits = FIRST_BITS + level;
        let t = self.tables[level as usize].get_or_init(|| zeroed(bits));
        for e in old {
            // Relaxed: owner-only.
            let e = e.load(Ordering::Relaxed);
            if e != 0 {
                put(t, bits, e);
            }
        }
        self.level.store(level, Ordering::Relaxed);
    }
}

fn zeroed(bits: u32) -> Box<[Word]> {
    (0..1usize << bits).map(|_| Word::new(0)).collect()
}

/// The entry's key part: `point + 1` and the parent node.
fn key(parent: u32, point1: u32) -> u64 {
    u64::from(point1) << 16 | u64::from(parent)
}

/// Where a key's probe starts in a table of `1 << bits` entries (a multiply-shift hash).
fn slot(key: u64, bits: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// Writes `entry` into the first empty place of its probe (the table is at most half full).
fn put(t: &[Word], bits: u32, entry: u64) {
    let mask = t.len() - 1;
    let mut i = slot(entry >> 16, bits);
    // Relaxed: owner-only.
    while t[i].load(Ordering::Relaxed) != 0 {
        i = (i + 1) & mask;
    }
    t[i].store(entry, Ordering::Relaxed);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Every entry made is found, through every growth, up to a full tree; others are not.
    #[test]
    fn finds_what_it_holds_through_growth() {
        let m = ChildMap::new();
        let mut truth = HashMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for node in 1..CAPACITY {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let parent = (x % u64::from(node)) as u32;
            let point1 = 1 + (x >> 40) as u32 % 5000;
            if truth.contains_key(&(parent, point1)) {
                continue;
            }
            assert_eq!(m.get(parent, point1), None);
            m.insert(parent, point1, node);
            truth.insert((parent, point1), node);
            if node % 4093 == 0 {
                for (&(p, q), &n) in &truth {
                    assert_eq!(m.get(p, q), Some(n), "({p}, {q}) after {node} nodes");
                }
            }
        }
        for (&(p, q), &n) in &truth {
            assert_eq!(m.get(p, q), Some(n));
        }
        assert_eq!(m.get(0, 5001), None);
        assert_eq!(m.get(CAPACITY - 1, u32::MAX), None);
        // The last table is at most half full.
        assert!(m.used.load(Ordering::Relaxed) as usize * 2 <= m.table().0.len());
    }
}
