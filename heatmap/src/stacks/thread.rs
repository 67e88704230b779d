//! Per-thread state of the stack sampler, and how the handler finds it.
//!
//! # Finding a thread's context in the handler
//!
//! Never through a Rust `thread_local!`: this crate may live in a `dlopen`ed cdylib, where a
//! thread-local is general-dynamic TLS and its first touch on a thread can make
//! `__tls_get_addr` allocate. Instead the handler asks the kernel for its tid (`gettid`, one
//! cheap system call) and looks it up in [`ThreadMap`], a fixed-size open-addressing
//! table that only the watcher writes (insert when it finds a thread, tombstone when the
//! thread is gone) and the handler only reads (bounded probing, atomics, no allocation).
//!
//! # Lifetime of a context
//!
//! A context is created by the watcher when it finds the thread (cache, frame buffer and
//! unwind stack allocated and written then, so the handler takes no page fault), and is never
//! freed while the sampler runs: when its thread is gone the map entry becomes a tombstone and
//! the context waits in limbo until the watcher has seen no handler active
//! (`Published::idle`, a SeqCst load pairing with the handler's SeqCst increment before its
//! SeqCst lookup, the pattern of `signal.rs`'s drain): a handler that found it before the
//! tombstone has then finished, and later ones cannot find it. Only then is it reused for a
//! new thread. All contexts are freed at stop, after the drain.
//!
//! # Stack bounds
//!
//! The handler reads the stack only inside the bounds of the mapping holding the interrupted
//! `rsp`. The watcher does not know them when it finds a thread (it has no `pthread_t` for
//! threads it did not create), so the first sample of a thread *bootstraps*: it finds no
//! bounds holding `rsp`, stores `rsp` in `pending_sp` and records the pc alone (counted as
//! "stack bounds pending"); the watcher, at its next look (1-20 ms), finds the
//! `/proc/self/maps` line holding that `rsp` and publishes it. Two bound slots per thread: the
//! thread stack and a second one (an alternate signal stack a program's own handler runs on,
//! or the main thread's stack grown below the first bounds). Each slot is a seqlock written
//! only by the watcher; a handler that sees it change meanwhile treats it as absent.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering, fence};

use framehop::x86_64::CacheX86_64;

use super::policy::SmallStore;
use crate::stacks::MAX_DEPTH;

const FRAMES: usize = MAX_DEPTH as usize;

/// The per-thread unwind stack: several times the most the unwind was seen to use
/// (docs/stacks.md, section 1.4).
pub(crate) const UNWIND_STACK: usize = 32 * 1024;

/// Threads the map can hold at once (power of two).
pub(crate) const MAP_SLOTS: usize = 4096;
/// Slots probed before a lookup or insert gives up.
const MAX_PROBE: usize = 64;
const EMPTY: i32 = 0;
const TOMBSTONE: i32 = -1;

pub(crate) type Cache = CacheX86_64<SmallStore>;

/// One memory range `[lo, hi)`, written by the watcher as a seqlock.
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    seq: AtomicU64,
    lo: AtomicU64,
    hi: AtomicU64,
}

impl Bounds {
    /// The range, if set and not being written. Async-signal-safe (never waits).
    #[inline(always)]
    pub(crate) fn read(&self) -> Option<(u64, u64)> {
        // Acquire: the data read below comes after this (seqlock read side).
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 & 1 == 1 {
            return None;
        }
        // Relaxed: validated by the sequence re-read below.
        let lo = self.lo.load(Ordering::Relaxed);
        // Relaxed: as above.
        let hi = self.hi.load(Ordering::Relaxed);
        // Acquire fence: the data loads above complete before the re-read of `seq`.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence.
        let s2 = self.seq.load(Ordering::Relaxed);
        (s1 == s2 && hi > lo).then_some((lo, hi))
    }

    /// Sets the range. Only one writer (the watcher).
    pub(crate) fn write(&self, lo: u64, hi: u64) {
        // Relaxed: we are the only writer.
        let s = self.seq.load(Ordering::Relaxed);
        // Relaxed + Release fence: readers that see the data stores also see the odd sequence.
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        // Relaxed: published by the Release store of the sequence below.
        self.lo.store(lo, Ordering::Relaxed);
        // Relaxed: as above.
        self.hi.store(hi, Ordering::Relaxed);
        // Release: publishes the data.
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }
}

/// What the handler needs of one thread.
pub(crate) struct ThreadCtx {
    /// framehop's rule cache and CFI evaluation context: the handler's own.
    cache: UnsafeCell<Cache>,
    /// The frames of the sample being taken.
    frames: UnsafeCell<[u64; FRAMES]>,
    /// The stack the unwind runs on (`switch.rs`).
    ustack: Box<[UnsafeCell<u8>]>,
    /// The thread stack, and a second range (see the module docs).
    pub(crate) bounds: [Bounds; 2],
    /// An `rsp` the handler found outside every bound, for the watcher to resolve (0: none).
    pub(crate) pending_sp: AtomicU64,
}

// SAFETY: `cache`, `frames` and `ustack` are used only by the handler running on the thread
// the context is registered for (SIGPROF is blocked while its handler runs, so it never nests
// on one thread, and a context is reused only after no handler can hold it: see the module
// docs); the watcher touches only the atomics.
unsafe impl Sync for ThreadCtx {}
// SAFETY: as above; the context owns its memory.
unsafe impl Send for ThreadCtx {}

impl std::fmt::Debug for ThreadCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadCtx")
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl ThreadCtx {
    /// A context with every page written (no page fault in the handler). Allocates.
    pub(crate) fn new() -> Box<ThreadCtx> {
        Box::new(ThreadCtx {
            cache: UnsafeCell::new(Cache::new_in()),
            frames: UnsafeCell::new([0; FRAMES]),
            ustack: (0..UNWIND_STACK).map(|_| UnsafeCell::new(0xa5)).collect(),
            bounds: Default::default(),
            pending_sp: AtomicU64::new(0),
        })
    }

    /// Forgets the previous thread's bounds (reuse for a new thread).
    pub(crate) fn reset(&self) {
        for b in &self.bounds {
            b.write(0, 0);
        }
        // Relaxed: the context is unreachable by any handler while reset.
        self.pending_sp.store(0, Ordering::Relaxed);
    }

    /// The 16-byte aligned top of the unwind stack.
    #[inline(always)]
    pub(crate) fn stack_top(&self) -> usize {
        (self.ustack.as_ptr() as usize + self.ustack.len()) & !15
    }

    /// The window of readable stack for a sample interrupted with `rsp = sp`: from the red
    /// zone below `sp` (framehop may read there in an epilogue) to the top of the range
    /// holding `sp`. `None`: no known range holds `sp`.
    #[inline(always)]
    pub(crate) fn window(&self, sp: u64) -> Option<(u64, u64)> {
        self.bounds.iter().find_map(|b| {
            let (lo, hi) = b.read()?;
            (sp >= lo && sp < hi).then(|| (sp.saturating_sub(128).max(lo), hi))
        })
    }

    /// The handler's exclusive parts: (cache, frame buffer).
    ///
    /// # Safety
    ///
    /// Only the handler on the thread this context is registered for may call it, and only
    /// once per sample (the borrows must not overlap another call's).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn parts(&self) -> (&mut Cache, &mut [u64; FRAMES]) {
        // SAFETY: per the contract, no other reference to these exists now.
        unsafe { (&mut *self.cache.get(), &mut *self.frames.get()) }
    }
}

/// tid -> context, written by the watcher, read by the handler. See the module docs.
pub(crate) struct ThreadMap {
    tids: Box<[AtomicI32]>,
    ctxs: Box<[AtomicPtr<ThreadCtx>]>,
}

impl std::fmt::Debug for ThreadMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadMap").finish_non_exhaustive()
    }
}

#[inline(always)]
fn home(tid: i32) -> usize {
    (tid as u32).wrapping_mul(0x9e37_79b9) as usize & (MAP_SLOTS - 1)
}

impl ThreadMap {
    pub(crate) fn new() -> ThreadMap {
        ThreadMap {
            tids: (0..MAP_SLOTS).map(|_| AtomicI32::new(EMPTY)).collect(),
            ctxs: (0..MAP_SLOTS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
        }
    }

    /// The context of `tid`. Async-signal-safe: at most `MAX_PROBE` atomic loads.
    #[inline(always)]
    pub(crate) fn find(&self, tid: i32) -> Option<&ThreadCtx> {
        let mut i = home(tid);
        for _ in 0..MAX_PROBE {
            // SeqCst: see the module docs (the lookup is ordered after the handler's SeqCst
            // increment of the active count, against the watcher's tombstone and idle check).
            let t = self.tids.get(i)?.load(Ordering::SeqCst);
            if t == EMPTY {
                return None;
            }
            if t == tid {
                // SeqCst: as above.
                let p = self.ctxs.get(i)?.load(Ordering::SeqCst);
                // SAFETY: a non-null pointer is a context owned by the sampler's `Stacks`,
                // which frees none while a handler can run (module docs).
                return (!p.is_null()).then(|| unsafe { &*p });
            }
            i = (i + 1) & (MAP_SLOTS - 1);
        }
        None
    }

    /// Enters `tid -> ctx` (watcher only; `tid` not present). False if no slot was found.
    pub(crate) fn insert(&self, tid: i32, ctx: *const ThreadCtx) -> bool {
        let mut i = home(tid);
        for _ in 0..MAX_PROBE {
            // SeqCst: as in `find` (single writer, so plain loads would do for our own view).
            let t = self.tids[i].load(Ordering::SeqCst);
            if t == EMPTY || t == TOMBSTONE {
                // The context first, then the tid that makes it findable.
                self.ctxs[i].store(ctx as *mut ThreadCtx, Ordering::SeqCst);
                self.tids[i].store(tid, Ordering::SeqCst);
                return true;
            }
            i = (i + 1) & (MAP_SLOTS - 1);
        }
        false
    }

    /// Removes `tid` (watcher only): its slot becomes a tombstone.
    pub(crate) fn remove(&self, tid: i32) {
        let mut i = home(tid);
        for _ in 0..MAX_PROBE {
            let t = self.tids[i].load(Ordering::SeqCst);
            if t == EMPTY {
                return;
            }
            if t == tid {
                self.tids[i].store(TOMBSTONE, Ordering::SeqCst);
                self.ctxs[i].store(std::ptr::null_mut(), Ordering::SeqCst);
                return;
            }
            i = (i + 1) & (MAP_SLOTS - 1);
        }
    }
}

/// The readable mapping of `/proc/self/maps` holding `addr`: `(start, end)`.
pub(crate) fn mapping_holding(maps: &str, addr: u64) -> Option<(u64, u64)> {
    maps.lines().find_map(|line| {
        let mut f = line.split_ascii_whitespace();
        let (range, perms) = (f.next()?, f.next()?);
        let (s, e) = range.split_once('-')?;
        let (s, e) = (
            u64::from_str_radix(s, 16).ok()?,
            u64::from_str_radix(e, 16).ok()?,
        );
        (s <= addr && addr < e && perms.starts_with('r')).then_some((s, e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_back_and_window_includes_the_red_zone() {
        let ctx = ThreadCtx::new();
        assert_eq!(ctx.window(0x5000), None);
        ctx.bounds[0].write(0x1000, 0x9000);
        assert_eq!(ctx.window(0x5000), Some((0x5000 - 128, 0x9000)));
        assert_eq!(ctx.window(0x1010), Some((0x1000, 0x9000)));
        assert_eq!(ctx.window(0x9000), None);
        ctx.reset();
        assert_eq!(ctx.window(0x5000), None);
    }

    #[test]
    fn the_map_finds_inserts_and_forgets() {
        let m = ThreadMap::new();
        let a = ThreadCtx::new();
        let b = ThreadCtx::new();
        assert!(m.insert(42, &*a));
        // 42 + MAP_SLOTS collides with nothing in particular, but probing must work anyway.
        assert!(m.insert(42 + MAP_SLOTS as i32, &*b));
        assert!(std::ptr::eq(m.find(42).unwrap(), &*a));
        assert!(std::ptr::eq(m.find(42 + MAP_SLOTS as i32).unwrap(), &*b));
        m.remove(42);
        assert!(m.find(42).is_none());
        assert!(m.find(42 + MAP_SLOTS as i32).is_some());
        assert!(m.find(7).is_none());
    }

    #[test]
    fn maps_lines_parse() {
        let maps = "55d0-55e0 r-xp 0 00:00 0 /bin/x\n7ff0-8000 rw-p 0 00:00 0 [stack]\n9000-a000 ---p 0 0 0\n";
        assert_eq!(mapping_holding(maps, 0x7ff8), Some((0x7ff0, 0x8000)));
        assert_eq!(mapping_holding(maps, 0x9500), None);
        assert_eq!(mapping_holding(maps, 0x1), None);
    }
}
