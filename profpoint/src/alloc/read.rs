//! Reading the counting allocator's tables: every shard's, the stripes of threads without a
//! shard and the shardless table, summed per point (reports), or one row without allocating
//! (`point_stats`, `outside_stats`).

use super::{INSTALLED, LOST_FREES, OUTSIDE, Row, SHARDLESS, TABLE_BYTES, TABLES, table_len};
use std::sync::atomic::{AtomicU64, Ordering};

/// The wrapper's own memory: its tables (one per thread that allocated with a shard, and one
/// for frees on threads without one), how many and their bytes, taken from the wrapped
/// allocator and counted in no row. Allocates nothing.
pub fn own_memory() -> (u64, u64) {
    // Relaxed: tallies.
    (
        TABLES.load(Ordering::Relaxed),
        TABLE_BYTES.load(Ordering::Relaxed),
    )
}

/// One point's allocation figures summed over every thread, wrapping (held figures may be
/// negative on one thread).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sum {
    pub(crate) allocs: u64,
    pub(crate) alloc_bytes: u64,
    pub(crate) frees: u64,
    pub(crate) freed_bytes: u64,
    pub(crate) reallocs: u64,
    pub(crate) held_bytes: u64,
    pub(crate) held_blocks: u64,
}

impl Sum {
    fn add(&mut self, r: &Row) {
        // Relaxed (all): tallies; a report taken while calls run may see one of a call's
        // words without the others, never a torn word.
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        self.allocs = self.allocs.wrapping_add(l(&r.allocs));
        self.alloc_bytes = self.alloc_bytes.wrapping_add(l(&r.alloc_bytes));
        self.frees = self.frees.wrapping_add(l(&r.frees));
        self.freed_bytes = self.freed_bytes.wrapping_add(l(&r.freed_bytes));
        self.reallocs = self.reallocs.wrapping_add(l(&r.reallocs));
        // Held: what the row allocated less what it released (see `Row`).
        self.held_bytes = self
            .held_bytes
            .wrapping_add(l(&r.alloc_bytes).wrapping_sub(l(&r.released_bytes)));
        self.held_blocks = self
            .held_blocks
            .wrapping_add(l(&r.allocs).wrapping_sub(l(&r.released_blocks)));
    }

    /// The figures since `base` (the counts since a reset; held figures are not counts and
    /// stay as they are).
    pub(crate) fn since(&self, base: &Sum) -> Sum {
        Sum {
            allocs: self.allocs.wrapping_sub(base.allocs),
            alloc_bytes: self.alloc_bytes.wrapping_sub(base.alloc_bytes),
            frees: self.frees.wrapping_sub(base.frees),
            freed_bytes: self.freed_bytes.wrapping_sub(base.freed_bytes),
            reallocs: self.reallocs.wrapping_sub(base.reallocs),
            ..*self
        }
    }

    /// As the report says it: held figures below zero (a report read while a block moves
    /// between threads' rows) read as zero.
    pub(crate) fn stats(&self) -> profpoint_report::AllocStats {
        let mut s = profpoint_report::AllocStats::default();
        s.allocs = self.allocs;
        s.alloc_bytes = self.alloc_bytes;
        s.frees = self.frees;
        s.freed_bytes = self.freed_bytes;
        s.reallocs = self.reallocs;
        s.held_bytes = (self.held_bytes as i64).max(0) as u64;
        s.held_blocks = (self.held_blocks as i64).max(0) as u64;
        s
    }
}

/// Whether the wrapper has counted anything: whether it is the program's global allocator.
pub fn installed() -> bool {
    // Relaxed: see `mark_installed`.
    INSTALLED.load(Ordering::Relaxed)
}

/// Adds every table's rows from `first` on (row 0: outside any point; point `i`: row `i + 1`) into
/// `out[..]`, without allocating.
fn sum_rows(first: usize, out: &mut [Sum]) {
    let len = table_len();
    let add_table = |p: *mut Row, out: &mut [Sum]| {
        if p.is_null() {
            return;
        }
        // SAFETY: every table holds `len` rows and is never freed (`rows`, `shardless`).
        let rows = unsafe { std::slice::from_raw_parts(p, len) };
        for (o, r) in out.iter_mut().zip(rows.iter().skip(first)) {
            o.add(r);
        }
    };
    crate::shard::for_each_shard(|s| {
        // Acquire: pairs with the Release in `new_rows`.
        add_table(s.alloc_rows.load(Ordering::Acquire), out)
    });
    // Acquire: pairs with the Release in `shardless`.
    add_table(SHARDLESS.load(Ordering::Acquire), out);
    if first == 0
        && let Some(o) = out.first_mut()
    {
        for r in &OUTSIDE {
            o.add(r);
        }
        // Relaxed: a tally.
        o.held_bytes = o
            .held_bytes
            .wrapping_sub(LOST_FREES.load(Ordering::Relaxed));
    }
}

/// Every point's figures (index + 1; row 0 outside any point), or `None` when the wrapper has
/// counted nothing (it is not the program's allocator).
pub(crate) fn read() -> Option<Vec<Sum>> {
    if !installed() {
        return None;
    }
    let mut out = vec![Sum::default(); table_len()];
    sum_rows(0, &mut out);
    Some(out)
}

/// Row `row`'s figures since the last reset, every thread, without allocating.
fn row_since_reset(row: usize) -> Option<profpoint_report::AllocStats> {
    if !installed() || row >= table_len() {
        return None;
    }
    let mut one = [Sum::default()];
    sum_rows(row, &mut one);
    let base = baseline().get(row).copied().unwrap_or_default();
    Some(one[0].since(&base).stats())
}

/// The allocations made while `point` was the innermost active point, and the bytes its
/// blocks still hold, every thread, since the last `profpoint::reset`; `None` when the
/// counting allocator is not the program's. Allocates nothing, so a program can compare it
/// with its own tally of the same moment.
pub fn point_stats(point: &crate::Point) -> Option<profpoint_report::AllocStats> {
    row_since_reset(point.index() as usize + 1)
}

/// The same for allocations made while no point was active on the thread.
pub fn outside_stats() -> Option<profpoint_report::AllocStats> {
    row_since_reset(0)
}

/// The counts left by `profpoint::reset`, subtracted from later reports (held figures are
/// not: a block made before the reset is still held).
static BASELINE: std::sync::Mutex<Vec<Sum>> = std::sync::Mutex::new(Vec::new());

fn baseline() -> std::sync::MutexGuard<'static, Vec<Sum>> {
    // Each update replaces the whole vector: a poisoned lock holds a consistent value.
    BASELINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`read`], less the counts at the last reset.
pub(crate) fn read_since_reset() -> Option<Vec<Sum>> {
    let mut now = read()?;
    let base = baseline();
    for (n, b) in now.iter_mut().zip(base.iter()) {
        *n = n.since(b);
    }
    Some(now)
}

/// Makes the current counts the new zero (`profpoint::reset`).
pub(crate) fn reset() {
    if let Some(now) = read() {
        *baseline() = now;
    }
}
