//! Per-thread shards: where the counters of every point live.
//!
//! # Concept
//! The design card says "per-CPU counters". What it wants is that no two threads running at the
//! same time ever write the same cache line, and that the hot path takes no lock and no atomic
//! read-modify-write. A per-CPU slot needs one or the other: the CPU id is cheap to read (the
//! rseq area, ~0.2 ns on a 2 vCPU Xeon guest), but a thread can migrate between reading it
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
//! - The shard's allocation goes on past it with a count table, one word per point: a
//!   counted-only call adds one to its point's word at a fixed offset from the thread's word
//!   (`count_call`), with no slot; reports add the table to the slots' counts.
//! - A thread gets a shard on its first call of any point, from a free list or newly allocated,
//!   and keeps it in a thread-local word ([`word`]: on x86_64 glibc a TLS variable of our own,
//!   one `fs:`-relative load in an executable, with no register saved around it).
//! - When the thread exits, a thread-local destructor hands the shard back to the free list.
//!   The shard keeps its counts; the next thread to take it adds to them. Reports sum every
//!   shard ever made, so counts of exited threads are never lost, and the number of shards is
//!   bounded by the largest number of threads that used points *at the same time*: a thread
//!   pool that churns does not grow memory.
//! - A call made after the thread's destructors ran (another thread-local's destructor calling
//!   a profiled function) borrows a shard for the duration of that call only.
//! - Each slot is a seqlock, written by its thread alone and read by reports (`slot.rs`).
//! - The shard is the thread context below everything: it imports neither the points nor the
//!   tracepoints whose state it holds. Its two tables are as long as its users say through
//!   [`SIZES`], a linker-gathered list (the points fill in their number, the tracepoints
//!   theirs).
//!
//! # Extending
//! A new per-point counter is a field of [`Slot`] (`slot.rs`); a new per-thread word of
//! profpoint's own is a field of [`Shard`].

use crate::slot::{Counts, Scalars, Slot, bump};
// The read sections' words come from `crate::sync`: std's, or loom's in the model-checking
// build (`tracepoint/rcu.rs`'s models). The 32-bit owner-only word `rcu_nest` is std's in
// every build: no model needs it.
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
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
        for (o, c) in out.iter_mut().zip(s.counts()) {
            // Relaxed: a count only grows; a reader sees it now or a little later.
            o.skipped += c.load(Ordering::Relaxed);
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
    /// The point active on this thread, for the sampler to attribute samples by (its address
    /// is `'static`, and [`acquire`] hands it to the sampler as the thread's tag): 0 = no point active, else the innermost active
    /// point's dense index (its place in `point::all()`) + 1. Written by the owner at each
    /// enter and leave of a point in the tree (`tree.rs`), read by anyone.
    pub(crate) active_point: AtomicU32,
    /// The points tree's current node on this thread (0: the root). Owner only.
    pub(crate) node: AtomicU32,
    /// The points tree's nodes (null until the first; `nodes.rs`). Never freed.
    pub(crate) nodes: AtomicPtr<nodes::Node>,
    /// The rest of the points tree (length, lookup map, lost calls).
    pub(crate) tree: Box<nodes::Tree>,
    /// This shard's own allocation, which goes on past the shard with its count table
    /// (`counts_len` words, see [`count_call`]); null for a shard made without one (a model's).
    /// Set before the shard is published, never changed. std's in every build: no model
    /// reads it.
    base: std::sync::atomic::AtomicPtr<Shard>,
    /// Entries of the count table: one per point, or 0 without a table.
    counts_len: usize,
    /// This thread's allocation counters, one row per point and row 0 (`alloc.rs`): null
    /// until the counting allocator's first call on the shard. Written by the owner, read by
    /// reports.
    #[cfg(not(loom))]
    pub(crate) alloc_rows: std::sync::atomic::AtomicPtr<crate::alloc::Row>,
}

impl Shard {
    pub(crate) fn new(sizes: Sizes, seed: u64) -> Shard {
        let tsc = crate::clock::uses_tsc();
        Shard {
            rcu_epoch: AtomicU64::new(0),
            rcu_nest: AtomicU32::new(0),
            tp_hits: (0..sizes.hits).map(|_| AtomicU64::new(0)).collect(),
            slots: (0..sizes.slots)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            tsc,
            child_acc: AtomicU64::new(0),
            setup: AtomicU64::new(0),
            rng: AtomicU64::new(seed | 1),
            overflow: AtomicPtr::new(std::ptr::null_mut()),
            active_point: AtomicU32::new(0),
            node: AtomicU32::new(0),
            nodes: AtomicPtr::new(std::ptr::null_mut()),
            tree: Box::new(nodes::Tree::new()),
            base: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            counts_len: 0,
            #[cfg(not(loom))]
            alloc_rows: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// A shard with its count table (one word per point, zero) after it, in one allocation
    /// that is never freed. In the model-checking build the table is empty: loom's atomics are
    /// not plain words, and no model counts a call.
    fn allocate(sizes: Sizes, seed: u64) -> &'static Shard {
        let len = if cfg!(loom) { 0 } else { sizes.slots };
        let table = std::alloc::Layout::array::<AtomicU64>(len)
            .expect("profpoint: the count table's size overflows");
        let (layout, at) = std::alloc::Layout::new::<Shard>()
            .extend(table)
            .expect("profpoint: the shard's size overflows");
        // The table starts right after the shard: its size is a multiple of its alignment,
        // which is above a word's. `count_call` relies on it.
        assert_eq!(at, std::mem::size_of::<Shard>());
        // SAFETY: the layout is not zero-sized (it holds a `Shard`).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Shard>();
        if raw.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut shard = Shard::new(sizes, seed);
        shard.base = std::sync::atomic::AtomicPtr::new(raw);
        shard.counts_len = len;
        // SAFETY: `raw` is non-null, aligned for a `Shard` (the layout's alignment is at least
        // its own) and valid for writes of one; the `len` words after it are zero bytes,
        // which is a valid `AtomicU64` (it has `u64`'s layout). Never freed: `'static`.
        unsafe {
            raw.write(shard);
            &*raw
        }
    }

    /// The pointer the thread's word holds for this shard: its allocation's own, through
    /// which `count_call` reaches the table past the shard (a pointer made from a `&Shard`
    /// covers the shard alone).
    fn word_pointer(&self) -> *const Shard {
        // Relaxed: set before the shard was published (through the registry's lock).
        let base = self.base.load(Ordering::Relaxed);
        if base.is_null() { self } else { base }
    }

    /// This shard's counts of counted-only calls, by point index (empty without a table).
    /// Read by reporters on any thread; only the owner adds.
    pub(crate) fn counts(&self) -> &[AtomicU64] {
        // Relaxed: see `word_pointer`.
        let base = self.base.load(Ordering::Relaxed);
        if base.is_null() {
            return &[];
        }
        // SAFETY: `base` is this shard's allocation (`allocate`), which holds `counts_len`
        // initialised words right after the shard, and is never freed.
        unsafe { std::slice::from_raw_parts(base.add(1).cast::<AtomicU64>(), self.counts_len) }
    }

    /// The number of points this shard has a slot cell for (every point of the program): the
    /// counting allocator's table has one row more (hot path: a load, no call).
    #[cfg(not(loom))]
    #[inline(always)]
    pub(crate) fn points(&self) -> usize {
        self.slots.len()
    }

    /// The slot of point `index`, if this shard has one and serves the fast path (hot path).
    /// A shard of a process without an invariant TSC serves none (`tsc` is false): its calls
    /// take the general path, which reads the monotonic clock, and the fast path can read the
    /// TSC unconditionally.
    #[inline(always)]
    pub(crate) fn slot(&self, index: u32) -> Option<&Slot> {
        if !self.tsc || index as usize >= self.slots.len() {
            return None;
        }
        // The test above is the bounds check, so the optimiser drops the indexing's own (and
        // with it a panic path that made the counted-only path save registers); indexing is
        // built into the language, where `get_unchecked` is a call in unoptimised builds.
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

    /// Whether `slot` is this shard's overflow slot (owner only).
    pub(crate) fn is_overflow(&self, slot: &Slot) -> bool {
        // Relaxed: only the owner stores it, and this is the owner.
        std::ptr::eq(self.overflow.load(Ordering::Relaxed), slot)
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
    /// The registry lock, held by the forking thread across a `fork` (see `crate::runtime::fork`).
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
    /// Hands the shard back to the free list when the thread exits.
    static RELEASE: ReleaseOnExit = const { ReleaseOnExit };
}

/// The points tree's storage, held here (one tree per shard); `crate::tree` works on it.
pub(crate) mod nodes;

/// This thread's shard pointer, read on every point call: a TLS variable of our own read
/// through a TLS descriptor on x86_64 glibc (`word_tlsdesc.rs`, which says why), a `const`
/// thread-local elsewhere (`word_local.rs`).
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
#[path = "word_tlsdesc.rs"]
mod word;
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
#[path = "word_local.rs"]
mod word;

struct ReleaseOnExit;

impl Drop for ReleaseOnExit {
    fn drop(&mut self) {
        let p = word::get();
        word::set(std::ptr::null());
        // SAFETY: pointers in the word come from `acquire`, which leaks `&'static Shard`s.
        if let Some(shard) = unsafe { p.as_ref() } {
            // The word goes to the next thread that takes the shard: withdraw it from this
            // thread's tid first (the kernel may give the tid to a thread with no shard).
            #[cfg(feature = "heatmap")]
            heatmap::stacks::set_thread_tag(None);
            release(shard);
        }
    }
}

/// This thread's shard, if it has one (hot path).
#[inline(always)]
pub(crate) fn current() -> Option<&'static Shard> {
    let p = word::get();
    // A cast and a compare, not `as_ref` (a call at opt-level 0).
    if p as usize == 0 {
        return None;
    }
    // SAFETY: non-null pointers in the word come from `acquire` and point to leaked shards.
    Some(unsafe { &*p })
}

/// Counts one counted-only call of point `index` on this thread, in its shard's count table,
/// and returns the shard; `None` (nothing counted) without a shard or a table entry, which
/// sends the caller to its cold path. The table sits at a fixed offset from the shard the
/// thread's word points to, so the call is the word's load and one `add` to memory: no
/// slot, no slot table (the slot's counters are the report's, which adds the table to them).
#[inline(always)]
pub(crate) fn count_call(index: u32) -> Option<&'static Shard> {
    let p = word::get();
    // A cast and a compare, not `as_ref` (see `current`).
    if p as usize == 0 {
        return None;
    }
    // SAFETY: see `current`.
    let shard = unsafe { &*p };
    if index as usize >= shard.counts_len {
        return None;
    }
    // SAFETY: the word holds the shard's `word_pointer` (`acquire`): its allocation's own
    // pointer, with `counts_len` words right after the shard (`allocate`), and `index` is
    // below that. Only this thread adds to its shard's table.
    let cell = unsafe { &*p.add(1).cast::<AtomicU64>().add(index as usize) };
    crate::owned::add(cell, 1);
    Some(shard)
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
        word::set(shard.word_pointer());
        // The sampler tags this thread's samples with its active point, so that an annotated
        // function that LLVM inlined still gets its frame after the run (`report/attribute.rs`).
        // Once per thread (a tid-keyed table, no thread-local); a borrowed shard is for one
        // call during the thread's teardown and is not registered.
        #[cfg(feature = "heatmap")]
        heatmap::stacks::set_thread_tag(Some(&shard.active_point));
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
    let s = Shard::allocate(sizes(), seed);
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
    // The points tree starts at its root for the next thread (a call left open here is not
    // its parent). Relaxed: as above.
    shard.node.store(0, Ordering::Relaxed);
    shard.active_point.store(0, Ordering::Relaxed);
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
        crate::diag::warn_line!(
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
    let mut slots = profpoint_report::SlotMemory::default();
    // Relaxed (three): tallies for a report.
    slots.bytes = SLOT_BYTES.load(Ordering::Relaxed);
    slots.cap_bytes = SLOT_CAP.load(Ordering::Relaxed);
    slots.cap_reached = CAP_HIT.load(Ordering::Relaxed);
    slots.unrecorded_calls = shards.iter().map(|s| s.unrecorded_calls()).sum();
    slots
}

/// Adds the counts of point `index` on shard `s` (its slot's, and its count table's word as
/// calls counted only) to `sum`.
fn add_point_counts(s: &Shard, index: usize, sum: &mut Counts) {
    if let Some(slot) = s.slot_for_read(index) {
        slot.read(sum);
    }
    if let Some(c) = s.counts().get(index) {
        // Relaxed: see `read_all_scalars`.
        sum.skipped += c.load(Ordering::Relaxed);
    }
}

/// Sums the counts of point `index` over every shard.
pub(crate) fn read_point(index: usize) -> Counts {
    let shards = registry().all.clone();
    let mut sum = Counts::default();
    for s in shards {
        add_point_counts(s, index, &mut sum);
    }
    sum
}

/// The counts of each of the first `n` points, summed over every shard (the shard list taken
/// once, not once a point).
pub(crate) fn read_points(n: usize) -> Vec<Counts> {
    let shards = registry().all.clone();
    (0..n)
        .map(|index| {
            let mut sum = Counts::default();
            for s in &shards {
                add_point_counts(s, index, &mut sum);
            }
            sum
        })
        .collect()
}

/// How many shards hold a call of each of the first `n` points. A shard is one thread's at a
/// time, so a sync point's calls on it never overlap: its time there is at most the wall time
/// (the report's bound on an estimated total, per point rather than per process, where the
/// budget's own thread and every other thread would loosen it).
pub(crate) fn shards_per_point(n: usize) -> Vec<usize> {
    let shards = registry().all.clone();
    let mut out = vec![0; n];
    for s in shards {
        for (i, o) in out.iter_mut().enumerate() {
            // Relaxed: whether any call landed; a call being recorded now may be missed, and
            // its shard is then not counted (its call not in the figures either, or a later
            // one is, on a shard already counted for the earlier calls).
            let in_slot = s.slot_for_read(i).is_some_and(|slot| {
                slot.timed.load(Ordering::Relaxed) > 0
                    || slot.nested.load(Ordering::Relaxed) > 0
                    || slot.skipped.load(Ordering::Relaxed) > 0
            });
            let counted = s
                .counts()
                .get(i)
                .is_some_and(|c| c.load(Ordering::Relaxed) > 0);
            if in_slot || counted {
                *o += 1;
            }
        }
    }
    out
}

/// The calls of each of `indices` per shard (a thread's, or an exited thread's kept): one
/// `(shard, calls)` row per shard, the shard by its address, the calls in `indices`' order
/// (the budget's count windows: how much counting slowed each thread). Reuses `out`'s rows.
pub(crate) fn read_points_by_shard(indices: &[usize], out: &mut Vec<(usize, Vec<u64>)>) {
    let shards = registry().all.clone();
    out.resize_with(shards.len(), Default::default);
    for (s, (key, calls)) in shards.iter().zip(out.iter_mut()) {
        *key = std::ptr::from_ref::<Shard>(s) as usize;
        calls.clear();
        calls.extend(indices.iter().map(|&index| {
            let mut c = Counts::default();
            add_point_counts(s, index, &mut c);
            c.nr()
        }));
    }
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

/// Calls `f` with every shard made so far, under the registry's lock (for readers that must
/// not allocate: `f` only reads).
#[cfg(not(loom))]
pub(crate) fn for_each_shard(mut f: impl FnMut(&'static Shard)) {
    for &s in registry().all.iter() {
        f(s);
    }
}

/// Number of shards made so far (bounded by the peak number of concurrent threads).
pub(crate) fn shard_count() -> usize {
    registry().all.len()
}

#[cfg(all(test, not(loom)))]
mod size_tests {
    /// The memory figures docs/profile-points.md states.
    #[test]
    fn memory_per_point_and_thread_is_as_documented() {
        assert_eq!(std::mem::size_of::<super::Shard>(), 128);
        assert_eq!(std::mem::align_of::<super::Shard>(), 128);
    }
}

#[cfg(test)]
mod word_tests {
    use super::{Shard, word};

    /// The word is per thread (whichever way it is read: the TLS descriptor on x86_64 glibc):
    /// a new thread starts with null, reads back what it stores, and never sees another
    /// thread's value. The threads call no point, so the made-up pointers are never followed.
    #[test]
    fn each_thread_has_its_own_word() {
        let values: Vec<usize> = (1..=8).map(|i| i * 0x1000).collect();
        let barrier = std::sync::Barrier::new(values.len());
        std::thread::scope(|s| {
            for &v in &values {
                let barrier = &barrier;
                s.spawn(move || {
                    assert!(word::get().is_null(), "a new thread's word is null");
                    word::set(v as *const Shard);
                    // Every thread has stored its own before any reads it back.
                    barrier.wait();
                    for _ in 0..1000 {
                        assert_eq!(word::get() as usize, v);
                    }
                    word::set(std::ptr::null());
                    assert!(word::get().is_null());
                });
            }
        });
    }
}
