//! The per-thread tag (docs/stacks.md section 11): an opaque `u32` word a thread registers
//! for itself, read by the handler at every sample and stored with the stack.
//!
//! # Why a tid-keyed table, not a thread-local
//!
//! The handler must not touch a Rust `thread_local!`: in a `dlopen`ed cdylib that is
//! general-dynamic TLS, whose first access on a thread can allocate. So
//! [`set_thread_tag`](super::set_thread_tag) enters `tid -> &'static AtomicU32` in a fixed,
//! static open-addressing table, and the handler, which already has its tid (`gettid`, for its
//! context), looks it up with at most [`MAX_PROBE`] atomic loads and reads the word (Relaxed).
//! Safe by construction: the table is static (never freed), a registered word is `'static`
//! (never freed either), and each entry is changed only by its own thread (others only claim
//! empty or tombstoned slots, by CAS). A lookup racing a registration sees the old word, the
//! new one, or none (tag 0). Effective at once, across sampler runs, with no watcher step.
//!
//! Limit: a thread that exits without `set_thread_tag(None)` leaves its entry; a new thread
//! the kernel gives the same tid reads that tag until it registers its own (a wrong tag, never
//! a fault). profpoint clears it when the thread gives its shard back.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, Ordering};

const SLOTS: usize = 4096;
const MAX_PROBE: usize = 64;
const EMPTY: i32 = 0;
const TOMBSTONE: i32 = -1;

static TIDS: [AtomicI32; SLOTS] = [const { AtomicI32::new(EMPTY) }; SLOTS];
static WORDS: [AtomicPtr<AtomicU32>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

#[inline(always)]
fn home(tid: i32) -> usize {
    (tid as u32).wrapping_mul(0x9e37_79b9) as usize & (SLOTS - 1)
}

/// The slot holding `tid`'s entry.
#[inline(always)]
fn find(tid: i32) -> Option<usize> {
    let mut i = home(tid);
    for _ in 0..MAX_PROBE {
        // Acquire: pairs with the Release store that claimed the slot.
        let t = TIDS.get(i)?.load(Ordering::Acquire);
        if t == EMPTY {
            return None;
        }
        if t == tid {
            return Some(i);
        }
        i = (i + 1) & (SLOTS - 1);
    }
    None
}

/// The tag of thread `tid` now (0: none). Async-signal-safe: atomic loads only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
pub(crate) fn current(tid: i32) -> u32 {
    let Some(i) = find(tid) else { return 0 };
    // Acquire: pairs with the Release store of the word's address.
    let w = WORDS
        .get(i)
        .map_or(std::ptr::null_mut(), |w| w.load(Ordering::Acquire));
    if w.is_null() {
        return 0;
    }
    // SAFETY: only `&'static AtomicU32` addresses are stored (see `set`).
    // Relaxed: the word is an independent value; any recent one will do.
    unsafe { (*w).load(Ordering::Relaxed) }
}

/// Registers (or with `None` withdraws) the calling thread's word; `tid` is the caller's.
/// Returns false if the table had no room (the thread's samples then carry tag 0).
pub(crate) fn set(tid: i32, word: Option<&'static AtomicU32>) -> bool {
    let ptr = word.map_or(std::ptr::null_mut(), |w| {
        w as *const AtomicU32 as *mut AtomicU32
    });
    if let Some(i) = find(tid) {
        // Release: publishes the word's address.
        WORDS[i].store(ptr, Ordering::Release);
        if word.is_none() {
            // Release: the slot may be claimed by another thread from now on.
            TIDS[i].store(TOMBSTONE, Ordering::Release);
        }
        return true;
    }
    if word.is_none() {
        return true;
    }
    let mut i = home(tid);
    for _ in 0..MAX_PROBE {
        // Relaxed: re-checked by the CAS.
        let t = TIDS[i].load(Ordering::Relaxed);
        if (t == EMPTY || t == TOMBSTONE)
            // Acquire/Release: the slot's previous word store happens before ours.
            && TIDS[i]
                .compare_exchange(t, tid, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            // Release: publishes the word's address.
            WORDS[i].store(ptr, Ordering::Release);
            return true;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    static A: AtomicU32 = AtomicU32::new(7);
    static B: AtomicU32 = AtomicU32::new(9);

    #[test]
    fn a_tag_is_read_changed_and_withdrawn() {
        // Fake tids far from real ones (real tids are below 2^22).
        let (t1, t2) = (0x7000_0001, 0x7000_0001 + SLOTS as i32);
        assert_eq!(current(t1), 0);
        assert!(set(t1, Some(&A)));
        assert!(set(t2, Some(&B)));
        assert_eq!(current(t1), 7);
        assert_eq!(current(t2), 9);
        A.store(8, Ordering::Relaxed);
        assert_eq!(current(t1), 8);
        assert!(set(t1, None));
        assert_eq!(current(t1), 0);
        assert_eq!(current(t2), 9, "a tombstone does not hide later entries");
        assert!(set(t2, None));
        assert_eq!(current(t2), 0);
    }
}
