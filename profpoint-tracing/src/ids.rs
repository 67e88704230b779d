//! The layer's map from the registry's span ids to the spans' slots in [`crate::spans`]: a
//! lock-free open-addressed table, so that an enter, an exit or a close finds its span's call
//! without looking the span up in the registry.
//!
//! # Mechanism
//! - [`CAP`] entries, each a key (the registry's id; 0 empty, [`GONE`] removed) and a value
//!   (the slot's id). The registry's ids are unique among open spans, so an insert takes the
//!   first empty or removed entry on its probe path without checking for the key further on.
//! - An insert completes before anything else can use the id (the registry returns it after
//!   the layers' `on_new_span`), so a lookup of a key always sees its value; a lookup probes
//!   from the key's home until the key or an empty entry, at most [`PROBE`] entries.
//! - A span that finds no entry within [`PROBE`] (more than a few thousand open at once, or
//!   removed entries crowding its home) is not in the table: the layer keeps its slot's id in
//!   the span's extensions instead, the slower path.
//! - The table is allocated at the first span (256 KiB).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Entries (a power of two).
const CAP: usize = 1 << 14;
/// The longest probe.
const PROBE: usize = 32;
/// A removed entry's key (no registry id: they are `NonZeroU64`s from a slab index plus one,
/// far below it).
const GONE: u64 = u64::MAX;

struct Entry {
    key: AtomicU64,
    value: AtomicU64,
}

static TABLE: LazyLock<Box<[Entry]>> = LazyLock::new(|| {
    (0..CAP)
        .map(|_| Entry {
            key: AtomicU64::new(0),
            value: AtomicU64::new(0),
        })
        .collect()
});

fn home(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CAP.trailing_zeros())) as usize
}

/// The entries `key` may stand in, from its home, at most [`PROBE`] of them (none for 0 and
/// [`GONE`], which are no registry id).
#[inline]
fn path(key: u64) -> impl Iterator<Item = &'static Entry> {
    let t: &'static [Entry] = &TABLE;
    let start = home(key);
    let n = if key == 0 || key == GONE { 0 } else { PROBE };
    (0..n).map(move |i| &t[(start + i) & (CAP - 1)])
}

/// Records `key` (a registry id, not 0) as the span of slot id `value`. Whether there was room
/// within [`PROBE`] entries.
pub(crate) fn insert(key: u64, value: u64) -> bool {
    for e in path(key) {
        // Relaxed: a hint; the compare-and-swap decides.
        let k = e.key.load(Ordering::Relaxed);
        if k != 0 && k != GONE {
            continue;
        }
        // The key, then the value: a lookup of this key happens after the insert returns
        // (see the module docs), and no lookup of another key reads this entry's value.
        // Acquire on success: this entry's last removal happened before.
        if e.key
            .compare_exchange(k, key, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            e.value.store(value, Ordering::Release);
            return true;
        }
    }
    false
}

/// The entry of registry id `key`, if the table has it: probed from its home until the key
/// or an empty entry.
#[inline]
fn find(key: u64) -> Option<&'static Entry> {
    for e in path(key) {
        // Acquire: pairs with the insert's release of the value (through the span id's
        // hand-over to this thread).
        let k = e.key.load(Ordering::Acquire);
        if k == key {
            return Some(e);
        }
        if k == 0 {
            return None;
        }
    }
    None
}

/// The slot id of registry id `key`, if the table has it.
#[inline]
pub(crate) fn get(key: u64) -> Option<u64> {
    Some(find(key)?.value.load(Ordering::Acquire))
}

/// Sets the slot id of registry id `key`, which the table has (a value chosen late: under
/// the span's own lock, so no two threads set one key at once).
pub(crate) fn set(key: u64, value: u64) {
    if let Some(e) = find(key) {
        // Release: pairs with `get`'s acquire.
        e.value.store(value, Ordering::Release);
    }
}

/// Forgets registry id `key`; its slot id, if the table had it.
pub(crate) fn remove(key: u64) -> Option<u64> {
    let e = find(key)?;
    let v = e.value.load(Ordering::Acquire);
    // Release: the reads above happen before the entry's reuse.
    e.key.store(GONE, Ordering::Release);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the table is the process's, and a crowded probe path would refuse the other's
    // keys if they ran at once.
    #[test]
    fn keys_are_found_until_removed_and_a_crowded_home_refuses_past_the_probe() {
        found_until_removed_and_reused();
        a_crowded_home_refuses_past_the_probe();
    }

    fn found_until_removed_and_reused() {
        // Keys far from those the other tests and the registry use.
        let base = 1 << 60;
        for round in 0..3 {
            for k in base..base + 100 {
                assert!(insert(k, k + round), "{k}");
            }
            for k in base..base + 100 {
                assert_eq!(get(k), Some(k + round));
            }
            set(base + 7, 1);
            assert_eq!(get(base + 7), Some(1));
            set(base + 7, base + 7 + round);
            for k in base..base + 100 {
                assert_eq!(remove(k), Some(k + round));
                assert_eq!(get(k), None);
            }
        }
        assert_eq!(get(0), None);
        assert!(!insert(0, 1));
        assert!(!insert(GONE, 1));
    }

    fn a_crowded_home_refuses_past_the_probe() {
        // Keys with one home, found by trying: more than PROBE of them cannot all fit.
        let want = home(7 << 50);
        let keys: Vec<u64> = ((7 << 50)..)
            .filter(|&k| home(k) == want)
            .take(PROBE + 8)
            .collect();
        let placed: Vec<bool> = keys.iter().map(|&k| insert(k, k)).collect();
        assert!(placed.iter().any(|p| !p), "a full probe path refuses");
        for (&k, &p) in keys.iter().zip(&placed) {
            assert_eq!(get(k), p.then_some(k));
            if p {
                assert_eq!(remove(k), Some(k));
            }
        }
    }
}
