//! The layer's map from the registry's span ids to the spans' slots in [`crate::spans`]: a
//! lock-free open-addressed table, so that an enter, an exit or a close finds its span's call
//! without looking the span up in the registry.
//!
//! # Mechanism
//! - Each layer has its own table ([`Ids`], shared by its clones): registries number their
//!   spans from 1 each, so two registries with a layer each (a process's default and a test's
//!   `with_default`) give different spans the same id, which one table would mix up.
//! - [`CAP`] entries, each a key (the registry's id; 0 empty, [`GONE`] removed, [`RESERVED`]
//!   being written) and a value (the slot's id). The registry's ids are unique among its open
//!   spans, so an insert takes the first empty or removed entry on its probe path without
//!   checking for the key further on.
//! - An insert reserves its entry, writes the value, then publishes the key (release), so a
//!   lookup that finds the key finds its value; a lookup probes from the key's home until the
//!   key or an empty entry, at most [`PROBE`] entries, past reserved ones.
//! - A span that finds no entry within [`PROBE`] (more than a few thousand open at once, or
//!   removed entries crowding its home) is not in the table: the layer keeps its slot's id in
//!   the span's extensions instead, the slower path.
//! - The table is allocated with the layer (256 KiB).

use std::sync::atomic::{AtomicU64, Ordering};

/// Entries (a power of two).
const CAP: usize = 1 << 14;
/// The longest probe.
const PROBE: usize = 32;
/// A removed entry's key (no registry id: they are `NonZeroU64`s from a slab index plus one,
/// far below it).
const GONE: u64 = u64::MAX;
/// The key of an entry an insert is writing.
const RESERVED: u64 = u64::MAX - 1;

struct Entry {
    key: AtomicU64,
    value: AtomicU64,
}

/// One layer's table.
pub(crate) struct Ids {
    entries: Box<[Entry]>,
}

impl std::fmt::Debug for Ids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ids").finish_non_exhaustive()
    }
}

impl Default for Ids {
    fn default() -> Ids {
        Ids {
            entries: (0..CAP)
                .map(|_| Entry {
                    key: AtomicU64::new(0),
                    value: AtomicU64::new(0),
                })
                .collect(),
        }
    }
}

fn home(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CAP.trailing_zeros())) as usize
}

/// Whether `key` can be a registry id (0 and the markers are not).
fn is_key(key: u64) -> bool {
    key != 0 && key < RESERVED
}

impl Ids {
    /// The entries `key` may stand in, from its home, at most [`PROBE`] of them (none for
    /// what is no registry id).
    #[inline]
    fn path(&self, key: u64) -> impl Iterator<Item = &Entry> {
        let start = home(key);
        let n = if is_key(key) { PROBE } else { 0 };
        (0..n).map(move |i| &self.entries[(start + i) & (CAP - 1)])
    }

    /// Records `key` (a registry id) as the span of slot id `value`. Whether there was room
    /// within [`PROBE`] entries.
    pub(crate) fn insert(&self, key: u64, value: u64) -> bool {
        for e in self.path(key) {
            // Relaxed: a hint; the compare-and-swap decides.
            let k = e.key.load(Ordering::Relaxed);
            if k != 0 && k != GONE {
                continue;
            }
            // Reserved, the value, then the key: a lookup that sees the key sees its value.
            // Acquire on success: this entry's last removal happened before.
            if e.key
                .compare_exchange(k, RESERVED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                e.value.store(value, Ordering::Relaxed);
                // Release: publishes the value with the key.
                e.key.store(key, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// The entry of registry id `key`, if the table has it: probed from its home until the
    /// key or an empty entry.
    #[inline]
    fn find(&self, key: u64) -> Option<&Entry> {
        for e in self.path(key) {
            // Acquire: pairs with the insert's release of the key.
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
    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        Some(self.find(key)?.value.load(Ordering::Acquire))
    }

    /// Sets the slot id of registry id `key`, which the table has (a value chosen late: under
    /// the span's own lock, so no two threads set one key at once).
    pub(crate) fn set(&self, key: u64, value: u64) {
        if let Some(e) = self.find(key) {
            // Release: pairs with `get`'s acquire.
            e.value.store(value, Ordering::Release);
        }
    }

    /// Forgets registry id `key`; its slot id, if the table had it.
    pub(crate) fn remove(&self, key: u64) -> Option<u64> {
        let e = self.find(key)?;
        let v = e.value.load(Ordering::Acquire);
        // Release: the reads above happen before the entry's reuse.
        e.key.store(GONE, Ordering::Release);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_until_removed_and_reused() {
        let t = Ids::default();
        // Keys far from those the other tests and the registry use.
        let base = 1 << 60;
        for round in 0..3 {
            for k in base..base + 100 {
                assert!(t.insert(k, k + round), "{k}");
            }
            for k in base..base + 100 {
                assert_eq!(t.get(k), Some(k + round));
            }
            t.set(base + 7, 1);
            assert_eq!(t.get(base + 7), Some(1));
            t.set(base + 7, base + 7 + round);
            for k in base..base + 100 {
                assert_eq!(t.remove(k), Some(k + round));
                assert_eq!(t.get(k), None);
            }
        }
        assert_eq!(t.get(0), None);
        assert!(!t.insert(0, 1));
        assert!(!t.insert(GONE, 1));
        assert!(!t.insert(RESERVED, 1));
    }

    /// Two tables (two layers, over two registries that both number their spans from 1) keep
    /// the same id apart.
    #[test]
    fn two_tables_keep_the_same_id_apart() {
        let (a, b) = (Ids::default(), Ids::default());
        assert!(a.insert(1, 10) && b.insert(1, 20));
        assert_eq!((a.get(1), b.get(1)), (Some(10), Some(20)));
        assert_eq!(b.remove(1), Some(20));
        assert_eq!((a.get(1), b.get(1)), (Some(10), None));
    }

    /// An entry being written (reserved, its value not stored yet) is passed over: a lookup
    /// of its key finds nothing rather than the value of the span that had the entry before.
    #[test]
    fn an_entry_being_written_is_not_found_with_an_old_value() {
        let t = Ids::default();
        let key = 5;
        assert!(t.insert(key, 77));
        assert_eq!(t.remove(key), Some(77));
        // The state an insert of `key` is in between its reservation and its key's store.
        let e = &t.entries[home(key)];
        e.key.store(RESERVED, Ordering::Relaxed);
        assert_eq!(t.get(key), None, "the old value (77) must not be read");
        // Another key whose home is the same is placed past it and found.
        let other = (key + 1..).find(|&k| home(k) == home(key)).unwrap();
        assert!(t.insert(other, 9));
        assert_eq!(t.get(other), Some(9));
        e.value.store(78, Ordering::Relaxed);
        e.key.store(key, Ordering::Release);
        assert_eq!(t.get(key), Some(78));
    }

    #[test]
    fn a_crowded_home_refuses_past_the_probe() {
        let t = Ids::default();
        // Keys with one home, found by trying: more than PROBE of them cannot all fit.
        let want = home(7 << 50);
        let keys: Vec<u64> = ((7 << 50)..)
            .filter(|&k| home(k) == want)
            .take(PROBE + 8)
            .collect();
        let placed: Vec<bool> = keys.iter().map(|&k| t.insert(k, k)).collect();
        assert!(placed.iter().any(|p| !p), "a full probe path refuses");
        for (&k, &p) in keys.iter().zip(&placed) {
            assert_eq!(t.get(k), p.then_some(k));
            if p {
                assert_eq!(t.remove(k), Some(k));
            }
        }
    }
}
