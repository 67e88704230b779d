//! The tree of profile points: for every call, the point that was active on the same thread
//! when it started, kept as an exact calling-context tree (one node per distinct root-to-leaf
//! path of points), per thread shard.
//!
//! # Concept
//! A flame graph of points must be exact: `main;parse;lex` must hold the time `lex` took when
//! called from `parse` called from `main`, not `lex`'s time split by the share of its callers.
//! Parent -> child edges alone cannot give that (a point called from two places, whose callee
//! is called from it, mixes both paths); a calling-context tree can, and its edges are a sum
//! over its nodes. So each shard keeps a tree of nodes, each a path of points, and the thread
//! keeps two words in its shard: the node of the innermost active call (`Shard::node`, owner
//! only) and that call's point ([`Shard::active_point`], an `AtomicU32` for the sampler to read:
//! 0 = no point active, else the point's dense index + 1).
//!
//! # Mechanism
//! - Enter (`point/hot.rs`, `start_in`): read the current node (the parent), find the child
//!   node for this point under it, make it current, write the point's index + 1 into
//!   `active_point`, keep the node in the token. The lookup is a one-entry cache in the
//!   point's slot (`tree_parent` -> `tree_node`: the last parent this point had on this
//!   thread); a miss goes to [`enter_cold`]: the parent node's own one-entry cache of its last
//!   child (recursion, A inside A, hits it), then the shard's child map (`nodes::ChildMap`: open
//!   addressing, owner only, no lock), then a new node.
//! - Leave: add the call to its node (timed calls: calls, total and self ticks; untimed ones,
//!   sampled 1-in-N: calls only), then restore the parent's node and point from the node
//!   itself (`parent`, `parent_point`), so a token left out of order cannot leave a stale
//!   active point behind the outermost one.
//! - Nodes never move and are never freed: a fixed array of [`CAPACITY`] nodes per shard,
//!   allocated zeroed on the shard's first node (the allocator maps its pages lazily: untouched
//!   nodes cost address space only). A path beyond the capacity is not entered: the call is
//!   counted in `lost_calls` and its children attach to its parent.
//! - Thread churn: a shard released by an exiting thread gets both words reset to the root
//!   (`shard::release`), so the next thread starts with no parent; its nodes stay (the tree is
//!   summed over threads, like the slots).
//! - Readers (reports) on other threads read the published length with Acquire, each node's
//!   path fields (written before the length) and its counters (relaxed words: a report taken
//!   while calls run may see a call's count without its time; never a torn word).
//! - Counted-only points (status `COUNT`, e.g. throttled by the overhead budget) are not in
//!   the tree: they cost one counter bump and nothing else, and points called inside them
//!   attach to the enclosing active point. Async points (`async_guard.rs`) are leaves: their
//!   parent is the point active on the thread of their first poll; the points their body calls
//!   attach to whatever is active on the thread that polls it.

use crate::shard::Shard;
use crate::slot::{Slot, bump};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::shard::nodes::alloc_nodes;
pub(crate) use crate::shard::nodes::{CAPACITY, NO_NODE, Node};

/// Node `id` of `shard` (hot path: `id` is one the owner made, so the array exists).
#[inline(always)]
pub(crate) fn node(shard: &Shard, id: u32) -> &Node {
    let base = crate::owned::get_ptr(&shard.nodes);
    debug_assert!(!base.is_null() && id < CAPACITY);
    // SAFETY: `id` came from `child_of` of this shard (a token's node, or the parent of one),
    // so it is below CAPACITY and the array was allocated (it is never freed).
    unsafe { &*base.add(id as usize) }
}

/// The node of point `point1` (index + 1) under `parent`, made if new; `NO_NODE` when the
/// tree is full. Owner only (the node array's length is its own to grow).
fn child_of(shard: &Shard, parent: u32, point1: u32) -> u32 {
    let mut base = crate::owned::get_ptr(&shard.nodes);
    if base.is_null() {
        // First-use work (the array), outside every interval open here (see `slot_cold`).
        let began = crate::clock::now();
        base = alloc_nodes();
        // Release: a reader that sees the pointer sees zeroed nodes.
        shard.nodes.store(base, Ordering::Release);
        // Release: node 0, the root, exists.
        shard.tree.len.store(1, Ordering::Release);
        crate::shard::add_setup(shard, crate::clock::now().saturating_sub(began));
    }
    // Relaxed (owner-only fields of node `parent`, which exists: the root, or one we made).
    // SAFETY: `parent` is below the published length (see `node`).
    let pn = unsafe { &*base.add(parent as usize) };
    if pn.last_child_point.load(Ordering::Relaxed) == point1 {
        return pn.last_child.load(Ordering::Relaxed);
    }
    let map = &shard.tree.map;
    let id = match map.get(parent, point1) {
        Some(id) => id,
        None => {
            // A new path: first-use work, outside every interval open here.
            let began = crate::clock::now();
            let id = shard.tree.len.load(Ordering::Relaxed);
            if id >= CAPACITY {
                return NO_NODE;
            }
            // SAFETY: `id < CAPACITY`: inside the array; no reader looks at it before the
            // length below publishes it.
            let n = unsafe { &*base.add(id as usize) };
            n.point.store(point1, Ordering::Relaxed);
            n.parent.store(parent, Ordering::Relaxed);
            n.parent_point
                .store(pn.point.load(Ordering::Relaxed), Ordering::Relaxed);
            // Release: readers that see the new length see the node's path.
            shard.tree.len.store(id + 1, Ordering::Release);
            map.insert(parent, point1, id);
            crate::shard::add_setup(shard, crate::clock::now().saturating_sub(began));
            id
        }
    };
    pn.last_child_point.store(point1, Ordering::Relaxed);
    pn.last_child.store(id, Ordering::Relaxed);
    id
}

/// Enters point `index`'s node on this thread (owner only): the current node is this call's
/// parent; this call's node under it (cached in the slot: the last parent this point had
/// here) becomes the current one, and this point the thread's active one. Returns the node
/// (`NO_NODE` when the tree is full).
#[inline(always)]
pub(crate) fn enter(shard: &Shard, slot: &Slot, index: u32) -> u32 {
    // Relaxed: owner-only words.
    let parent = crate::owned::get32(&shard.node);
    if crate::owned::get32(&slot.tree_parent) == parent {
        let node = crate::owned::get32(&slot.tree_node);
        crate::owned::set32(&shard.node, node);
        crate::owned::set32(&shard.active_point, index + 1);
        node
    } else {
        enter_cold(shard, slot, parent, index)
    }
}

/// Enter's slow path: the slot's cache missed (a new parent for this point on this thread).
/// Finds or makes the node, caches it in the slot, makes it the current one and fills the
/// token's node (`NO_NODE`, and no change to the current node, when the tree is full).
#[cold]
#[inline(never)]
fn enter_cold(shard: &Shard, slot: &Slot, parent: u32, index: u32) -> u32 {
    let id = child_of(shard, parent, index + 1);
    if id == NO_NODE {
        bump_lost(shard);
        return NO_NODE;
    }
    // The overflow slot (past the slot memory's cap) is shared by every point that found
    // it: a node cached there would be another point's, so it caches none.
    if !shard.is_overflow(slot) {
        crate::owned::set32(&slot.tree_parent, parent);
        crate::owned::set32(&slot.tree_node, id);
    }
    crate::owned::set32(&shard.node, id);
    crate::owned::set32(&shard.active_point, index + 1);
    id
}

#[cold]
fn bump_lost(shard: &Shard) {
    // Relaxed: owner-only tally.
    let l = &shard.tree.lost;
    l.store(l.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Leaves node `id`: the current node and point go back to its parent's.
#[inline(always)]
pub(crate) fn restore(shard: &Shard, n: &Node) {
    crate::owned::set32(&shard.node, crate::owned::get32(&n.parent));
    crate::owned::set32(&shard.active_point, crate::owned::get32(&n.parent_point));
}

/// Adds one timed call to node `n` (owner only).
#[inline(always)]
pub(crate) fn add_timed(n: &Node, dur: u64, self_ticks: u64) {
    bump(&n.timed, 1);
    bump(&n.total, dur);
    bump(&n.self_ticks, self_ticks);
}

/// Adds time to node `n` without a call (owner only): a segment of a call made in segments
/// (`point/segment.rs`), whose call is added once, as it ends.
#[inline]
pub(crate) fn add_time(n: &Node, dur: u64, self_ticks: u64) {
    bump(&n.total, dur);
    bump(&n.self_ticks, self_ticks);
}

/// Adds one untimed call to node `n` (owner only).
#[inline(always)]
pub(crate) fn add_untimed(n: &Node) {
    bump(&n.untimed, 1);
}

/// Where an async call's first poll found itself: the shard of that thread and its current
/// node (the parent). `None`: no shard yet (no point ever ran there): the root.
pub(crate) type Origin = Option<(&'static Shard, u32)>;

/// The current node of this thread (an async call's parent, at its first poll).
pub(crate) fn origin() -> Origin {
    let s = crate::shard::current()?;
    Some((s, crate::owned::get32(&s.node)))
}

/// The node on `shard` (this thread's) for an async call of point `index` whose first poll
/// was at `origin`: the same path of points, made on this shard if the call completes on
/// another thread. `NO_NODE` when the tree is full.
pub(crate) fn async_node(shard: &Shard, origin: Origin, index: u32) -> u32 {
    let parent = match origin {
        None => 0,
        Some((s, id)) if std::ptr::eq(s, shard) => id,
        Some((s, id)) => {
            // The parent's path on the first poll's shard, leaf first. Its nodes are never
            // freed and their path fields never change once published.
            let mut path = Vec::new();
            let mut id = id;
            while id != 0 && id != NO_NODE {
                let Some(n) = published(s, id) else { break };
                path.push(n.point.load(Ordering::Relaxed));
                id = n.parent.load(Ordering::Relaxed);
            }
            let mut at = 0;
            for &p in path.iter().rev() {
                at = child_of(shard, at, p);
                if at == NO_NODE {
                    bump_lost(shard);
                    return NO_NODE;
                }
            }
            at
        }
    };
    let id = child_of(shard, parent, index + 1);
    if id == NO_NODE {
        bump_lost(shard);
    }
    id
}

/// Node `id` of `shard` if published (any thread).
fn published(shard: &Shard, id: u32) -> Option<&Node> {
    // Acquire (both): pair with the Release stores in `child_of`.
    let base = shard.nodes.load(Ordering::Acquire);
    if base.is_null() || id >= shard.tree.len.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: below the published length of an array that is never freed.
    Some(unsafe { &*base.add(id as usize) })
}

/// Keeps every published node's measured total in its `before` (wall sampling begins: until
/// now every call was timed). The budget's thread only, once.
pub(crate) fn mark_before_sampling() {
    for s in crate::shard::all_shards() {
        // Acquire: see `published`.
        let len = s.tree.len.load(Ordering::Acquire);
        for n in (1..len).filter_map(|id| published(s, id)) {
            // Relaxed: `total` is one word its owner adds to; a call ending meanwhile is in
            // it or in the samples that follow, the difference of one call.
            n.before
                .store(n.total.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// Adds `weight` sampling periods to the node `shard`'s thread is in now, if any; whether it
/// was in one. The budget's thread only (the counter's one writer).
pub(crate) fn sample_current(shard: &Shard, weight: u32) -> bool {
    // Relaxed: the owner's word, read as it is now; a node id it names is checked against the
    // published length before use.
    let id = shard.node.load(Ordering::Relaxed);
    if id == 0 || id == NO_NODE {
        return false;
    }
    let Some(n) = published(shard, id) else {
        return false;
    };
    // Relaxed: this thread is the counter's only writer; readers take a tally.
    let v = n.samples.load(Ordering::Relaxed);
    n.samples.store(v.saturating_add(weight), Ordering::Relaxed);
    true
}

/// One node of a shard as a report reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RawNode {
    /// Point index + 1.
    pub(crate) point: u32,
    /// Parent node, in the same shard's numbering.
    pub(crate) parent: u32,
    pub(crate) timed: u64,
    pub(crate) untimed: u64,
    pub(crate) total: u64,
    pub(crate) self_ticks: u64,
    /// Wall samples of this path as the thread's current one (`budget/wall.rs`).
    pub(crate) samples: u64,
    /// `total` when wall sampling began.
    pub(crate) before: u64,
}

/// Every node of `shard` but the root, indexed by node id - 1; and its lost calls.
pub(crate) fn read(shard: &Shard) -> (Vec<RawNode>, u64) {
    // Relaxed: a tally.
    let lost = shard.tree.lost.load(Ordering::Relaxed);
    // Acquire: see `published`.
    let len = shard.tree.len.load(Ordering::Acquire);
    let nodes = (1..len)
        .filter_map(|id| published(shard, id))
        .map(|n| RawNode {
            // Relaxed (all): path fields are published by the length's Release; counters are
            // single words.
            point: n.point.load(Ordering::Relaxed),
            parent: n.parent.load(Ordering::Relaxed),
            timed: n.timed.load(Ordering::Relaxed),
            untimed: n.untimed.load(Ordering::Relaxed),
            total: n.total.load(Ordering::Relaxed),
            self_ticks: n.self_ticks.load(Ordering::Relaxed),
            samples: u64::from(n.samples.load(Ordering::Relaxed)),
            before: n.before.load(Ordering::Relaxed),
        })
        .collect();
    (nodes, lost)
}

/// The nodes of every shard's tree, summed: grows when any thread meets a new path (the
/// overhead budget makes its isolation classes again then).
pub(crate) fn merged_len() -> usize {
    crate::shard::all_shards()
        .into_iter()
        // Acquire: see `published`.
        .map(|s| s.tree.len.load(Ordering::Acquire) as usize)
        .sum()
}

/// What the tree of points holds by (caller's point index + 1, or 0 at the root; point index
/// + 1), summed over every path and shard: calls, timed calls and their total ticks.
pub(crate) fn edges() -> HashMap<(u32, u32), [u64; 3]> {
    let mut out: HashMap<(u32, u32), [u64; 3]> = HashMap::new();
    for s in crate::shard::all_shards() {
        let (nodes, _) = read(s);
        for n in &nodes {
            let parent = match n.parent {
                0 => 0,
                p => nodes.get(p as usize - 1).map_or(0, |q| q.point),
            };
            let e = out.entry((parent, n.point)).or_default();
            e[0] += n.timed + n.untimed;
            e[1] += n.timed;
            e[2] += n.total;
        }
    }
    out
}

/// The trees of every shard merged by path: nodes in the order first met, parents before
/// children, `parent` an index into the result (`None`: a root's child); and the lost calls.
pub(crate) fn merged() -> (Vec<(Option<usize>, RawNode)>, u64) {
    let mut out: Vec<(Option<usize>, RawNode)> = Vec::new();
    let mut index: HashMap<(Option<usize>, u32), usize> = HashMap::new();
    let mut lost = 0;
    for s in crate::shard::all_shards() {
        let (nodes, l) = read(s);
        lost += l;
        // This shard's node id -> merged index (node ids grow: a parent comes before its
        // children).
        let mut map: Vec<usize> = Vec::with_capacity(nodes.len());
        for n in &nodes {
            let parent = match n.parent {
                0 => None,
                p => map.get(p as usize - 1).copied(),
            };
            let key = (parent, n.point);
            let at = *index.entry(key).or_insert_with(|| {
                out.push((
                    parent,
                    RawNode {
                        point: n.point,
                        ..RawNode::default()
                    },
                ));
                out.len() - 1
            });
            let m = &mut out[at].1;
            m.timed += n.timed;
            m.untimed += n.untimed;
            m.total += n.total;
            m.self_ticks = m.self_ticks.wrapping_add(n.self_ticks);
            m.samples += n.samples;
            m.before += n.before;
            map.push(at);
        }
    }
    (out, lost)
}
