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
//! - The table takes at most [`LIMIT`] callsites, half its slots, so that a probe, a hit's
//!   or a miss's, ends within a few slots. Past that (the pool of points long exhausted) it
//!   refuses further callsites: they are not profiled, nothing is claimed for them, and a
//!   refused callsite's every span costs one probe and one flag, not the lock (a table let
//!   fill to its last slot probed all of it twice, once under the lock, for each).

use profpoint::Point;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use tracing_core::Metadata;

/// Slots in the table: a power of two, twice [`LIMIT`].
pub(crate) const CAP: usize = 8192;
/// `log2(CAP)`.
const BITS: u32 = 13;
/// The most callsites the table takes: four times the pool of points (the pool's spans plus
/// events, and the callsites seen once it was exhausted).
pub(crate) const LIMIT: usize = CAP / 2;

/// Spare points the crate reserves in profpoint's linker slice.
pub(crate) const POOL: usize = 1024;
profpoint::__spare_points!(1024);

/// The callsites' slots (one static table, [`TABLE`]; tests make their own).
pub(crate) struct Table {
    /// The callsite's metadata (null: an empty slot). Written once, under `insert`.
    keys: [AtomicPtr<Metadata<'static>>; CAP],
    /// Its point (null: none, the pool was exhausted). Written once, before the key.
    points: [AtomicPtr<Point>; CAP],
    /// Slots in use (under `insert`).
    used: AtomicUsize,
    /// Set once [`LIMIT`] callsites hold slots: a callsite not found is then refused without
    /// the lock.
    full: AtomicBool,
    insert: Mutex<()>,
}

static TABLE: Table = Table::new();

fn home(meta: &'static Metadata<'static>) -> usize {
    let addr = meta as *const Metadata<'static> as usize;
    ((addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - BITS)) % CAP
}

impl Table {
    pub(crate) const fn new() -> Table {
        Table {
            keys: [const { AtomicPtr::new(std::ptr::null_mut()) }; CAP],
            points: [const { AtomicPtr::new(std::ptr::null_mut()) }; CAP],
            used: AtomicUsize::new(0),
            full: AtomicBool::new(false),
            insert: Mutex::new(()),
        }
    }

    /// The slot of `meta`, if it has one.
    #[inline]
    fn find(&self, meta: &'static Metadata<'static>) -> Option<usize> {
        let want = meta as *const Metadata<'static> as *mut Metadata<'static>;
        let mut i = home(meta);
        // Never more than LIMIT + 1 probes: at most LIMIT slots are taken.
        for _ in 0..CAP {
            // Acquire: pairs with the release store in `slot`, so the point is visible.
            let k = self.keys[i].load(Ordering::Acquire);
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

    /// The slot of `meta`, made (its point from `claim`) if it has none. `None` only when
    /// the table is full.
    fn slot(
        &self,
        meta: &'static Metadata<'static>,
        claim: impl FnOnce(&'static Metadata<'static>) -> Option<&'static Point>,
    ) -> Option<usize> {
        if let Some(i) = self.find(meta) {
            return Some(i);
        }
        // Relaxed: a callsite that misses the flag being set takes the lock and is refused
        // there; the flag only spares the lock.
        if self.full.load(Ordering::Relaxed) {
            return None;
        }
        // A panic under the lock (none is expected) leaves the table valid: take it anyway.
        let _g = self.insert.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = self.find(meta) {
            return Some(i);
        }
        // Relaxed: only read and written under the lock.
        if self.used.load(Ordering::Relaxed) >= LIMIT {
            self.full.store(true, Ordering::Relaxed);
            return None;
        }
        let point = claim(meta);
        let mut i = home(meta);
        while !self.keys[i].load(Ordering::Relaxed).is_null() {
            i = (i + 1) % CAP;
        }
        let p = point.map_or(std::ptr::null_mut(), |p| p as *const Point as *mut Point);
        // Relaxed: published by the key's release store below.
        self.points[i].store(p, Ordering::Relaxed);
        self.keys[i].store(
            meta as *const Metadata<'static> as *mut Metadata<'static>,
            Ordering::Release,
        );
        self.used.fetch_add(1, Ordering::Relaxed);
        Some(i)
    }
}

/// The slot of `meta`, if it has one.
#[inline]
pub(crate) fn find(meta: &'static Metadata<'static>) -> Option<usize> {
    TABLE.find(meta)
}

/// The point of slot `slot` (`None`: the callsite has none).
#[inline]
pub(crate) fn point(slot: usize) -> Option<&'static Point> {
    // Acquire: the slot's key was seen (acquire) by whoever found the slot; this load only
    // needs the point stored before it.
    let p = TABLE.points.get(slot)?.load(Ordering::Acquire);
    // SAFETY: a non-null value was stored from a `&'static Point` in `Table::slot`.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The metadata of slot `slot`, if it holds a callsite.
pub(crate) fn metadata(slot: usize) -> Option<&'static Metadata<'static>> {
    let k = TABLE.keys.get(slot)?.load(Ordering::Acquire);
    // SAFETY: a non-null key was stored from a `&'static Metadata<'static>` in `Table::slot`.
    (!k.is_null()).then(|| unsafe { &*k })
}

/// The slot of `meta`, made (and its point claimed) if it has none: a span callsite gets a
/// timed point named `target::name`, an event callsite a counted-only point named
/// `target::event@file:line`. `None` only when the table is full.
pub(crate) fn slot(meta: &'static Metadata<'static>) -> Option<usize> {
    TABLE.slot(meta, claim)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_core::callsite::{Callsite, Identifier};
    use tracing_core::field::FieldSet;
    use tracing_core::{Interest, Kind, Level, Metadata};

    struct Site;
    impl Callsite for Site {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unimplemented!("not registered")
        }
    }
    static SITE: Site = Site;

    /// A callsite's metadata of its own (its address is the table's key).
    fn meta() -> &'static Metadata<'static> {
        Box::leak(Box::new(Metadata::new(
            "span",
            "callsites::tests",
            Level::INFO,
            None,
            None,
            None,
            FieldSet::new(&[], Identifier(&SITE)),
            Kind::SPAN,
        )))
    }

    /// A full table keeps every callsite it took, found again, and refuses the others, each
    /// time it is asked, without claiming anything for them.
    #[test]
    fn a_full_table_keeps_its_callsites_and_refuses_the_rest() {
        let table = Box::new(Table::new());
        let metas: Vec<_> = (0..LIMIT).map(|_| meta()).collect();
        let mut claims = 0;
        let slots: Vec<usize> = metas
            .iter()
            .map(|&m| {
                table
                    .slot(m, |_| {
                        claims += 1;
                        None
                    })
                    .expect("a slot below the limit")
            })
            .collect();
        assert_eq!(claims, LIMIT);
        let late = meta();
        for _ in 0..3 {
            assert_eq!(table.slot(late, |_| panic!("claimed past the limit")), None);
        }
        assert!(table.full.load(Ordering::Relaxed));
        for (&m, &s) in metas.iter().zip(&slots) {
            assert_eq!(table.find(m), Some(s));
            assert_eq!(table.slot(m, |_| panic!("claimed twice")), Some(s));
        }
        assert_eq!(table.find(late), None);
    }
}
