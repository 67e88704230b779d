//! Memory per point, with the counting allocator installed as this binary's
//! `#[global_allocator]`: each figure per point equals a truth counter kept in the same run.
//!
//! The truth is the wrapped allocator, `Tally`: it counts every call it gets under a tag the
//! test keeps per thread (which point the test's code is in; 0 outside any), so it sees what
//! the wrapper passes on, tagged by the test, not by profpoint. The wrapper asks it for the
//! user's size plus a header of `max(8, align)` bytes at alignment `max(8, align)`
//! (docs/memory.md), so the user's size is its layout's size less its alignment. Bytes still
//! held are checked against the blocks the test itself keeps.
//!
//! Each scenario runs in a child process of its own (this binary, `PROFPOINT_TEST_CHILD`,
//! its own `main` via libtest-mimic, the overhead budget off), so that every allocation of the
//! process is one the truth saw: the row outside any point is compared too.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[global_allocator]
static ALLOC: profpoint::Alloc<Tally> = profpoint::Alloc::new(Tally);

/// Tags: 0 outside any point, then one per annotated function below.
const TAGS: usize = 11;
const OUTSIDE: usize = 0;
const MAKE: usize = 1;
const OUTER: usize = 2;
const INNER: usize = 3;
const REC: usize = 4;
const CONSUME: usize = 5;
const GROW: usize = 6;
const ALIGNED: usize = 7;
const KEEP: usize = 8;
const HOST: usize = 9;
/// Never set: the point is disabled where it is called, its allocations its caller's.
const HUSHED: usize = 10;
/// The functions' names, by tag (the end of the point's name).
const NAMES: [&str; TAGS] = [
    "",
    "::make",
    "::outer",
    "::inner",
    "::rec",
    "::consume",
    "::grow",
    "::aligned",
    "::keep",
    "::host",
    "::hushed",
];

thread_local! {
    /// The point this thread's code is in, as the test says (no destructor: the allocator
    /// reads it during thread teardown too).
    static TAG: Cell<usize> = const { Cell::new(OUTSIDE) };
}

/// One tag's truth.
struct Truth {
    allocs: AtomicU64,
    alloc_bytes: AtomicU64,
    frees: AtomicU64,
    freed_bytes: AtomicU64,
    reallocs: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Truth = Truth {
    allocs: AtomicU64::new(0),
    alloc_bytes: AtomicU64::new(0),
    frees: AtomicU64::new(0),
    freed_bytes: AtomicU64::new(0),
    reallocs: AtomicU64::new(0),
};

static TRUTH: [Truth; TAGS] = [ZERO; TAGS];

/// When set, `Tally` refuses requests of this user size (a null passed through).
static REFUSE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Counts under the thread's tag, then asks `System`.
struct Tally;

fn user_size(l: Layout) -> u64 {
    (l.size() - l.align()) as u64
}

fn truth() -> &'static Truth {
    &TRUTH[TAG.with(|t| t.get())]
}

fn add(c: &AtomicU64, d: u64) {
    c.fetch_add(d, Ordering::Relaxed);
}

// SAFETY: every call is `System`'s with the caller's arguments; the tallies allocate nothing.
unsafe impl GlobalAlloc for Tally {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if user_size(l) == REFUSE.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            add(&truth().allocs, 1);
            add(&truth().alloc_bytes, user_size(l));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if user_size(l) == REFUSE.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            add(&truth().allocs, 1);
            add(&truth().alloc_bytes, user_size(l));
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        add(&truth().frees, 1);
        add(&truth().freed_bytes, user_size(l));
        // SAFETY: the caller's contract.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if (new - l.align()) as u64 == REFUSE.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            let t = truth();
            add(&t.allocs, 1);
            add(&t.alloc_bytes, (new - l.align()) as u64);
            add(&t.frees, 1);
            add(&t.freed_bytes, user_size(l));
            add(&t.reallocs, 1);
        }
        q
    }
}

/// Sets this thread's tag until dropped (declared after a point's guard, so dropped before it).
struct Tag(usize);

fn tag(t: usize) -> Tag {
    Tag(TAG.with(|c| c.replace(t)))
}

impl Drop for Tag {
    fn drop(&mut self) {
        TAG.with(|c| c.set(self.0));
    }
}

#[profpoint::profile_point]
#[inline(never)]
fn make(n: usize) -> Vec<u8> {
    let _t = tag(MAKE);
    // alloc, alloc_zeroed, realloc (grow), a free.
    let mut v: Vec<u8> = Vec::with_capacity(n);
    let z = vec![0u8; 3 * n];
    v.extend_from_slice(&z[..n]);
    v.push(1);
    std::hint::black_box(&z);
    drop(z);
    v
}

#[profpoint::profile_point]
#[inline(never)]
fn inner(n: usize) -> Box<[u64]> {
    let _t = tag(INNER);
    vec![7u64; n].into_boxed_slice()
}

#[profpoint::profile_point]
#[inline(never)]
fn outer(n: usize) -> usize {
    let _t = tag(OUTER);
    let a: Vec<u32> = (0..n as u32).collect();
    let b = inner(n);
    let s = String::from("outer's own");
    // A shrink: one realloc.
    let mut c = Vec::<u16>::with_capacity(4 * n);
    c.push(1);
    c.shrink_to_fit();
    a.len() + b.len() + s.len() + c.len()
}

#[profpoint::profile_point]
#[inline(never)]
fn rec(depth: u32) -> usize {
    let _t = tag(REC);
    // One heap block a level (the lint's array would be on the stack).
    let v: Vec<u32> = std::iter::repeat_n(depth, 5).collect();
    let below = if depth > 0 { rec(depth - 1) } else { 0 };
    v.len() + below
}

#[profpoint::profile_point]
#[inline(never)]
fn consume(v: Vec<u8>) -> usize {
    let _t = tag(CONSUME);
    let n = v.len();
    drop(v);
    n
}

#[profpoint::profile_point]
#[inline(never)]
fn grow(v: &mut Vec<u8>, to: usize) {
    let _t = tag(GROW);
    v.reserve_exact(to - v.len());
}

#[profpoint::profile_point]
#[inline(never)]
fn aligned(align: usize, size: usize) -> usize {
    let _t = tag(ALIGNED);
    let l = Layout::from_size_align(size, align).unwrap();
    // SAFETY: `l` has a non-zero size; the block is written within its size, then freed with
    // the layout it was made with (after a realloc, the new size's).
    unsafe {
        let p = std::alloc::alloc(l);
        assert!(!p.is_null());
        assert_eq!(p as usize % align, 0, "alloc keeps alignment {align}");
        p.write_bytes(0xab, size);
        let z = std::alloc::alloc_zeroed(l);
        assert_eq!(
            z as usize % align,
            0,
            "alloc_zeroed keeps alignment {align}"
        );
        assert!((0..size).all(|i| *z.add(i) == 0));
        std::alloc::dealloc(z, l);
        let q = std::alloc::realloc(p, l, size * 3);
        assert_eq!(q as usize % align, 0, "realloc keeps alignment {align}");
        assert!(
            (0..size).all(|i| *q.add(i) == 0xab),
            "realloc keeps the bytes"
        );
        std::alloc::dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
    }
    size
}

#[profpoint::profile_point]
#[inline(never)]
fn keep(n: usize) -> Vec<u64> {
    let _t = tag(KEEP);
    vec![3; n]
}

#[profpoint::profile_point]
#[inline(never)]
fn hushed(n: usize) -> usize {
    // No tag of its own: disabled, it is not the active point.
    let v: Vec<u16> = vec![1; n];
    v.len()
}

#[profpoint::profile_point]
#[inline(never)]
fn host(n: usize) -> usize {
    let _t = tag(HOST);
    hushed(n) + hushed(2 * n)
}

/// The points by tag, looked up before any comparison (the lookups allocate nothing, but the
/// comparison must not be preceded by a lazily made table).
fn points() -> [Option<&'static profpoint::Point>; TAGS] {
    let mut out = [None; TAGS];
    for (t, o) in out.iter_mut().enumerate().skip(1) {
        *o = profpoint::points().find(|p| p.name().ends_with(NAMES[t]));
        assert!(o.is_some(), "no point named *{}", NAMES[t]);
    }
    out
}

/// Compares every row with the truth, reading both with no allocation in between (the
/// readers allocate nothing); returns profpoint's rows.
fn check_exact() -> [profpoint::AllocStats; TAGS] {
    check(true)
}

/// As [`check_exact`]; with `rows` false, only the sums over every row are compared (where
/// profpoint's attribution is not the test's: a point called in a late thread-local
/// destructor, on a thread whose shard is gone, counts outside any point).
fn check(rows: bool) -> [profpoint::AllocStats; TAGS] {
    let ps = points();
    let mut truth = [[0u64; 5]; TAGS];
    let mut seen = [profpoint::AllocStats::default(); TAGS];
    for (t, row) in truth.iter_mut().enumerate() {
        let r = &TRUTH[t];
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        *row = [
            l(&r.allocs),
            l(&r.alloc_bytes),
            l(&r.frees),
            l(&r.freed_bytes),
            l(&r.reallocs),
        ];
    }
    for (t, s) in seen.iter_mut().enumerate() {
        *s = match ps[t] {
            None => profpoint::alloc::outside_stats(),
            Some(p) => profpoint::alloc::point_stats(p),
        }
        .expect("the wrapper is installed");
    }
    // The wrapper's own tables come from the wrapped allocator, outside any point: the truth
    // saw them (as user sizes less their alignment, a cache line: they carry no header),
    // profpoint counts them apart.
    let (tables, table_bytes) = profpoint::alloc::own_memory();
    truth[OUTSIDE][0] -= tables;
    truth[OUTSIDE][1] -= table_bytes - 64 * tables;
    let cells =
        |s: &profpoint::AllocStats| [s.allocs, s.alloc_bytes, s.frees, s.freed_bytes, s.reallocs];
    if rows {
        for t in 0..TAGS {
            assert_eq!(
                cells(&seen[t]),
                truth[t],
                "{}: [allocs, alloc_bytes, frees, freed_bytes, reallocs], profpoint's vs the truth",
                if t == 0 {
                    "outside any point"
                } else {
                    NAMES[t]
                }
            );
        }
    } else {
        let sum = |rows: &mut dyn Iterator<Item = [u64; 5]>| {
            rows.fold([0u64; 5], |mut a, r| {
                a.iter_mut().zip(r).for_each(|(a, r)| *a += r);
                a
            })
        };
        assert_eq!(
            sum(&mut seen.iter().map(cells)),
            sum(&mut truth.iter().copied()),
            "every row's sum, profpoint's vs the truth"
        );
    }
    seen
}

/// alloc, alloc_zeroed, realloc both ways, frees, nested points, recursion, outside.
fn one_thread() {
    let before = check_exact();
    let kept = make(100);
    let n = outer(50);
    let r = rec(6);
    let outside: Vec<u64> = (0..33).collect();
    let mut s = String::new();
    for i in 0..20 {
        s.push_str(&i.to_string());
    }
    std::hint::black_box((&kept, n, r, &outside, &s));
    drop(outside);
    let after = check_exact();
    assert!(after[MAKE].allocs >= before[MAKE].allocs + 3, "{after:?}");
    assert!(after[MAKE].reallocs > before[MAKE].reallocs);
    assert!(after[OUTER].reallocs > before[OUTER].reallocs, "the shrink");
    assert!(after[INNER].alloc_bytes >= before[INNER].alloc_bytes + 400);
    // Recursion: every level's allocation is the point's own (7 levels, one Vec each).
    assert!(after[REC].allocs >= before[REC].allocs + 7);
    // The block `make` returned is still held by it: exactly its capacity more than before.
    assert_eq!(
        after[MAKE].held_bytes - before[MAKE].held_bytes,
        kept.capacity() as u64,
        "{after:?}"
    );
    // `inner`'s block was freed in `outer`: held by nobody; `outer` frees what it did not make.
    assert_eq!(after[INNER].held_bytes, before[INNER].held_bytes);
    assert!(after[OUTER].freed_bytes - before[OUTER].freed_bytes >= 400);
    drop(kept);
    let end = check_exact();
    assert_eq!(end[MAKE].held_bytes, before[MAKE].held_bytes, "{end:?}");
    assert_eq!(end[MAKE].held_blocks, before[MAKE].held_blocks);
}

/// Blocks made in one point, freed or grown on other threads: a thread in a point, a thread
/// that never calls one (no shard), and a realloc on another thread that keeps the maker.
fn other_threads() {
    let base = check_exact();
    let a = make(64);
    let b = make(80);
    let mut c = make(96);
    let c_cap = c.capacity();
    let made = check_exact();
    let held = |r: &[profpoint::AllocStats; TAGS]| r[MAKE].held_bytes - base[MAKE].held_bytes;
    assert_eq!(held(&made), (a.capacity() + b.capacity() + c_cap) as u64);
    let a_cap = a.capacity() as u64;
    // A thread in a point frees `a`: counted as `consume`'s free, taken off `make`'s held.
    std::thread::spawn(move || consume(a)).join().unwrap();
    // A thread with no point ever called frees `b`.
    let shardless = std::thread::spawn(move || drop(b));
    shardless.join().unwrap();
    // A thread in `grow` grows `c`: the realloc is `grow`'s, the block stays `make`'s.
    c = std::thread::spawn(move || {
        grow(&mut c, 4000);
        c
    })
    .join()
    .unwrap();
    let after = check_exact();
    assert_eq!(held(&after), c.capacity() as u64, "{after:?}");
    assert_eq!(after[MAKE].held_blocks - base[MAKE].held_blocks, 1);
    assert!(after[CONSUME].freed_bytes >= a_cap);
    assert_eq!(after[CONSUME].held_bytes, 0, "consume made nothing");
    assert!(after[GROW].reallocs >= 1);
    assert_eq!(after[GROW].held_bytes, 0, "the grown block is make's");
    drop(c);
    let end = check_exact();
    assert_eq!(held(&end), 0, "{end:?}");
}

/// Alignments above the header: the user's pointer keeps its alignment, its bytes survive a
/// realloc, and the counts match.
fn alignments() {
    for align in [1, 2, 8, 16, 32, 64, 4096] {
        for size in [1, 7, 24, 100, 5000] {
            aligned(align, size);
        }
    }
    let r = check_exact();
    assert!(
        r[ALIGNED].allocs >= 70 && r[ALIGNED].held_bytes == 0,
        "{r:?}"
    );
}

/// A null from the wrapped allocator is returned as it is and counts nothing (`alloc`,
/// `alloc_zeroed`, `realloc`, which leaves the block as it was). Called on the wrapper itself:
/// through `std::alloc` the optimiser may drop an allocation whose only use is a null test.
fn null_passes_through() {
    let before = check_exact();
    REFUSE.store(12345, Ordering::Relaxed);
    let l = Layout::from_size_align(12345, 8).unwrap();
    let small = Layout::from_size_align(16, 8).unwrap();
    // SAFETY: non-zero sizes; a null result is not used; the small block is freed with its
    // layout (a failed realloc leaves it as it was).
    let (p, z, r) = unsafe {
        let p = ALLOC.alloc(l);
        let z = ALLOC.alloc_zeroed(l);
        let b = ALLOC.alloc(small);
        b.write_bytes(9, 16);
        let r = ALLOC.realloc(b, small, 12345);
        assert!(
            (0..16).all(|i| *b.add(i) == 9),
            "a failed realloc keeps the block"
        );
        ALLOC.dealloc(b, small);
        (p, z, r)
    };
    REFUSE.store(u64::MAX, Ordering::Relaxed);
    assert!(p.is_null() && z.is_null() && r.is_null());
    let after = check_exact();
    assert_eq!(
        after[OUTSIDE].allocs,
        before[OUTSIDE].allocs + 1,
        "the small block only"
    );
    assert_eq!(after[OUTSIDE].reallocs, before[OUTSIDE].reallocs);
}

/// Allocations in thread-local destructors (some after profpoint's own has handed the
/// thread's shard back): every one counted in some row, and the rows still match the truth.
fn teardown() {
    struct AllocOnDrop;
    impl Drop for AllocOnDrop {
        fn drop(&mut self) {
            let v: Vec<u8> = vec![1; 333];
            std::hint::black_box(&v);
            keep(10);
        }
    }
    thread_local! {
        static EARLY: AllocOnDrop = const { AllocOnDrop };
    }
    static DONE: AtomicBool = AtomicBool::new(false);
    std::thread::spawn(|| {
        EARLY.with(|_| ());
        keep(5);
        thread_local! {
            static LATE: AllocOnDrop = const { AllocOnDrop };
        }
        LATE.with(|_| ());
        DONE.store(true, Ordering::Relaxed);
    })
    .join()
    .unwrap();
    assert!(DONE.load(Ordering::Relaxed));
    let r = check(false);
    assert!(r[KEEP].allocs >= 1, "{r:?}");
}

#[cfg(unix)]
/// A forked child goes on counting exactly where its parent left off (its copy of the
/// tables), and the parent is not disturbed.
fn across_fork() {
    let kept = make(10);
    check_exact();
    // SAFETY: the child only allocates, compares and leaves with `_exit`; this process has no
    // other thread of its own (the budget is off).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = match std::panic::catch_unwind(|| {
            let more = make(20);
            let r = check_exact();
            drop(more);
            r
        }) {
            Ok(r) if r[MAKE].held_bytes >= kept.capacity() as u64 => 0,
            _ => 1,
        };
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's counts were not exact: {status}"
    );
    drop(kept);
    check_exact();
}

/// A disabled point is not active: its allocations are its caller's.
fn disabled_point() {
    assert_eq!(profpoint::disable("*::hushed"), 1);
    let n = host(100);
    let r = check_exact();
    assert_eq!(n, 300);
    assert_eq!(r[HOST].allocs, 2, "{r:?}");
    assert_eq!(r[HOST].alloc_bytes, 600);
    assert_eq!(r[HUSHED].allocs, 0);
}

/// The report: the table has the memory columns, the JSON the `alloc` fields.
fn report() {
    let v = keep(1000);
    let r = profpoint::snapshot();
    let a = r.alloc.expect("the report's memory section");
    assert!(a.outside.allocs > 0);
    assert_eq!(a.header_bytes, 8);
    let p = r
        .points
        .iter()
        .find(|p| p.name.ends_with("::keep"))
        .unwrap();
    let s = p.alloc.expect("the point's memory");
    assert!(s.held_bytes >= 8000, "{s:?}");
    let mut t = Vec::new();
    profpoint::write_table(&r, &mut t).unwrap();
    let t = String::from_utf8(t).unwrap();
    assert!(
        t.contains("allocs") && t.contains("held.bytes") && t.contains("outside any point:"),
        "{t}"
    );
    let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert!(j["alloc"]["outside"]["allocs"].as_u64().unwrap() > 0, "{j}");
    let jp = j["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str().unwrap().ends_with("::keep"))
        .unwrap();
    assert!(jp["alloc"]["held_bytes"].as_u64().unwrap() >= 8000);
    // Prometheus: the allocation families, the point's bytes among them.
    let prom = r.to_prometheus();
    let bytes = prom
        .lines()
        .find(|l| l.starts_with("profpoint_alloc_bytes_total{point=\"alloc::keep\""))
        .unwrap_or_else(|| panic!("{prom}"));
    let n: u64 = bytes.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 8000, "{bytes}");
    assert!(prom.contains("# TYPE profpoint_held_bytes gauge"));
    // A report read back keeps the fields.
    let back = profpoint::Report::from_json(&r.to_json()).unwrap();
    assert_eq!(back.alloc, r.alloc);
    // A reset zeroes the counts, not what is held.
    profpoint::reset();
    let keep_point = points()[KEEP].unwrap();
    let after = profpoint::alloc::point_stats(keep_point).unwrap();
    assert_eq!((after.allocs, after.alloc_bytes), (0, 0), "{after:?}");
    assert_eq!(after.held_bytes, s.held_bytes);
    drop(v);
    let freed = profpoint::alloc::point_stats(keep_point).unwrap();
    assert_eq!(freed.held_bytes, s.held_bytes - 8000);
}

/// Every scenario, by name (each runs in a child of its own).
fn scenarios() -> Vec<(&'static str, fn())> {
    let all: Vec<(&'static str, fn())> = vec![
        (
            "a_disabled_point_s_allocations_are_its_caller_s",
            disabled_point,
        ),
        (
            "counts_and_bytes_per_point_equal_the_truth_on_one_thread",
            one_thread,
        ),
        (
            "frees_and_reallocs_on_other_threads_keep_the_maker",
            other_threads,
        ),
        ("alignments_above_the_header_are_kept", alignments),
        (
            "a_null_from_the_wrapped_allocator_passes_through",
            null_passes_through,
        ),
        ("allocations_during_thread_teardown_are_counted", teardown),
        ("the_report_has_memory_columns_and_fields", report),
    ];
    #[cfg(unix)]
    let all = {
        let mut all = all;
        all.push(("counts_stay_exact_across_fork", across_fork));
        all
    };
    all
}

fn main() {
    if let Ok(name) = std::env::var("PROFPOINT_TEST_CHILD") {
        let (_, f) = scenarios()
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("a known scenario");
        f();
        return;
    }
    let args = libtest_mimic::Arguments::from_args();
    let trials = scenarios()
        .into_iter()
        .map(|(name, _)| {
            libtest_mimic::Trial::test(name, move || {
                let out = common::runner::target_command(std::env::current_exe().unwrap())
                    .env("PROFPOINT_TEST_CHILD", name)
                    .env("PROFPOINT_BUDGET", "off")
                    .env_remove("PROFPOINT_REPORT")
                    .output()
                    .unwrap();
                if out.status.success() {
                    Ok(())
                } else {
                    Err(format!("{}\n{}", out.status, String::from_utf8_lossy(&out.stderr)).into())
                }
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
