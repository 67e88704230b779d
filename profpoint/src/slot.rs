//! A point's counters on one thread ([`Slot`]), written by that thread alone and read by any
//! thread through a seqlock; the sums a report reads ([`Counts`], [`Scalars`]).
//!
//! # Mechanism
//! - Writers bump a per-slot sequence number before and after each update (a seqlock, plain
//!   stores on x86_64: `owned.rs`); readers retry until they see an even, unchanged sequence
//!   number, so each point's `nr`, `total` and distribution in a snapshot agree with each
//!   other. A reader whose owner stays mid-update longer than a time slice accepts a torn
//!   copy rather than wait forever.
//! - The seqlock is model-checked under loom (`loom_tests` below, `docs/loom.md`).
//!
//! # Extending
//! A new per-point counter is a field of [`Slot`], written in `point/hot.rs` between
//! `write_begin`/`write_end` and read in [`Slot::read`].

use crate::hist;
// The seqlock's words come from `crate::sync`: std's, or loom's in the model-checking build
// (the `loom_tests` below). The 32-bit owner-only words (`depth`, `countdown`) are std's in
// every build: `point/hot.rs` reads them through `owned::get32` together with its own std
// atomics, and no model needs them.
use crate::sync::atomic::{AtomicU64, Ordering, fence};
use std::sync::atomic::AtomicU32;

/// One thread's counters for one point. Only the owning thread writes it.
///
/// Aligned to 128 bytes: a cache line is 64 bytes, and the adjacent-line prefetcher of x86
/// CPUs pulls pairs of lines, so 128 keeps two threads' slots from ever sharing a prefetch pair
/// (crossbeam-utils' `CachePadded` uses 128 on x86_64 for the same reason).
#[repr(C, align(128))]
pub(crate) struct Slot {
    // The seqlock and the scalar counters fill the first 64-byte line exactly, so a reader
    // gets all of them in one cache-line fill, between two writes of a busy owner.
    /// Seqlock: odd while the owner is updating.
    pub(crate) seq: AtomicU64,
    /// Calls re-entered while the point was active on this thread (recursion). Every call is
    /// counted in exactly one of `timed`, `nested` and `skipped`: `nr` is their sum, so the
    /// common path bumps one counter, not two.
    pub(crate) nested: AtomicU64,
    /// Calls whose interval counts in `total` (outermost, timed calls).
    pub(crate) timed: AtomicU64,
    /// Calls counted without reading the clock (sampled mode).
    pub(crate) skipped: AtomicU64,
    /// Sum of timed intervals, in ticks.
    pub(crate) total: AtomicU64,
    /// Sum of intervals minus the intervals of points nested inside them, in ticks.
    pub(crate) self_ticks: AtomicU64,
    /// Shortest timed interval (`u64::MAX` until the first).
    pub(crate) min: AtomicU64,
    /// Longest timed interval.
    pub(crate) max: AtomicU64,
    /// How many times the point is active on this thread right now (recursion depth).
    pub(crate) depth: AtomicU32,
    /// Calls left before the next timed call, in sampled mode.
    pub(crate) countdown: AtomicU32,
    /// The points tree's one-entry cache (`tree.rs`): the parent node this point last had on
    /// this thread (`u32::MAX`: none yet) and its node under that parent.
    pub(crate) tree_parent: AtomicU32,
    pub(crate) tree_node: AtomicU32,
    /// The bucket of the last timed interval, plus one (0: none), not yet in `hist`
    /// ([`Slot::record_hist`]).
    pub(crate) pending: AtomicU64,
    /// Distribution of timed intervals (but the last: `pending`).
    pub(crate) hist: [AtomicU64; hist::BUCKETS],
    /// Idle time of calls made in segments (`point/segment.rs`: a `tracing` span's time alive
    /// between its enters), in ticks; 0 for every other point. Last: no hot path writes it,
    /// the overhead budget does not read it, and it sits in what would be the slot's tail
    /// padding (the slot is no larger for it, nor for `pending`).
    pub(crate) idle: AtomicU64,
}

/// A consistent copy of one slot, or the sum of several.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Counts {
    pub(crate) nested: u64,
    pub(crate) timed: u64,
    pub(crate) skipped: u64,
    pub(crate) total: u64,
    pub(crate) self_ticks: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) idle: u64,
    /// Calls by bucket (`hist::index`), up to the last non-empty bucket: shorter than
    /// `hist::BUCKETS` (empty with no timed call), so that a report of many points copies
    /// only the buckets their calls reached, not the whole array of every slot.
    pub(crate) hist: Vec<u64>,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            nested: 0,
            timed: 0,
            skipped: 0,
            total: 0,
            self_ticks: 0,
            min: u64::MAX,
            max: 0,
            idle: 0,
            hist: Vec::new(),
        }
    }
}

impl Counts {
    /// Every completed call.
    pub(crate) fn nr(&self) -> u64 {
        self.timed + self.nested + self.skipped
    }

    /// Adds `other` into `self` (a copy of a slot adds itself in `Slot::read`).
    #[cfg(test)]
    pub(crate) fn add(&mut self, other: &Counts) {
        self.nested += other.nested;
        self.timed += other.timed;
        self.skipped += other.skipped;
        self.total += other.total;
        self.self_ticks = self.self_ticks.wrapping_add(other.self_ticks);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.idle += other.idle;
        if self.hist.len() < other.hist.len() {
            self.hist.resize(other.hist.len(), 0);
        }
        for (a, b) in self.hist.iter_mut().zip(&other.hist) {
            *a += b;
        }
    }

    /// The scalar counters.
    pub(crate) fn scalars(&self) -> Scalars {
        Scalars {
            nested: self.nested,
            timed: self.timed,
            skipped: self.skipped,
            total: self.total,
            self_ticks: self.self_ticks,
            min: self.min,
            max: self.max,
        }
    }

    /// `self - base` for the additive counters (used by `reset`); min and max stay.
    pub(crate) fn since(&self, base: &Counts) -> Counts {
        Counts {
            nested: self.nested.saturating_sub(base.nested),
            timed: self.timed.saturating_sub(base.timed),
            skipped: self.skipped.saturating_sub(base.skipped),
            total: self.total.saturating_sub(base.total),
            self_ticks: self.self_ticks.wrapping_sub(base.self_ticks),
            min: self.min,
            max: self.max,
            idle: self.idle.saturating_sub(base.idle),
            hist: self
                .hist
                .iter()
                .enumerate()
                .map(|(i, a)| a.saturating_sub(base.hist.get(i).copied().unwrap_or(0)))
                .collect(),
        }
    }
}

/// Adds `d` to a counter only its owning thread writes: a plain load and store, no `lock`.
#[inline(always)]
pub(crate) fn bump(c: &AtomicU64, d: u64) {
    // Only the owning thread writes this counter, so no update can be lost; readers order
    // their reads through the slot's seqlock (`owned.rs`: one `add` to memory on x86_64).
    crate::owned::add(c, d);
}

impl Slot {
    /// A zeroed slot on the heap (min set to its "none yet" value).
    #[cfg(not(loom))]
    pub(crate) fn new_boxed() -> Box<Slot> {
        // SAFETY: every field of `Slot` is an atomic integer or an array of them, for which
        // all-zero bytes are a valid value.
        let slot: Box<Slot> = unsafe { Box::new_zeroed().assume_init() };
        // Relaxed: the slot is not yet shared with any other thread.
        slot.min.store(u64::MAX, Ordering::Relaxed);
        slot.tree_parent
            .store(u32::MAX, std::sync::atomic::Ordering::Relaxed);
        slot
    }

    /// The same slot under loom, whose atomics are not plain integers (all-zero bytes are not
    /// one of them): built field by field.
    #[cfg(loom)]
    pub(crate) fn new_boxed() -> Box<Slot> {
        let z = || AtomicU64::new(0);
        Box::new(Slot {
            seq: z(),
            nested: z(),
            timed: z(),
            skipped: z(),
            total: z(),
            self_ticks: z(),
            min: AtomicU64::new(u64::MAX),
            max: z(),
            depth: AtomicU32::new(0),
            countdown: AtomicU32::new(0),
            tree_parent: AtomicU32::new(u32::MAX),
            tree_node: AtomicU32::new(0),
            pending: z(),
            hist: std::array::from_fn(|_| z()),
            idle: z(),
        })
    }

    /// Marks the start of an update by the owner.
    #[inline(always)]
    pub(crate) fn write_begin(&self) {
        // An owner's relaxed increment then a release fence: the odd number becomes visible no
        // later than the data stores that follow (on x86_64 an `add` and a compiler barrier).
        crate::owned::add(&self.seq, 1);
        crate::owned::release_fence();
    }

    /// Marks the end of an update by the owner.
    #[inline(always)]
    pub(crate) fn write_end(&self) {
        // A release increment: the data stores before it are visible to a reader that sees the
        // even number (the fence orders them before the owner's increment).
        crate::owned::release_fence();
        crate::owned::add(&self.seq, 1);
    }

    /// Adds a timed interval to the distribution (inside the owner's seqlock write), one call
    /// late: the bucket of the call before goes into `hist`, this call's waits in `pending`.
    ///
    /// An increment at a bucket computed from the clock read just taken was most of what a
    /// timed call cost beyond its two clock reads (BENCHMARKS.md, "Profile points", has the
    /// figure): every other update hides behind the reads, but a store
    /// whose address waits on `rdtsc`'s result did not. One call late, the bucket's address is
    /// a load made before the clock read, and only the store's data waits on it.
    #[inline(always)]
    pub(crate) fn record_hist(&self, ticks: u64) {
        let last = crate::owned::get(&self.pending);
        if last != 0 {
            // Indexed with a bounds check (built into the language, no call at opt-level 0):
            // `pending` only ever holds a `hist::index` plus one, so it never fails.
            bump(&self.hist[last as usize - 1], 1);
        }
        crate::owned::set(&self.pending, hist::index(ticks) as u64 + 1);
    }

    /// A copy of the slot: the scalar counters consistent with each other (retried while the
    /// owner is mid-update), then the distribution (read after them, so it may hold a few calls
    /// more than `timed`, or its last call twice: percentiles use the distribution's own
    /// total).
    pub(crate) fn read(&self, into: &mut Counts) {
        let s = self.read_scalars();
        into.nested += s.nested;
        into.timed += s.timed;
        into.skipped += s.skipped;
        into.total += s.total;
        into.self_ticks = into.self_ticks.wrapping_add(s.self_ticks);
        into.min = into.min.min(s.min);
        into.max = into.max.max(s.max);
        // Relaxed: read like the distribution (a best-effort copy, after the scalars).
        into.idle += self.idle.load(Ordering::Relaxed);
        // Relaxed: as the distribution. The owner's last timed call, still out of `hist`.
        let last = self.pending.load(Ordering::Relaxed) as usize;
        if s.timed == 0 && last == 0 {
            // No timed call on this slot when the scalars were read: nothing in `hist`
            // that the copy should hold (a point counted only, or not called here).
            return;
        }
        // Relaxed: the distribution is read as a best-effort copy (see above), straight into
        // `into`, and only between the buckets of the slot's least and greatest timed call:
        // the owner records a call's bucket with the same interval it compares with `min`
        // and `max` (`point/hot.rs`), so no bucket outside them holds one. Reading all 1,408
        // buckets of every slot was most of a report of many points (11 KB a point and
        // thread). Without a least and greatest (a slot written otherwise, in tests), all.
        let (lo, hi) = if s.min <= s.max {
            (hist::index(s.min), hist::index(s.max) + 1)
        } else {
            (0, hist::BUCKETS)
        };
        let lo = if last > 0 { lo.min(last - 1) } else { lo };
        let hi = hi.max(last).min(hist::BUCKETS);
        if into.hist.len() < hi {
            into.hist.resize(hi, 0);
        }
        for (d, s) in into.hist[lo..hi].iter_mut().zip(&self.hist[lo..hi]) {
            *d += s.load(Ordering::Relaxed);
        }
        // `get_mut`: a reader must not panic (it may be a signal handler's report), though
        // `pending` only ever holds a bucket plus one.
        if let Some(b) = last.checked_sub(1).and_then(|i| into.hist.get_mut(i)) {
            *b += 1;
        }
    }

    /// The scalar counters, consistent with each other (retried while the owner is
    /// mid-update): one cache line, what the overhead budget reads of every slot each round.
    pub(crate) fn read_scalars(&self) -> Scalars {
        let mut c = Scalars::default();
        let mut attempts = 0u32;
        let mut started: Option<std::time::Instant> = None;
        loop {
            let s0 = self.seq.load(Ordering::Acquire);
            // Relaxed loads: the seqlock's acquire/fence pair orders them.
            c.nested = self.nested.load(Ordering::Relaxed);
            c.timed = self.timed.load(Ordering::Relaxed);
            c.skipped = self.skipped.load(Ordering::Relaxed);
            c.total = self.total.load(Ordering::Relaxed);
            c.self_ticks = self.self_ticks.load(Ordering::Relaxed);
            c.min = self.min.load(Ordering::Relaxed);
            c.max = self.max.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            // Relaxed: ordered after the data loads by the acquire fence above.
            if s0 & 1 == 0 && self.seq.load(Ordering::Relaxed) == s0 {
                break;
            }
            attempts += 1;
            if attempts.is_multiple_of(64) {
                // The owner may be preempted mid-update (odd) until the scheduler runs it
                // again: give it the CPU, and give up only after READ_PATIENCE.
                let waited = started
                    .get_or_insert_with(std::time::Instant::now)
                    .elapsed();
                if waited >= READ_PATIENCE {
                    // The last copy is used: each counter in it is a value it really had,
                    // off by at most the calls in flight, never older than an earlier read.
                    break;
                }
                if waited >= std::time::Duration::from_millis(1) {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                } else {
                    crate::sync::yield_now();
                }
            } else {
                crate::sync::spin_loop();
            }
        }
        c
    }
}

/// The scalar counters of a slot (or the sum of several): [`Counts`] without the distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scalars {
    pub(crate) nested: u64,
    pub(crate) timed: u64,
    pub(crate) skipped: u64,
    pub(crate) total: u64,
    pub(crate) self_ticks: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
}

impl Default for Scalars {
    fn default() -> Self {
        Scalars {
            nested: 0,
            timed: 0,
            skipped: 0,
            total: 0,
            self_ticks: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Scalars {
    /// Adds the additive counters of `o` (min and max are not needed by the sums' users).
    pub(crate) fn add(&mut self, o: &Scalars) {
        self.nested += o.nested;
        self.timed += o.timed;
        self.skipped += o.skipped;
        self.total += o.total;
        self.self_ticks = self.self_ticks.wrapping_add(o.self_ticks);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// Every completed call.
    pub(crate) fn nr(&self) -> u64 {
        self.timed + self.nested + self.skipped
    }

    /// `self_ticks` as the signed sum it is: a call whose nested points were estimated (left
    /// untimed, counted at their mean) may add a negative self time, so that the sum stays
    /// unbiased; the words add and subtract wrapping.
    pub(crate) fn self_signed(&self) -> f64 {
        self.self_ticks as i64 as f64
    }
}

// The scalar counters a reader copies share the first cache line with the seqlock (loom's
// atomics are larger than a word: not in the model-checking build).
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Slot, depth) == 64);
// The owner-only words and the pending bucket share the second line with the distribution's
// first buckets (a call touches that line for its recursion depth and tree cache anyway).
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Slot, pending) == 80);
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Slot, hist) == 88);

/// How long a reader retries a slot whose owner keeps it mid-update before it accepts a torn
/// copy: longer than a scheduler time slice, so a preempted owner runs and finishes first.
const READ_PATIENCE: std::time::Duration = std::time::Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_adds() {
        let c = AtomicU64::new(5);
        bump(&c, 7);
        assert_eq!(c.load(Ordering::Relaxed), 12);
    }

    #[test]
    fn counts_add_and_since() {
        let mut a = Counts::default();
        let mut b = Counts {
            timed: 3,
            total: 30,
            min: 5,
            max: 15,
            ..Default::default()
        };
        b.hist = vec![0, 3];
        a.add(&b);
        a.add(&b);
        assert_eq!(
            (a.nr(), a.total, a.min, a.max, a.hist[1]),
            (6, 60, 5, 15, 6)
        );
        let d = a.since(&b);
        assert_eq!((d.nr(), d.total, d.hist[1]), (3, 30, 3));
    }

    /// One timed call of `t` ticks written into `s`, its least and greatest kept as
    /// `point/hot.rs` keeps them when `with_min_max`.
    fn record(s: &Slot, t: u64, with_min_max: bool) {
        s.write_begin();
        bump(&s.timed, 1);
        if with_min_max {
            if t < crate::owned::get(&s.min) {
                crate::owned::set(&s.min, t);
            }
            if t > crate::owned::get(&s.max) {
                crate::owned::set(&s.max, t);
            }
        }
        s.record_hist(t);
        s.write_end();
    }

    /// The distribution, one call late in the slot, is whole in every copy: the last timed
    /// interval (still pending) is read into its bucket, and each earlier one is in `hist`
    /// once. Both ways a copy reads the buckets: between those of `min` and `max` when the
    /// owner keeps them as the hot path does, and all of them when it does not.
    #[test]
    fn a_copy_holds_every_interval_the_last_one_too() {
        for with_min_max in [false, true] {
            let s = Slot::new_boxed();
            let mut empty = Counts::default();
            s.read(&mut empty);
            assert_eq!(empty.hist.iter().sum::<u64>(), 0);
            let ticks = [3u64, 40, 40, 1_000, 77_777, 0, 3, u64::MAX / 2, 5];
            for (n, &t) in ticks.iter().enumerate() {
                record(&s, t, with_min_max);
                let mut c = Counts::default();
                s.read(&mut c);
                let mut want = vec![0u64; hist::BUCKETS];
                for &seen in &ticks[..=n] {
                    want[hist::index(seen)] += 1;
                }
                let mut got = c.hist.clone();
                assert!(got.len() <= hist::BUCKETS, "{}", got.len());
                got.resize(hist::BUCKETS, 0);
                assert_eq!(got, want, "after {} intervals ({with_min_max})", n + 1);
                assert_eq!(c.hist.iter().sum::<u64>(), c.timed);
            }
            // The slot itself holds all but the last, which waits for the next timed call.
            let held: u64 = s.hist.iter().map(|b| b.load(Ordering::Relaxed)).sum();
            assert_eq!(held, ticks.len() as u64 - 1);
        }
    }

    /// Copies of slots whose calls reach different buckets add up in one `Counts` (a point's
    /// copy sums its slot on every thread), whichever reaches further.
    #[test]
    fn copies_of_narrow_and_wide_slots_add_up() {
        let write = |s: &Slot, ticks: &[u64]| {
            for &t in ticks {
                record(s, t, true);
            }
        };
        let (wide, narrow) = (Slot::new_boxed(), Slot::new_boxed());
        write(&wide, &[2, 9_000_000, 70]);
        write(&narrow, &[500, 600]);
        for order in [[&wide, &narrow], [&narrow, &wide]] {
            let mut c = Counts::default();
            for s in order {
                s.read(&mut c);
            }
            let mut want = vec![0u64; hist::BUCKETS];
            for t in [2u64, 9_000_000, 70, 500, 600] {
                want[hist::index(t)] += 1;
            }
            c.hist.resize(hist::BUCKETS, 0);
            assert_eq!(c.hist, want);
            assert_eq!((c.timed, c.min, c.max), (5, 2, 9_000_000));
        }
    }

    #[test]
    fn slot_read_sees_a_consistent_copy() {
        let s = Slot::new_boxed();
        s.write_begin();
        bump(&s.nested, 2);
        s.write_end();
        let mut c = Counts::default();
        s.read(&mut c);
        assert_eq!(c.nr(), 2);
        assert_eq!(c.min, u64::MAX);
    }
}

#[cfg(all(test, not(loom)))]
mod size_tests {
    /// The memory figure docs/profile-points.md states.
    #[test]
    fn memory_per_point_and_thread_is_as_documented() {
        assert_eq!(std::mem::size_of::<super::Slot>(), 11_392);
    }
}

/// Model checking of the seqlock (`RUSTFLAGS="--cfg loom"`, docs/loom.md).
///
/// Real code: `Slot::new_boxed`, `write_begin`, `bump`, `record_hist`, `write_end` and `read`,
/// with loom's atomics and fences (`crate::sync`). Stand-in: the writer's update is the model's own
/// sequence of `bump`s between `write_begin` and `write_end`, the shape of `point/hot.rs`'s leave
/// (which needs the thread-locals and the clock); `owned.rs`'s debug-build x86_64 assembly is
/// replaced by its release-build code (the std atomics loom can see).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    /// A reader copying a slot twice while its owner makes two updates of `timed` and `total`
    /// together (10 ticks a call), each adding its interval to the distribution one call late:
    /// every copy has `total == 10 * timed` (no torn pair) and at least `timed` intervals in
    /// its distribution (the pending one read in), the second is never older than the first,
    /// and the final copy has both updates, each interval once.
    #[test]
    fn loom_seqlock_reader_never_sees_a_torn_pair() {
        // What the first copy saw, over every execution: proof that the reader really ran
        // before, between and after the updates (loom explores from the schedule where the
        // main thread, here the writer, runs first: tokio-rs/loom#392 is why it is the writer).
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let seen_in = seen.clone();
        crate::sync::model("seqlock", move || {
            let slot: Arc<Slot> = Arc::from(Slot::new_boxed());
            let r = slot.clone();
            let seen = seen_in.clone();
            let reader = loom::thread::spawn(move || {
                let mut first = Counts::default();
                r.read(&mut first);
                let torn = |c: &Counts| format!("torn copy: timed {} total {}", c.timed, c.total);
                let in_hist = |c: &Counts| c.hist.iter().sum::<u64>();
                assert_eq!(first.total, 10 * first.timed, "{}", torn(&first));
                assert!(
                    in_hist(&first) >= first.timed,
                    "an interval missing from a copy"
                );
                let mut second = Counts::default();
                r.read(&mut second);
                assert_eq!(second.total, 10 * second.timed, "{}", torn(&second));
                assert!(
                    in_hist(&second) >= second.timed,
                    "an interval missing from a copy"
                );
                assert!(
                    second.timed >= first.timed,
                    "second copy older than the first"
                );
                seen.lock().unwrap().insert(first.timed);
            });
            for _ in 0..2 {
                slot.write_begin();
                bump(&slot.timed, 1);
                bump(&slot.total, 10);
                slot.record_hist(10);
                slot.write_end();
            }
            reader.join().unwrap();
            let mut last = Counts::default();
            slot.read(&mut last);
            assert_eq!((last.timed, last.total), (2, 20), "after the reader ended");
            assert_eq!(
                last.hist[hist::index(10)],
                2,
                "each interval once, after the reader"
            );
            assert_eq!(
                last.hist.iter().sum::<u64>(),
                2,
                "each interval once, after the reader"
            );
        });
        let seen = seen.lock().unwrap();
        assert_eq!(*seen, BTreeSet::from([0, 1, 2]), "schedules explored");
    }
}
