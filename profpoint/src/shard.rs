//! Per-thread shards: where the counters of every point live.
//!
//! # Concept
//! The design card says "per-CPU counters". What it wants is that no two threads running at the
//! same time ever write the same cache line, and that the hot path takes no lock and no atomic
//! read-modify-write. A per-CPU slot needs one or the other: the CPU id is cheap to read (the
//! rseq area, ~0.2 ns: `../shared/MEASURED.md`), but a thread can migrate between reading it
//! and updating the slot, so the update must be a `lock`-prefixed read-modify-write or an rseq
//! critical section written in assembly for every update sequence, with a restart path. A
//! point updates five to seven words per call. Per-thread shards with plain stores need
//! neither, and meet "no two running threads share a line" just as well: a shard is only ever
//! written by the one thread that owns it. What a whole enabled call costs this way is
//! measured in BENCHMARKS.md (`point_targets`, the `points` bench).
//!
//! # Mechanism
//! - A [`Shard`] holds one pointer per profile point (the linker-gathered slice gives every point
//!   a dense index) to a [`Slot`]: that thread's counters for that point, allocated on the
//!   thread's first call of the point (a cold path), 128-byte aligned (see [`Slot`]).
//! - A thread gets a shard on its first call of any point, from a free list or newly allocated,
//!   and keeps it in a `const`-initialised thread-local (one `fs:`-relative load on x86_64).
//! - When the thread exits, a thread-local destructor hands the shard back to the free list.
//!   The shard keeps its counts; the next thread to take it adds to them. Reports sum every
//!   shard ever made, so counts of exited threads are never lost, and the number of shards is
//!   bounded by the largest number of threads that used points *at the same time*: a thread
//!   pool that churns does not grow memory.
//! - A call made after the thread's destructors ran (another thread-local's destructor calling
//!   a profiled function) borrows a shard for the duration of that call only.
//! - Writers bump a per-slot sequence number before and after each update (a seqlock, plain
//!   stores on x86_64); readers retry until they see an even, unchanged sequence number, so each
//!   point's `nr`, `total` and distribution in a snapshot agree with each other.
//!   The seqlock is model-checked under loom (`loom_tests` below, `docs/loom.md`).
//! - The shard is the thread context below everything: it imports neither the points nor the
//!   tracepoints whose state it holds. Its two tables are as long as its users say through
//!   [`SIZES`], a linker-gathered list (the points fill in their number, the tracepoints
//!   theirs).
//!
//! # Extending
//! A new per-point counter is a field of [`Slot`], written in `point.rs` between
//! `write_begin`/`write_end` and read in [`Slot::read`].

use crate::hist;
// The seqlock's and the read sections' words come from `crate::sync`: std's, or loom's in the
// model-checking build (the `loom_tests` below). The 32-bit owner-only words (`depth`,
// `countdown`, `rcu_nest`) are std's in every build: `point.rs` reads them through
// `owned::get32` together with its own std atomics, and no model needs them.
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering, fence};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::AtomicU32;

/// How long a shard's two tables are: one slot pointer per profile point, one hit counter per
/// tracepoint. The shard's users say so, not this file: each adds a function to [`SIZES`]
/// that fills in its own length, and the linker gathers them (as it gathers the points), so
/// the shard is sized by what it is given and imports none of the code above it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// Entries of the slot table (the number of profile points).
    pub(crate) slots: usize,
    /// Entries of the hit counters (the number of tracepoints).
    pub(crate) hits: usize,
}

/// What each user of the shards needs of them (see [`Sizes`]).
#[cfg(not(feature = "off"))]
#[linkme::distributed_slice]
pub(crate) static SIZES: [fn(&mut Sizes)];

/// The `off` feature declares no linker section (see `point::POINTS`): no user, empty tables.
#[cfg(feature = "off")]
pub(crate) static SIZES: [fn(&mut Sizes); 0] = [];

/// The sizes every user asked for. Link-time constants, asked again on each call: only cold
/// paths (a new shard, a report) ask.
pub(crate) fn sizes() -> Sizes {
    let mut s = Sizes::default();
    for fill in SIZES.iter() {
        fill(&mut s);
    }
    s
}

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
    /// Distribution of timed intervals.
    pub(crate) hist: [AtomicU64; hist::BUCKETS],
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
            hist: vec![0; hist::BUCKETS],
        }
    }
}

impl Counts {
    /// Every completed call.
    pub(crate) fn nr(&self) -> u64 {
        self.timed + self.nested + self.skipped
    }

    /// Adds `other` into `self`.
    pub(crate) fn add(&mut self, other: &Counts) {
        self.nested += other.nested;
        self.timed += other.timed;
        self.skipped += other.skipped;
        self.total += other.total;
        self.self_ticks = self.self_ticks.wrapping_add(other.self_ticks);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
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
            hist: self
                .hist
                .iter()
                .zip(&base.hist)
                .map(|(a, b)| a.saturating_sub(*b))
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
    fn new_boxed() -> Box<Slot> {
        // SAFETY: every field of `Slot` is an atomic integer or an array of them, for which
        // all-zero bytes are a valid value.
        let slot: Box<Slot> = unsafe { Box::new_zeroed().assume_init() };
        // Relaxed: the slot is not yet shared with any other thread.
        slot.min.store(u64::MAX, Ordering::Relaxed);
        slot
    }

    /// The same slot under loom, whose atomics are not plain integers (all-zero bytes are not
    /// one of them): built field by field.
    #[cfg(loom)]
    fn new_boxed() -> Box<Slot> {
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
            hist: std::array::from_fn(|_| z()),
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

    /// A copy of the slot: the scalar counters consistent with each other (retried while the
    /// owner is mid-update), then the distribution (read after them, so it may hold a few calls
    /// more than `timed`: percentiles use the distribution's own total).
    pub(crate) fn read(&self, into: &mut Counts) {
        let mut c = Counts::default();
        let s = self.read_scalars();
        c.nested = s.nested;
        c.timed = s.timed;
        c.skipped = s.skipped;
        c.total = s.total;
        c.self_ticks = s.self_ticks;
        c.min = s.min;
        c.max = s.max;
        for (d, s) in c.hist.iter_mut().zip(&self.hist) {
            // Relaxed: the distribution is read as a best-effort copy (see above).
            *d = s.load(Ordering::Relaxed);
        }
        into.add(&c);
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

/// The scalar counters of every point, each summed over every shard, into `out` (indexed by
/// point; resized to the number of points).
pub(crate) fn read_all_scalars(out: &mut Vec<Scalars>) {
    out.clear();
    out.resize(sizes().slots, Scalars::default());
    let shards = registry().all.clone();
    for s in shards {
        for (i, o) in out.iter_mut().enumerate() {
            if let Some(slot) = s.slot_for_read(i) {
                o.add(&slot.read_scalars());
            }
        }
    }
}

/// One thread's table of slots, indexed by point index.
///
/// Aligned like a slot: `child_acc` is written on every call, and two threads' shards must
/// not share a line (they are small and allocated one after another).
#[repr(align(128))]
pub(crate) struct Shard {
    slots: Box<[AtomicPtr<Slot>]>,
    /// `slots.len()` when the process reads the TSC, else 0 (see `slot`).
    fast_len: usize,
    /// Whether this process reads the TSC (a copy of the clock choice, next to the data the
    /// hot path already loads).
    pub(crate) tsc: bool,
    /// Time of nested points accumulated since the innermost active point started (ticks).
    /// Only the owning thread touches it.
    pub(crate) child_acc: AtomicU64,
    /// Clock ticks this thread spent in profpoint's first-use work (a new shard, a new slot):
    /// points read their clock minus this, so that work lies outside every open interval.
    /// Only the owning thread touches it.
    pub(crate) setup: AtomicU64,
    /// State of the xorshift generator for sampled timing.
    pub(crate) rng: AtomicU64,
    /// Tracepoint RCU: 0 outside a read section, else the grace-period epoch read when the
    /// outermost section began (see `tracepoint/rcu.rs`). Written by the owner, read by
    /// writers waiting for a grace period.
    pub(crate) rcu_epoch: AtomicU64,
    /// Read-section nesting depth (owner only).
    pub(crate) rcu_nest: AtomicU32,
    /// This thread's hits of each tracepoint, by tracepoint index ([`Sizes::hits`] of them).
    pub(crate) tp_hits: Box<[AtomicU64]>,
    /// The slot that points first used on this thread after the process's slot memory reached
    /// its cap share (null until then): their calls land here, not in a slot of their own,
    /// and the report counts them as not recorded (see [`slot_memory`]).
    overflow: AtomicPtr<Slot>,
}

impl Shard {
    pub(crate) fn new(sizes: Sizes, seed: u64) -> Shard {
        let tsc = crate::clock::uses_tsc();
        Shard {
            rcu_epoch: AtomicU64::new(0),
            rcu_nest: AtomicU32::new(0),
            tp_hits: (0..sizes.hits).map(|_| AtomicU64::new(0)).collect(),
            fast_len: if tsc { sizes.slots } else { 0 },
            slots: (0..sizes.slots)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            tsc,
            child_acc: AtomicU64::new(0),
            setup: AtomicU64::new(0),
            rng: AtomicU64::new(seed | 1),
            overflow: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The slot of point `index`, if this shard has one and serves the fast path (hot path).
    /// A shard of a process without an invariant TSC serves none (`fast_len` is 0): its calls
    /// take the general path, which reads the monotonic clock, and the fast path can read the
    /// TSC unconditionally.
    #[inline(always)]
    pub(crate) fn slot(&self, index: u32) -> Option<&Slot> {
        if index as usize >= self.fast_len {
            return None;
        }
        // `fast_len` is 0 or `slots.len()`, so the bounds check never fails; it is built into
        // the language, where `get_unchecked` is a call in unoptimised builds.
        let cell = &self.slots[index as usize];
        // Relaxed: only the owning thread (the caller) stores into its shard's cells; other
        // threads read them through `slot_for_read`, which acquires.
        let p = crate::owned::get_ptr(cell);
        // A cast and a compare, not `as_ref` (a call at opt-level 0).
        if p as usize == 0 {
            return None;
        }
        // SAFETY: a non-null pointer here came from `Box::into_raw` in `slot_or_new` and slots
        // are never freed (shards and their slots live for the rest of the process).
        Some(unsafe { &*p })
    }

    /// The slot of point `index`, allocating it on first use (cold path, owner only).
    /// `own`: one of profpoint's own hidden points (the overhead calibrations), which must
    /// measure real slots and are outside the cap (two points, on the threads that measure).
    #[cold]
    #[inline(never)]
    pub(crate) fn slot_or_new(&self, index: u32, own: bool) -> &Slot {
        let cell = &self.slots[index as usize];
        // Relaxed: only the owning thread stores into its shard's cells.
        let p = cell.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: see `slot`.
            return unsafe { &*p };
        }
        let p = if own || reserve_slot_bytes() {
            Box::into_raw(Slot::new_boxed())
        } else {
            // Over the cap: this point's calls on this thread share the overflow slot (the
            // hot path finds it in the cell as any slot, so they cost what they did; reports
            // skip it as a point and count its calls as not recorded).
            self.overflow_slot()
        };
        // Release: a reader that sees the pointer also sees the slot's initialised contents.
        cell.store(p, Ordering::Release);
        // SAFETY: just created from a live Box (or the overflow slot), never freed.
        unsafe { &*p }
    }

    /// The shard's overflow slot, made on first need (owner only; its bytes are beyond the
    /// cap, once per shard).
    #[cold]
    fn overflow_slot(&self) -> *mut Slot {
        // Relaxed: only the owning thread stores it.
        let p = self.overflow.load(Ordering::Relaxed);
        if !p.is_null() {
            return p;
        }
        let p = Box::into_raw(Slot::new_boxed());
        // Release: readers compare cells with it after acquiring a cell (see `slot_for_read`).
        self.overflow.store(p, Ordering::Release);
        p
    }

    /// The slot of point `index` for a reader on another thread (not the overflow slot,
    /// which belongs to no point).
    pub(crate) fn slot_for_read(&self, index: usize) -> Option<&Slot> {
        // Acquire: pairs with the Release in `slot_or_new`.
        let p = self.slots.get(index)?.load(Ordering::Acquire);
        // Acquire: the overflow pointer is stored before any cell holding it is published.
        if !p.is_null() && p == self.overflow.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: see `slot`.
        unsafe { p.as_ref() }
    }

    /// Calls that landed in the overflow slot (each call bumps one of its counters once).
    fn unrecorded_calls(&self) -> u64 {
        // Acquire: pairs with the Release in `overflow_slot`.
        // SAFETY: non-null overflow pointers come from `Box::into_raw` and are never freed.
        match unsafe { self.overflow.load(Ordering::Acquire).as_ref() } {
            Some(slot) => {
                let mut c = Counts::default();
                slot.read(&mut c);
                c.nr()
            }
            None => 0,
        }
    }

    /// The clock as this thread's points read it: raw ticks minus the thread's first-use work
    /// (hot path; owner only).
    #[inline(always)]
    pub(crate) fn now(&self, tsc: bool) -> u64 {
        // Relaxed: owner-only.
        crate::clock::now_with(tsc).wrapping_sub(crate::owned::get(&self.setup))
    }

    /// Next pseudo-random number (xorshift64), owner only.
    #[inline(always)]
    pub(crate) fn next_random(&self) -> u64 {
        // Relaxed: owner-only state.
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        x
    }
}

// The scalar counters a reader copies share the first cache line with the seqlock (loom's
// atomics are larger than a word: not in the model-checking build).
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Slot, depth) == 64);

/// How long a reader retries a slot whose owner keeps it mid-update before it accepts a torn
/// copy: longer than a scheduler time slice, so a preempted owner runs and finishes first.
const READ_PATIENCE: std::time::Duration = std::time::Duration::from_millis(50);

/// Every shard ever made (they are never freed) and the ones no thread holds.
struct Registry {
    all: Vec<&'static Shard>,
    free: Vec<&'static Shard>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    all: Vec::new(),
    free: Vec::new(),
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    // A panic while holding this lock cannot leave the vectors inconsistent (each operation is
    // a single push or pop), so a poisoned lock is still usable.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(unix)]
thread_local! {
    /// The registry lock, held by the forking thread across a `fork` (see `crate::fork`).
    static FORK_HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, Registry>>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(unix)]
/// Takes the registry lock before a `fork` (its holders only push and pop: always waited
/// for). A thread past its thread-local destructors forks without it.
pub(crate) fn fork_hold() {
    let mut g = Some(registry());
    let _ = FORK_HELD.try_with(|h| *h.borrow_mut() = g.take());
    drop(g);
}

#[cfg(unix)]
/// Releases the registry lock after a `fork`. In the child (`child`), first closes the
/// tracepoint read sections of every shard but this thread's: their threads were not copied.
pub(crate) fn fork_release(child: bool) {
    let held = FORK_HELD.try_with(|h| h.borrow_mut().take()).ok().flatten();
    if child && let Some(reg) = &held {
        let me = current().map(|s| s as *const Shard);
        for &s in reg.all.iter().filter(|&&s| Some(s as *const Shard) != me) {
            // Relaxed: the child has one thread; nothing else reads these now.
            s.rcu_nest.store(0, Ordering::Relaxed);
            s.rcu_epoch.store(0, Ordering::Relaxed);
        }
    }
    drop(held);
}

thread_local! {
    /// This thread's shard, or null before its first point call and after its exit.
    /// `const` and without `Drop`: access is a plain thread-pointer-relative load.
    static CURRENT: Cell<*const Shard> = const { Cell::new(std::ptr::null()) };
    /// Hands the shard back to the free list when the thread exits.
    static RELEASE: ReleaseOnExit = const { ReleaseOnExit };
}

struct ReleaseOnExit;

impl Drop for ReleaseOnExit {
    fn drop(&mut self) {
        let p = CURRENT.with(|c| c.replace(std::ptr::null()));
        // SAFETY: pointers in CURRENT come from `acquire`, which leaks `&'static Shard`s.
        if let Some(shard) = unsafe { p.as_ref() } {
            release(shard);
        }
    }
}

/// This thread's shard, if it has one (hot path).
#[inline(always)]
pub(crate) fn current() -> Option<&'static Shard> {
    let p = CURRENT.with(|c| c.get());
    // A cast and a compare, not `as_ref` (a call at opt-level 0).
    if p as usize == 0 {
        return None;
    }
    // SAFETY: non-null pointers in CURRENT come from `acquire` and point to leaked shards.
    Some(unsafe { &*p })
}

/// This thread's shard and its slot of point `index`, if both exist and serve the fast path
/// (hot path; `None` sends the caller to its cold path).
#[inline(always)]
pub(crate) fn fast_slot(index: u32) -> Option<(&'static Shard, &'static Slot)> {
    let shard = current()?;
    Some((shard, shard.slot(index)?))
}

/// How a call got its shard.
pub(crate) enum Lease {
    /// The thread's own shard, kept until the thread exits.
    Owned(&'static Shard),
    /// Borrowed for one call: the thread is past its thread-local destructors.
    Borrowed(&'static Shard),
}

/// Gives this thread a shard (cold path of the first point call on a thread).
#[cold]
#[inline(never)]
pub(crate) fn acquire() -> Lease {
    let shard = take();
    // Registering the destructor fails once the thread is tearing down its thread-locals.
    if RELEASE.try_with(|_| ()).is_ok() {
        CURRENT.with(|c| c.set(shard));
        Lease::Owned(shard)
    } else {
        Lease::Borrowed(shard)
    }
}

/// A shard from the free list, or a new one.
fn take() -> &'static Shard {
    let mut r = registry();
    if let Some(s) = r.free.pop() {
        return s;
    }
    let seed = crate::clock::now() ^ (r.all.len() as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let s: &'static Shard = Box::leak(Box::new(Shard::new(sizes(), seed)));
    r.all.push(s);
    s
}

/// Returns a shard to the free list. A point left marked active (a guard leaked with
/// `mem::forget`, a future never dropped) is unmarked, so it does not count every call of the
/// next thread to take the shard as recursion.
pub(crate) fn release(shard: &'static Shard) {
    for cell in shard.slots.iter() {
        // Acquire: pairs with the Release that published the slot (we may be another thread
        // than its creator when a borrowed shard is released; the owner has finished with it).
        // SAFETY: non-null slot pointers come from `slot_or_new` and are never freed.
        if let Some(slot) = unsafe { cell.load(Ordering::Acquire).as_ref() } {
            // Relaxed: the owner is done with the shard; the registry lock below publishes it.
            slot.depth.store(0, Ordering::Relaxed);
        }
    }
    registry().free.push(shard);
}

/// The default cap on slot memory, process-wide (`PROFPOINT_MAX_SLOT_MB`): 512 MiB is ~47,000
/// slots, e.g. 2,900 points used on each of 16 threads.
pub(crate) const DEFAULT_MAX_SLOT_MB: u64 = 512;

/// Bytes of slots allocated, every thread. (std's atomics, not `crate::sync`'s: a tally and a
/// limit no loom model is about, and a `static` needs a const constructor, which loom's lack.)
static SLOT_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// The cap on `SLOT_BYTES`.
static SLOT_CAP: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_MAX_SLOT_MB << 20);
/// The cap was reached (the warning is printed once).
static CAP_HIT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets the cap on slot memory, in MiB (from `PROFPOINT_MAX_SLOT_MB`, at start-up).
pub(crate) fn set_max_slot_mb(mb: u64) {
    // Relaxed: a limit read by each new slot; no data depends on it.
    SLOT_CAP.store(mb.saturating_mul(1 << 20), Ordering::Relaxed);
}

/// Books one more slot against the cap; false (and, the first time, one line on stderr) when
/// it would exceed it.
fn reserve_slot_bytes() -> bool {
    let size = std::mem::size_of::<Slot>() as u64;
    // Relaxed (all three): a tally and a limit; a race may let two slots past the last
    // whole one, never more than one per thread.
    let cap = SLOT_CAP.load(Ordering::Relaxed);
    if SLOT_BYTES.fetch_add(size, Ordering::Relaxed) + size <= cap {
        return true;
    }
    SLOT_BYTES.fetch_sub(size, Ordering::Relaxed);
    if !CAP_HIT.swap(true, Ordering::Relaxed) {
        eprintln!(
            "profpoint: per-thread point slots reached the {} MiB cap (PROFPOINT_MAX_SLOT_MB; \
             {} slots of {size} bytes): calls of points first used on a thread from now on are \
             counted but not recorded per point (the report says how many)",
            cap >> 20,
            cap / size
        );
    }
    false
}

/// Slot memory now.
pub(crate) fn slot_memory() -> profpoint_report::SlotMemory {
    let shards = registry().all.clone();
    profpoint_report::SlotMemory {
        // Relaxed (three): tallies for a report.
        bytes: SLOT_BYTES.load(Ordering::Relaxed),
        cap_bytes: SLOT_CAP.load(Ordering::Relaxed),
        cap_reached: CAP_HIT.load(Ordering::Relaxed),
        unrecorded_calls: shards.iter().map(|s| s.unrecorded_calls()).sum(),
    }
}

/// Sums the counts of point `index` over every shard.
pub(crate) fn read_point(index: usize) -> Counts {
    let shards = registry().all.clone();
    let mut sum = Counts::default();
    for s in shards {
        if let Some(slot) = s.slot_for_read(index) {
            slot.read(&mut sum);
        }
    }
    sum
}

/// First-use work so far, every thread: ticks and calls (the report's `setup`).
/// (std's atomics in every build: tallies, in no model.)
static SETUP_TICKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static SETUP_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Adds one call's first-use work: to this thread's clock offset (`Shard::setup`), so that it
/// lies outside every interval open on the thread, and to the process's tally (cold path).
pub(crate) fn add_setup(shard: &Shard, ticks: u64) {
    bump(&shard.setup, ticks);
    // Relaxed: tallies read at report time; no other memory depends on them.
    SETUP_TICKS.fetch_add(ticks, Ordering::Relaxed);
    SETUP_CALLS.fetch_add(1, Ordering::Relaxed);
}

/// Ticks of first-use work so far.
pub(crate) fn setup_ticks() -> u64 {
    // Relaxed: a tally (see `add_setup`).
    SETUP_TICKS.load(Ordering::Relaxed)
}

/// Calls that did first-use work so far.
pub(crate) fn setup_calls() -> u64 {
    // Relaxed: a tally (see `add_setup`).
    SETUP_CALLS.load(Ordering::Relaxed)
}

/// Every shard made so far.
pub(crate) fn all_shards() -> Vec<&'static Shard> {
    registry().all.clone()
}

/// Number of shards made so far (bounded by the peak number of concurrent threads).
pub(crate) fn shard_count() -> usize {
    registry().all.len()
}

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
        b.hist[1] = 3;
        a.add(&b);
        a.add(&b);
        assert_eq!(
            (a.nr(), a.total, a.min, a.max, a.hist[1]),
            (6, 60, 5, 15, 6)
        );
        let d = a.since(&b);
        assert_eq!((d.nr(), d.total, d.hist[1]), (3, 30, 3));
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
    /// The memory figures ARCHITECTURE.md states.
    #[test]
    fn memory_per_point_and_thread_is_as_documented() {
        assert_eq!(std::mem::size_of::<super::Slot>(), 11_392);
        assert_eq!(std::mem::size_of::<super::Shard>(), 128);
        assert_eq!(std::mem::align_of::<super::Shard>(), 128);
    }
}

/// Model checking of the seqlock (`RUSTFLAGS="--cfg loom"`, docs/loom.md).
///
/// Real code: `Slot::new_boxed`, `write_begin`, `bump`, `write_end` and `read`, with loom's
/// atomics and fences (`crate::sync`). Stand-in: the writer's update is the model's own
/// sequence of `bump`s between `write_begin` and `write_end`, the shape of `point.rs`'s leave
/// (which needs the thread-locals and the clock); `owned.rs`'s debug-build x86_64 assembly is
/// replaced by its release-build code (the std atomics loom can see).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    /// A reader copying a slot twice while its owner makes two updates of `timed` and `total`
    /// together (10 ticks a call): every copy has `total == 10 * timed` (no torn pair), the
    /// second is never older than the first, and the final copy has both updates.
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
                assert_eq!(first.total, 10 * first.timed, "{}", torn(&first));
                let mut second = Counts::default();
                r.read(&mut second);
                assert_eq!(second.total, 10 * second.timed, "{}", torn(&second));
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
                slot.write_end();
            }
            reader.join().unwrap();
            let mut last = Counts::default();
            slot.read(&mut last);
            assert_eq!((last.timed, last.total), (2, 20), "after the reader ended");
        });
        let seen = seen.lock().unwrap();
        assert_eq!(*seen, BTreeSet::from([0, 1, 2]), "schedules explored");
    }
}
