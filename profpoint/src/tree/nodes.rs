//! The tree's storage: the node array and the per-shard bookkeeping beside it. The shard
//! holds these (`shard.rs` imports this file and nothing else of the tree); the operations on
//! them, which take the shard, are `mod.rs`'s.

use crate::sync::atomic::AtomicU64;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU32;

/// Nodes per shard (the root included). 48 bytes each: 1.5 MiB of address space per shard,
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
    _pad: u32,
    /// Timed calls along this path.
    pub(crate) timed: AtomicU64,
    /// Calls along this path counted without their time (sampled 1-in-N, untimed).
    pub(crate) untimed: AtomicU64,
    /// Sum of the timed calls' intervals, in ticks.
    pub(crate) total: AtomicU64,
    /// Their self time (interval minus the points nested in it), ticks, two's complement (an
    /// untimed nested call counts at its point's mean: see `Scalars::self_signed`).
    pub(crate) self_ticks: AtomicU64,
}

/// A shard's tree, apart from the node array the hot path reads (`Shard::nodes`).
pub(crate) struct Tree {
    /// Nodes made so far (the root is node 0): readers read up to it.
    pub(super) len: AtomicU32,
    /// Calls not entered because the tree was full (owner only, relaxed).
    pub(super) lost: std::sync::atomic::AtomicU64,
    /// `(parent, point + 1) -> node`, every node but the root. Locked by the owner on its cold
    /// path only (a slot-cache miss); readers do not use it.
    pub(super) map: Mutex<HashMap<(u32, u32), u32>>,
}

impl Tree {
    pub(crate) fn new() -> Tree {
        Tree {
            len: AtomicU32::new(0),
            lost: std::sync::atomic::AtomicU64::new(0),
            map: Mutex::new(HashMap::new()),
        }
    }
}

/// A zeroed array of [`CAPACITY`] nodes, never freed.
#[cfg(not(loom))]
pub(super) fn alloc_nodes() -> *mut Node {
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
pub(super) fn alloc_nodes() -> *mut Node {
    let v: Vec<Node> = (0..CAPACITY)
        .map(|_| Node {
            point: AtomicU32::new(0),
            parent: AtomicU32::new(0),
            parent_point: AtomicU32::new(0),
            last_child: AtomicU32::new(0),
            last_child_point: AtomicU32::new(0),
            _pad: 0,
            timed: AtomicU64::new(0),
            untimed: AtomicU64::new(0),
            total: AtomicU64::new(0),
            self_ticks: AtomicU64::new(0),
        })
        .collect();
    Box::leak(v.into_boxed_slice()).as_mut_ptr()
}
