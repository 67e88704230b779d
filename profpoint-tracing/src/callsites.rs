//! Callsites to points: one profpoint point per span callsite (and per event callsite when
//! events are counted), claimed once and found again without a lock.
//!
//! # Mechanism
//! - An open-addressed table of [`CAP`] slots keyed by the address of the callsite's
//!   `&'static Metadata` (unique per callsite, stable for the run). A reader hashes the
//!   address and probes linearly: one or two loads and compares, no lock, no allocation.
//! - Inserts take one lock: the callsite is looked up again under it, so each callsite claims
//!   at most one point (`profpoint::__private::claim_point`) and leaks its name once. The
//!   point is stored before the key (release), so a reader that sees the key (acquire) sees
//!   the point. A callsite the pool had no point for is stored with none, so it is not claimed
//!   again.
//! - A callsite gets its slot (and its point) when a span of it is first made or entered, or
//!   its event first counted, not when `tracing` registers it: a filter may keep many
//!   registered callsites off for the whole run, and they would use up the pool.
//! - A slot's index (plus one) is what the standalone subscriber writes into its span ids.
//! - A full table (more callsites than [`CAP`], so the pool of points is long exhausted)
//!   refuses further callsites: they are not profiled, and nothing is claimed for them.

use profpoint::Point;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use tracing_core::Metadata;

/// Slots in the table: four times the pool of points (the pool's spans plus events, and the
/// callsites seen once it was exhausted), a power of two.
pub(crate) const CAP: usize = 4096;
/// `log2(CAP)`.
const BITS: u32 = 12;

/// Spare points the crate reserves in profpoint's linker slice.
pub(crate) const POOL: usize = 1024;
profpoint::__spare_points!(1024);

struct Table {
    /// The callsite's metadata (null: an empty slot). Written once, under `INSERT`.
    keys: [AtomicPtr<Metadata<'static>>; CAP],
    /// Its point (null: none, the pool was exhausted). Written once, before the key.
    points: [AtomicPtr<Point>; CAP],
}

static TABLE: Table = Table {
    keys: [const { AtomicPtr::new(std::ptr::null_mut()) }; CAP],
    points: [const { AtomicPtr::new(std::ptr::null_mut()) }; CAP],
};

/// Slots in use (under `INSERT`).
static USED: AtomicUsize = AtomicUsize::new(0);
static INSERT: Mutex<()> = Mutex::new(());

fn home(meta: &'static Metadata<'static>) -> usize {
    let addr = meta as *const Metadata<'static> as usize;
    ((addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - BITS)) % CAP
}

/// The slot of `meta`, if it has one.
#[inline]
pub(crate) fn find(meta: &'static Metadata<'static>) -> Option<usize> {
    let want = meta as *const Metadata<'static> as *mut Metadata<'static>;
    let mut i = home(meta);
    for _ in 0..CAP {
        // Acquire: pairs with the release store in `insert`, so the point is visible.
        let k = TABLE.keys[i].load(Ordering::Acquire);
        if k == want {
            return Some(i);
        }
        if k.is_null() {
            return None;
        }
        i = (i + 1) % CAP;
    }
    None
}

/// The point of slot `slot` (`None`: the callsite has none).
#[inline]
pub(crate) fn point(slot: usize) -> Option<&'static Point> {
    // Acquire: the slot's key was seen (acquire) by whoever found the slot; this load only
    // needs the point stored before it.
    let p = TABLE.points.get(slot)?.load(Ordering::Acquire);
    // SAFETY: a non-null value was stored from a `&'static Point` in `insert`.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The metadata of slot `slot`, if it holds a callsite.
pub(crate) fn metadata(slot: usize) -> Option<&'static Metadata<'static>> {
    let k = TABLE.keys.get(slot)?.load(Ordering::Acquire);
    // SAFETY: a non-null key was stored from a `&'static Metadata<'static>` in `insert`.
    (!k.is_null()).then(|| unsafe { &*k })
}

/// The slot of `meta`, made (and its point claimed) if it has none: a span callsite gets a
/// timed point named `target::name`, an event callsite a counted-only point named
/// `target::event@file:line`. `None` only when the table is full.
pub(crate) fn slot(meta: &'static Metadata<'static>) -> Option<usize> {
    if let Some(i) = find(meta) {
        return Some(i);
    }
    // A panic under the lock (none is expected) leaves the table valid: take it anyway.
    let _g = INSERT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = find(meta) {
        return Some(i);
    }
    // Relaxed: only read and written under `INSERT`.
    if USED.load(Ordering::Relaxed) >= CAP - 1 {
        return None;
    }
    let point = claim(meta);
    let mut i = home(meta);
    while !TABLE.keys[i].load(Ordering::Relaxed).is_null() {
        i = (i + 1) % CAP;
    }
    let p = point.map_or(std::ptr::null_mut(), |p| p as *const Point as *mut Point);
    // Relaxed: published by the key's release store below.
    TABLE.points[i].store(p, Ordering::Relaxed);
    TABLE.keys[i].store(
        meta as *const Metadata<'static> as *mut Metadata<'static>,
        Ordering::Release,
    );
    USED.fetch_add(1, Ordering::Relaxed);
    Some(i)
}

/// Claims the point of a callsite (its name leaked once: the table records the callsite).
fn claim(meta: &'static Metadata<'static>) -> Option<&'static Point> {
    let file = meta.file().unwrap_or("");
    let line = meta.line().unwrap_or(0);
    let (name, counted) = if meta.is_event() {
        let name = match meta.file() {
            Some(f) => format!("{}::event@{f}:{line}", meta.target()),
            None => format!("{}::{}", meta.target(), meta.name()),
        };
        (name, true)
    } else {
        (format!("{}::{}", meta.target(), meta.name()), false)
    };
    let name: &'static str = Box::leak(name.into_boxed_str());
    profpoint::__private::claim_point(name, file, line, counted)
}

/// Counts one call of an event callsite's count-only point.
pub(crate) fn count_event(meta: &'static Metadata<'static>) {
    if let Some(p) = slot(meta).and_then(point) {
        p.leave(p.start());
    }
}
