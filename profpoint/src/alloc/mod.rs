//! Memory per point: a counting wrapper around the program's global allocator.
//!
//! # Concept
//! A program that installs [`Counting`] as its `#[global_allocator]` gets, per profile point,
//! the allocations and frees made while the point was the innermost active one on the thread
//! (its self figures), and the bytes still held by the blocks it made, wherever they are
//! freed. A program that does not install it pays nothing: nothing here runs, and its reports
//! say nothing of memory.
//!
//! # Mechanism
//! - **Where a call is counted.** The allocator reads the thread's shard pointer (the same TLS
//!   word the points read: a plain TLS word with no destructor, safe before `main` and during
//!   thread-local teardown) and, through it, the point active on the thread
//!   (`Shard::active_point`, the word the sampler reads). Each shard has a table of `Row`s,
//!   one per point plus row 0 for "outside any point", made on the shard's first allocation
//!   from the wrapped allocator itself (never through the global allocator, so never
//!   recursively). Only the owning thread writes its rows, with plain adds (no atomic
//!   read-modify-write); reports sum every shard's rows.
//! - **Threads without a shard** (a thread that never called a point, a thread after its
//!   thread-local destructors ran, an allocation made while its shard is being made) count
//!   into row 0 of a static table striped 16 ways by stack address, with relaxed atomic adds,
//!   and the frees of point-made blocks they do into a process-wide table of atomic rows.
//! - **A header per block** says which point made it: the wrapper asks the wrapped allocator
//!   for `max(8, align)` more bytes, returns the block past them (so the user's pointer keeps
//!   its alignment) and keeps the making point's index in the 8 bytes just before the user's
//!   pointer. A free reads it and takes the block's bytes off that point's held bytes, on the
//!   freeing thread's row of that point; `realloc` keeps the block's point (its header moves
//!   with the data) and moves its held bytes by the change of size.
//! - **Counting rules.** `alloc` and `alloc_zeroed`: one allocation of the layout's size.
//!   `dealloc`: one free of that size. `realloc`: one allocation of the new size and one free
//!   of the old (as the default `realloc`, which allocates, copies and frees, would count), and
//!   one `realloc`. A null from the wrapped allocator is passed through and counts nothing.
//!   A point disabled, counted-only or past the tree's capacity is not active: its
//!   allocations go to the point around it (or row 0).
//! - **The calls** (`global.rs`): the `GlobalAlloc` methods, the header in front of each block.
//! - **Reading** (`read.rs`): reports sum every shard's table, the stripes and the shardless
//!   table (under the shard registry's lock, allocating nothing for the one-row readers).
//!
//! # Extending
//! A new per-point figure is a word of `Row` (there is one spare), added on the path that
//! changes it and summed in `read.rs`.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

mod global;
mod read;
pub(crate) use read::{Sum, read_since_reset, reset};
pub use read::{installed, outside_stats, own_memory, point_stats};

/// A global allocator that counts every allocation and free per profile point, around any
/// other global allocator (`System`, mimalloc, jemalloc).
///
/// ```
/// use std::alloc::System;
///
/// #[global_allocator]
/// static ALLOC: profpoint::Alloc<System> = profpoint::Alloc::new(System);
///
/// #[profpoint::profile_point]
/// fn build() -> Vec<u64> {
///     (0..100).collect()
/// }
///
/// fn main() {
///     let v = build();
///     let r = profpoint::snapshot();
///     let p = r.points.iter().find(|p| p.name.ends_with("build")).unwrap();
///     let a = p.alloc.as_ref().expect("the wrapper is installed");
///     assert!(a.allocs >= 1 && a.held_bytes >= 800);
///     drop(v);
/// }
/// ```
///
/// Each block carries a header of `max(8, align)` bytes (the point that made it), so that its
/// free is charged to that point wherever it happens. The wrapper allocates nothing through
/// the global allocator: its per-thread tables come from the wrapped allocator.
#[derive(Debug)]
pub struct Counting<A> {
    inner: A,
}

impl<A> Counting<A> {
    /// Wraps `inner` (usable in a `static`).
    pub const fn new(inner: A) -> Counting<A> {
        Counting { inner }
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

/// Bytes of the header: the making point's index + 1 (0: outside any point), with a mark in
/// its upper half.
pub const HEADER_BYTES: usize = 8;

/// The upper half of every header word (for a reader of a core dump: nothing checks it, as an
/// allocator may not panic).
const MAGIC: u64 = 0x5050_414c << 32;

/// The row of the point that made a block, from its header (a row beyond the table, which
/// only a corrupted header could name, is taken as row 0 by the callers).
#[inline(always)]
fn owner_of(header: u64) -> usize {
    (header & 0xffff_ffff) as usize
}

/// One point's allocation counters on one shard (or in the fallback tables): one cache line.
#[repr(C, align(64))]
#[derive(Default)]
pub(crate) struct Row {
    /// Allocations made while the point was the innermost active one (reallocs included).
    allocs: AtomicU64,
    /// Their bytes.
    alloc_bytes: AtomicU64,
    /// Frees made while the point was the innermost active one (reallocs included).
    frees: AtomicU64,
    /// Their bytes.
    freed_bytes: AtomicU64,
    /// Reallocations (each also one allocation and one free above).
    reallocs: AtomicU64,
    /// Bytes released from this point's blocks (freed anywhere, or shrunk by a realloc; a
    /// growth counts below zero), two's complement, plus the new sizes of the reallocations
    /// made here (which `alloc_bytes` counts but which made no block of this point): what the
    /// point holds is the sum over every row of `alloc_bytes` less this, so that a new block
    /// costs two adds.
    released_bytes: AtomicU64,
    /// The same for blocks: this point's blocks freed, plus the reallocations made here.
    released_blocks: AtomicU64,
    _spare: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Row>() == 64);

/// A row of zeroes, for the static tables.
#[allow(clippy::declare_interior_mutable_const)]
const ZERO_ROW: Row = Row {
    allocs: AtomicU64::new(0),
    alloc_bytes: AtomicU64::new(0),
    frees: AtomicU64::new(0),
    freed_bytes: AtomicU64::new(0),
    reallocs: AtomicU64::new(0),
    released_bytes: AtomicU64::new(0),
    released_blocks: AtomicU64::new(0),
    _spare: AtomicU64::new(0),
};

/// Stripes of the shardless row 0.
const STRIPES: usize = 16;

/// Row 0 ("outside any point") of threads without a shard, striped by stack address so that
/// such threads rarely share a line.
static OUTSIDE: [Row; STRIPES] = [ZERO_ROW; STRIPES];

/// Frees by threads without a shard of blocks a point made: one row per point + 1, made on
/// first need from the wrapped allocator (only `held_*` are used).
static SHARDLESS: AtomicPtr<Row> = AtomicPtr::new(std::ptr::null_mut());

/// Bytes of point-made blocks freed by threads without a shard that found no row to go to (the
/// wrapped allocator refused the shardless table): taken off row 0's held bytes instead.
static LOST_FREES: AtomicU64 = AtomicU64::new(0);

/// The wrapper's own tables (one per shard, and the shardless one), from the wrapped
/// allocator: how many, and their bytes.
static TABLES: AtomicU64 = AtomicU64::new(0);
static TABLE_BYTES: AtomicU64 = AtomicU64::new(0);

/// Books one table made.
#[cold]
fn count_table() {
    // Relaxed: tallies.
    TABLES.fetch_add(1, Ordering::Relaxed);
    TABLE_BYTES.fetch_add(
        table_layout().map_or(0, |l| l.size() as u64),
        Ordering::Relaxed,
    );
}

/// Whether the wrapper has counted anything: the report's memory columns appear only then.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The rows a table holds: one per point, and row 0.
fn table_len() -> usize {
    crate::point::all().len() + 1
}

/// A table's layout (`None` only past `isize::MAX` bytes: the wrapper then counts as on a
/// thread without a shard; nothing here may panic).
fn table_layout() -> Option<Layout> {
    Layout::array::<Row>(table_len()).ok()
}

/// Where the user's block starts past the wrapped allocator's, and the layout asked of it.
#[inline(always)]
fn outer(layout: Layout) -> Option<(usize, Layout)> {
    let off = layout.align().max(HEADER_BYTES);
    // `Layout`'s own bound: the size rounded up to the alignment fits in an `isize`.
    if layout.size() > isize::MAX as usize - 2 * off {
        return None;
    }
    // SAFETY: `off` is a power of two (the larger of two), and the size rounded up to it is at
    // most `layout.size() + 2 * off - 1 <= isize::MAX` (checked just above).
    Some((off, unsafe {
        Layout::from_size_align_unchecked(layout.size() + off, off)
    }))
}

/// Owner-only add (a plain `add` to memory; see `owned.rs`).
#[inline(always)]
fn bump(c: &AtomicU64, d: u64) {
    crate::owned::add(c, d);
}

/// Shared add (threads without a shard).
#[inline(always)]
fn bump_shared(c: &AtomicU64, d: u64) {
    // Relaxed: a tally; readers sum it with the rest.
    c.fetch_add(d, Ordering::Relaxed);
}

/// This thread's stripe of [`OUTSIDE`].
#[inline(always)]
fn stripe() -> &'static Row {
    let here = 0u8;
    let a = std::ptr::addr_of!(here) as usize >> 21;
    &OUTSIDE[(a.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) % STRIPES]
}

#[cold]
fn mark_installed() {
    // Relaxed: a flag read by reports; nothing else depends on it.
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

/// How a call finds its rows: the thread's table and its active point, or none (shardless).
enum Rows {
    Own(&'static [Row], usize),
    Shardless,
}

impl<A: GlobalAlloc> Counting<A> {
    /// This thread's rows and the row of its active point.
    #[inline(always)]
    fn rows(&self) -> Rows {
        let Some(shard) = crate::shard::current() else {
            return Rows::Shardless;
        };
        let mut p = crate::owned::get_ptr(&shard.alloc_rows);
        if p.is_null() {
            p = self.new_rows(shard);
            if p.is_null() {
                return Rows::Shardless;
            }
        }
        // The shard's own count of points, not `table_len()` (a call into this crate from the
        // user's instance of the wrapper): the same number, one load.
        let len = shard.points() + 1;
        // SAFETY: a non-null table pointer came from `new_rows`: `table_len()` zeroed rows
        // from the wrapped allocator, never freed, and `table_len()` is `len` (every shard
        // has a cell per point).
        let rows = unsafe { std::slice::from_raw_parts(p, len) };
        let active = crate::owned::get32(&shard.active_point) as usize;
        Rows::Own(rows, if active < len { active } else { 0 })
    }

    /// The shard's table, made on its first allocation (cold: once per shard; owner only).
    #[cold]
    #[inline(never)]
    fn new_rows(&self, shard: &crate::shard::Shard) -> *mut Row {
        mark_installed();
        // The hot path reads the table's length from the shard: the two must agree (they do:
        // a shard has a cell per point), or the shard gets no table.
        let Some(layout) = table_layout().filter(|_| shard.points() + 1 == table_len()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the layout is not zero-sized (it holds row 0); all-zero bytes are a valid
        // `Row` (atomic integers).
        let p = unsafe { self.inner.alloc_zeroed(layout) }.cast::<Row>();
        if !p.is_null() {
            count_table();
        }
        // Release: a reader that sees the pointer sees zeroed rows.
        shard.alloc_rows.store(p, Ordering::Release);
        p
    }

    /// The shardless table of held bytes per point (made on first need), or null.
    #[cold]
    fn shardless(&self) -> *mut Row {
        // Acquire: pairs with the Release below.
        let p = SHARDLESS.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        let Some(layout) = table_layout() else {
            return std::ptr::null_mut();
        };
        // SAFETY: as in `new_rows`.
        let new = unsafe { self.inner.alloc_zeroed(layout) }.cast::<Row>();
        if new.is_null() {
            return new;
        }
        // Release: the zeroed rows before the pointer; Acquire: the winner's rows.
        match SHARDLESS.compare_exchange(
            std::ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                count_table();
                new
            }
            Err(won) => {
                // SAFETY: `new` came from `alloc_zeroed` with this layout and nobody saw it.
                unsafe { self.inner.dealloc(new.cast(), layout) };
                won
            }
        }
    }

    /// Counts an allocation of `size` bytes; returns the header word of the new block.
    #[inline(always)]
    fn charge_alloc(&self, size: usize) -> u64 {
        let size = size as u64;
        match self.rows() {
            Rows::Own(rows, a) => {
                let r = &rows[a];
                bump(&r.allocs, 1);
                bump(&r.alloc_bytes, size);
                MAGIC | a as u64
            }
            Rows::Shardless => {
                // Relaxed: see `mark_installed`.
                if !INSTALLED.load(Ordering::Relaxed) {
                    mark_installed();
                }
                let r = stripe();
                bump_shared(&r.allocs, 1);
                bump_shared(&r.alloc_bytes, size);
                MAGIC
            }
        }
    }

    /// Counts a free of `size` bytes of a block whose header is `header`.
    #[inline(always)]
    fn charge_free(&self, header: u64, size: usize) {
        let size = size as u64;
        let owner = owner_of(header);
        match self.rows() {
            Rows::Own(rows, a) => {
                let r = &rows[a];
                bump(&r.frees, 1);
                bump(&r.freed_bytes, size);
                let o = rows.get(owner).unwrap_or(&rows[0]);
                bump(&o.released_bytes, size);
                bump(&o.released_blocks, 1);
            }
            Rows::Shardless => {
                let r = stripe();
                bump_shared(&r.frees, 1);
                bump_shared(&r.freed_bytes, size);
                self.shardless_release(owner, size, 1);
            }
        }
    }

    /// Takes `bytes` and `blocks` off point `owner`'s held figures from a shardless thread
    /// (adds them to its released ones).
    #[inline(always)]
    fn shardless_release(&self, owner: usize, bytes: u64, blocks: u64) {
        let o = if owner == 0 {
            stripe()
        } else {
            let t = self.shardless();
            if t.is_null() {
                bump_shared(&LOST_FREES, bytes);
                return;
            }
            // SAFETY: `t` holds `table_len()` rows (`shardless`), never freed; an owner
            // beyond them (never written by this wrapper) goes to row 0.
            let rows = unsafe { std::slice::from_raw_parts(t, table_len()) };
            rows.get(owner).unwrap_or(&rows[0])
        };
        bump_shared(&o.released_bytes, bytes);
        bump_shared(&o.released_blocks, blocks);
    }

    /// Counts a reallocation of a block whose header is `header` from `old` to `new` bytes.
    #[inline(always)]
    fn charge_realloc(&self, header: u64, old: usize, new: usize) {
        let (old, new) = (old as u64, new as u64);
        let owner = owner_of(header);
        match self.rows() {
            Rows::Own(rows, a) => {
                let r = &rows[a];
                bump(&r.allocs, 1);
                bump(&r.alloc_bytes, new);
                bump(&r.frees, 1);
                bump(&r.freed_bytes, old);
                bump(&r.reallocs, 1);
                // Not a block of this point: cancel what `allocs` and `alloc_bytes` add to its
                // held figures; the block's own point holds `new - old` more.
                bump(&r.released_bytes, new);
                bump(&r.released_blocks, 1);
                let o = rows.get(owner).unwrap_or(&rows[0]);
                bump(&o.released_bytes, old.wrapping_sub(new));
            }
            Rows::Shardless => {
                let r = stripe();
                bump_shared(&r.allocs, 1);
                bump_shared(&r.alloc_bytes, new);
                bump_shared(&r.frees, 1);
                bump_shared(&r.freed_bytes, old);
                bump_shared(&r.reallocs, 1);
                bump_shared(&r.released_bytes, new);
                bump_shared(&r.released_blocks, 1);
                // The block stays one block: only its bytes move.
                self.shardless_release(owner, old.wrapping_sub(new), 0);
            }
        }
    }
}
