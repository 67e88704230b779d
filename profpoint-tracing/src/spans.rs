//! The standalone subscriber's open spans: a slab of slots, each with its span's call, found
//! from the span's id with one load and locked with one compare-and-swap.
//!
//! # Mechanism
//! - Slots live in pages of [`PAGE`] allocated on first use and never freed (a page pointer,
//!   once set, stays), up to [`PAGES`] of them. A slot's index and generation make the span's
//!   id ([`Spans::alloc`]); an id whose generation is not its slot's (a stale id, or not this
//!   subscriber's) finds nothing.
//! - A slot's state is one word: its generation (high 32 bits), its references (`tracing`'s
//!   handles to the span, bits 1..32) and a lock bit (bit 0). Every change of the state takes
//!   the lock first (a compare-and-swap from an unlocked state with the id's generation and at
//!   least one reference), so the holder knows the whole word and releases it with a plain
//!   store: an enter or an exit costs one locked instruction, where a general slab's guard and
//!   a mutex took four. The call and the callsite are read and written only under the lock, or
//!   by the thread that took a free slot and has not published it yet.
//! - The last reference's close bumps the generation (stale ids then find nothing) and puts
//!   the slot aside for this thread's next span ([`LAST`]: a span made and closed on one
//!   thread, again and again, reuses one slot), or, with one there already, on this thread's
//!   free list; lists past [`BATCH`] slots give half to a shared one, and a thread with none
//!   takes a batch from it, or a slot never used. A thread's slots go to the shared list when
//!   the thread ends.
//! - The lock is held for a few dozen instructions (a segment's start or end); a second thread
//!   entering the same span at that moment spins, then yields.

use crate::callsites;
use profpoint::__private::SplitCall;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Slots per page (a power of two).
const PAGE: usize = 4096;
const PAGE_BITS: u32 = PAGE.trailing_zeros();
/// Pages at most: 4 M spans open at once.
const PAGES: usize = 1024;
/// Free slots a thread keeps before it hands half to the shared list.
const BATCH: usize = 64;

const LOCKED: u64 = 1;
const REF: u64 = 2;
const REFS: u64 = 0xffff_fffe;
/// Generations wrap at 2^31 (an id has 31 bits for it).
const GENERATIONS: u64 = 0x7fff_ffff;

/// One span's state.
struct Slot {
    state: AtomicU64,
    call: UnsafeCell<SplitCall>,
    /// The span's callsite slot (`crate::callsites`).
    callsite: UnsafeCell<usize>,
}

// SAFETY: `call` and `callsite` are accessed only by the holder of the slot's lock bit, or by
// the one thread that took the slot off a free list and has not yet published it (its state
// has no reference, so no lock can be taken). `SplitCall` is `Send`.
unsafe impl Sync for Slot {}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU64::new(0),
            call: UnsafeCell::new(SplitCall::new()),
            callsite: UnsafeCell::new(0),
        }
    }
}

static PAGE_PTRS: [AtomicPtr<Slot>; PAGES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; PAGES];
/// Slots never used start here.
static NEXT: AtomicU32 = AtomicU32::new(0);
/// Free slots handed back by threads.
static SHARED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// This thread's free slots; given to [`SHARED`] when the thread ends, with the one in
/// [`LAST`].
struct Local(Vec<u32>);

impl Drop for Local {
    fn drop(&mut self) {
        let last = LAST.try_with(|l| l.replace(0)).unwrap_or(0);
        if let Some(index) = (last & !HELD).checked_sub(1) {
            self.0.push(index as u32);
        }
        if !self.0.is_empty() {
            shared().extend(self.0.drain(..));
        }
    }
}

/// [`LAST`]'s flag: this thread's [`LOCAL`] exists, so its drop will hand on the slot held.
const HELD: u64 = 1 << 63;

thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(Local(Vec::new())) };
    /// The slot this thread freed last, plus one (0: none), and [`HELD`]: a span made and
    /// closed on one thread, again and again, takes the slot back from here, a load and a
    /// store (no destructor to register, no borrow, no list). Set only once [`LOCAL`] exists,
    /// whose drop gives the slot on when the thread ends.
    static LAST: Cell<u64> = const { Cell::new(0) };
}

fn shared() -> std::sync::MutexGuard<'static, Vec<u32>> {
    // A panic under the lock (none is expected) leaves a valid list.
    SHARED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The slot of `index`, if its page exists.
#[inline]
fn slot(index: u32) -> Option<&'static Slot> {
    let index = index as usize;
    let page = PAGE_PTRS.get(index >> PAGE_BITS)?.load(Ordering::Acquire);
    if page.is_null() {
        return None;
    }
    // SAFETY: a non-null page pointer points at `PAGE` slots, never freed; the offset is
    // below `PAGE`.
    Some(unsafe { &*page.add(index & (PAGE - 1)) })
}

/// The slot of `index`, its page made if missing; `None` past [`PAGES`].
fn slot_made(index: u32) -> Option<&'static Slot> {
    let p = PAGE_PTRS.get(index as usize >> PAGE_BITS)?;
    if p.load(Ordering::Acquire).is_null() {
        let page: Box<[Slot]> = (0..PAGE).map(|_| Slot::new()).collect();
        let fresh = Box::into_raw(page).cast::<Slot>();
        // AcqRel: publishes the page's slots; sees another thread's page if it won.
        if p.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
        {
            // SAFETY: `fresh` came from `Box::into_raw` of a `PAGE`-long slice just above and
            // was never published.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, PAGE)) });
        }
    }
    slot(index)
}

/// A free slot's index: the one this thread freed last, its list, then the shared one, then
/// one never used.
fn take_free() -> Option<u32> {
    if let Ok(Some(index)) = LAST.try_with(|l| {
        let v = l.get();
        let index = (v & !HELD).checked_sub(1)?;
        l.set(HELD);
        Some(index as u32)
    }) {
        return Some(index);
    }
    let local = LOCAL.try_with(|l| {
        // Its drop now runs at the thread's end: `LAST` may hold a slot.
        let _ = LAST.try_with(|last| last.set(last.get() | HELD));
        let mut l = l.try_borrow_mut().ok()?;
        if l.0.is_empty() {
            let mut s = shared();
            let n = s.len().min(BATCH);
            let from = s.len() - n;
            l.0.extend(s.drain(from..));
        }
        l.0.pop()
    });
    match local {
        Ok(Some(index)) => return Some(index),
        Ok(None) => {}
        // The thread is ending and its list is gone (a span made by another thread-local's
        // destructor): the shared list first, or every such span would take a slot never
        // used, and the slab would only grow.
        Err(_) => {
            if let Some(index) = shared().pop() {
                return Some(index);
            }
        }
    }
    // Relaxed: only uniqueness matters; the page's publication orders the slot. Checked
    // first: past the last slot the counter stays (each thread adds at most one more), so it
    // never wraps back to slots in use.
    if NEXT.load(Ordering::Relaxed) as usize >= PAGES * PAGE {
        return None;
    }
    let i = NEXT.fetch_add(1, Ordering::Relaxed);
    ((i as usize) < PAGES * PAGE).then_some(i)
}

/// Gives `index` back (its slot free, its generation bumped).
fn put_free(index: u32) {
    if let Ok(true) = LAST.try_with(|l| {
        let held = l.get() == HELD;
        if held {
            l.set(HELD | (u64::from(index) + 1));
        }
        held
    }) {
        return;
    }
    let kept = LOCAL
        .try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return false;
            };
            l.0.push(index);
            if l.0.len() > 2 * BATCH {
                let from = l.0.len() - BATCH;
                shared().extend(l.0.drain(from..));
            }
            true
        })
        .unwrap_or(false);
    if !kept {
        shared().push(index);
    }
}

/// The slot index and generation of an id made by [`alloc`] (bit 0 clear).
#[inline]
fn parts(id: u64) -> Option<(u32, u32)> {
    if id & 1 != 0 {
        return None;
    }
    let index = u32::try_from((id >> 1) & 0xffff_ffff)
        .ok()?
        .checked_sub(1)?;
    Some((index, (id >> 33) as u32))
}

/// A new span of callsite `callsite` with one reference; its id (bit 0 clear, never 0), or
/// `None` when no slot is left.
pub(crate) fn alloc(callsite: usize) -> Option<u64> {
    let index = take_free()?;
    let s = slot_made(index)?;
    // Relaxed: the slot is free (no reference), so no other thread changes it; it was freed
    // by a release store this thread synchronised with through the free lists.
    let generation = s.state.load(Ordering::Relaxed) >> 32;
    // SAFETY: a free slot is this thread's alone until the store below publishes it.
    unsafe {
        *s.call.get() = SplitCall::new();
        *s.callsite.get() = callsite;
    }
    // Release: publishes the call and callsite with the reference.
    s.state.store(generation << 32 | REF, Ordering::Release);
    Some(generation << 33 | u64::from(index + 1) << 1)
}

/// A span's slot, locked: the span's call and callsite until dropped.
pub(crate) struct Locked {
    slot: &'static Slot,
    /// The slot's index.
    index: u32,
    /// The state as locked (lock bit set).
    state: u64,
}

impl Locked {
    pub(crate) fn call(&mut self) -> &mut SplitCall {
        // SAFETY: this guard holds the slot's lock bit.
        unsafe { &mut *self.slot.call.get() }
    }

    pub(crate) fn callsite(&self) -> usize {
        // SAFETY: this guard holds the slot's lock bit.
        unsafe { *self.slot.callsite.get() }
    }

    /// The span's key in the slab: its slot and generation, unique among open spans whatever
    /// made their ids (two registries, or a registry and the standalone subscriber, give
    /// different spans the same id). Never 0.
    pub(crate) fn key(&self) -> u64 {
        ((self.state >> 32) << 32) | (u64::from(self.index) + 1)
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // Release: what was done under the lock happens before the next holder's acquire. A
        // plain store: no other thread changes a locked state.
        self.slot
            .state
            .store(self.state & !LOCKED, Ordering::Release);
    }
}

/// Locks the span of `id`: `None` for an id with no open span (stale, stateless, or not
/// made here).
#[inline]
pub(crate) fn lock(id: u64) -> Option<Locked> {
    let (index, generation) = parts(id)?;
    let slot = slot(index)?;
    let mut spins = 0u32;
    loop {
        // Relaxed: the compare-and-swap below acquires.
        let s = slot.state.load(Ordering::Relaxed);
        if (s >> 32) as u32 != generation || s & REFS == 0 {
            return None;
        }
        if s & LOCKED != 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            continue;
        }
        // Acquire: sees what the last holder did; Relaxed on failure: read again.
        if slot
            .state
            .compare_exchange_weak(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(Locked {
                slot,
                index,
                state: s | LOCKED,
            });
        }
    }
}

/// Adds a reference to the span of `id` (`tracing`'s `clone_span`).
pub(crate) fn add_ref(id: u64) {
    if let Some(mut l) = lock(id) {
        // At most 2^31 - 1 handles: past that the count stays (the span is then never freed,
        // as an `Arc` would abort).
        if l.state & REFS != REFS {
            l.state += REF;
        }
    }
}

/// Drops a reference to the span of `id`; the last one hands the span's call and callsite to
/// `finish` (where the call lies: see `SplitCall::finish`), then frees the slot. Whether it was
/// the last.
pub(crate) fn release(id: u64, finish: impl FnOnce(&mut SplitCall, usize)) -> bool {
    let Some(mut l) = lock(id) else {
        return false;
    };
    if l.state & REFS == REFS {
        // Saturated (see `add_ref`): the count is no longer known, and the span is kept.
        return false;
    }
    l.state -= REF;
    if l.state & REFS != 0 {
        return false;
    }
    let (slot, index, callsite) = (l.slot, l.index, l.callsite());
    // The next generation (31 bits: an id holds no more), no reference, unlocked as the guard
    // drops: stale ids find nothing from here.
    l.state = (((l.state >> 32) + 1) & GENERATIONS) << 32 | LOCKED;
    drop(l);
    // Freed when this returns, or if `finish` panics.
    let _free = Free(index);
    // SAFETY: the slot is this thread's alone until `_free` drops: with no reference left no
    // lock can be taken (`lock` refuses such a state), and it is on no free list yet. Its
    // holder's release store was before ours (we held the lock after it).
    let call = unsafe { &mut *slot.call.get() };
    // `alloc` makes the call new again for the slot's next span, whatever `finish` did.
    finish(call, callsite);
    true
}

/// Drops one reference to the span of `id`; the last records its call as one call of its
/// callsite's point (the subscriber's and the layer's close). Whether it was the last.
pub(crate) fn close(id: u64) -> bool {
    release(id, |call, callsite| {
        if let Some(point) = callsites::point(callsite) {
            call.finish(point);
        }
    })
}

/// Puts a slot on this thread's free list when dropped.
struct Free(u32);

impl Drop for Free {
    fn drop(&mut self) {
        put_free(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests take turns: a thread with no free slot takes a batch from the shared list,
    /// which one of them reads.
    static TURNS: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURNS.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn an_id_finds_its_span_until_its_last_reference_goes() {
        let _turn = turn();
        let id = alloc(7).expect("a slot");
        assert_eq!(lock(id).map(|l| l.callsite()), Some(7));
        add_ref(id);
        assert!(!release(id, |_, _| panic!("one reference left")));
        let mut seen = None;
        assert!(release(id, |_, c| seen = Some(c)), "the last reference");
        assert_eq!(seen, Some(7));
        assert!(lock(id).is_none(), "a stale id finds nothing");
        assert!(!release(id, |_, _| panic!("stale")));
        // The slot is reused with a new generation: the old id still finds nothing.
        let again = alloc(9).expect("a slot");
        assert_ne!(again, id);
        assert!(lock(id).is_none());
        assert_eq!(lock(again).map(|l| l.callsite()), Some(9));
        assert!(release(again, |_, _| {}));
    }

    #[test]
    fn a_thread_reuses_the_slot_it_freed_last_and_hands_it_on_when_it_ends() {
        let _turn = turn();
        let index = |id: u64| parts(id).unwrap().0;
        let (a, b) = std::thread::spawn(move || {
            let a = alloc(3).expect("a slot");
            let b = alloc(4).expect("a slot");
            // `a` is kept aside, `b` goes to the list: `a` comes back first, then `b` (a
            // list alone, last in first out, would give `b` first).
            assert!(release(a, |_, _| {}));
            assert!(release(b, |_, _| {}));
            let again = alloc(5).expect("a slot");
            assert_eq!(
                index(again),
                index(a),
                "the slot freed last but one, kept aside"
            );
            let then = alloc(6).expect("a slot");
            assert_eq!(index(then), index(b), "then the list's");
            // Held aside as the thread ends: handed on.
            assert!(release(then, |_, _| {}));
            assert!(release(again, |_, _| {}));
            (index(again), index(then))
        })
        .join()
        .unwrap();
        let shared_now = shared().clone();
        assert!(
            shared_now.contains(&a) && shared_now.contains(&b),
            "{shared_now:?}"
        );
        // A thread that only frees a slot (made on another) hands it on too.
        let c = alloc(7).expect("a slot");
        std::thread::spawn(move || assert!(release(c, |_, _| {})))
            .join()
            .unwrap();
        assert!(
            shared().contains(&index(c)),
            "the freeing thread's slot is shared"
        );
    }

    /// With every slot handed out, the counter of slots never used stays at its end: it
    /// used to go on counting and, after 2^32 refusals, wrap back to slots in use.
    #[test]
    fn past_the_last_slot_the_counter_stays() {
        let _turn = turn();
        let end = (PAGES * PAGE) as u32;
        // The thread of a test that ran before this one may still be ending, and hand its
        // free slots to the shared list while this one runs (its turn is over by then): a
        // round that was given one of them is run again, once that thread is gone.
        let mut got = Vec::new();
        for _ in 0..100 {
            let saved_shared = std::mem::take(&mut *shared());
            let saved = NEXT.swap(end, Ordering::Relaxed);
            got = std::thread::spawn(|| {
                let ids: Vec<Option<u64>> = (0..3).map(|_| alloc(1)).collect();
                for id in ids.iter().flatten() {
                    assert!(release(*id, |_, _| {}));
                }
                ids
            })
            .join()
            .unwrap();
            let after = NEXT.swap(saved, Ordering::Relaxed);
            shared().extend(saved_shared);
            assert_eq!(after, end);
            if got.iter().all(Option::is_none) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(got, [None, None, None]);
    }

    /// A span made by a thread-local's destructor after this thread's free list is gone takes
    /// a freed slot from the shared list, not one never used.
    #[test]
    fn a_span_made_as_its_thread_ends_reuses_a_freed_slot() {
        struct MakesASpan;
        impl Drop for MakesASpan {
            fn drop(&mut self) {
                let id = alloc(5).expect("a slot");
                assert!(release(id, |_, _| {}));
            }
        }
        thread_local! {
            static LATER: MakesASpan = const { MakesASpan };
        }
        let _turn = turn();
        // A freed slot on the shared list, whatever the other tests left.
        let spare = std::thread::spawn(|| {
            let id = alloc(4).expect("a slot");
            assert!(release(id, |_, _| {}));
        });
        spare.join().unwrap();
        assert!(!shared().is_empty());
        let before = NEXT.load(Ordering::Relaxed);
        std::thread::spawn(|| {
            // Registered first, so destroyed after this thread's free list.
            LATER.with(|_| {});
            let id = alloc(6).expect("a slot");
            assert!(release(id, |_, _| {}));
        })
        .join()
        .unwrap();
        assert_eq!(
            NEXT.load(Ordering::Relaxed),
            before,
            "a slot never used was taken"
        );
    }

    #[test]
    fn ids_not_made_here_find_nothing() {
        let _turn = turn();
        let unmade = ((PAGES * PAGE) as u64) << 1;
        for id in [0, 1, 3, u64::MAX, u64::MAX - 1, 1 << 40, unmade] {
            assert!(lock(id).is_none(), "{id}");
            assert!(!release(id, |_, _| panic!("{id}")), "{id}");
        }
    }

    #[test]
    fn threads_locking_one_span_take_turns_and_free_it_once() {
        let _turn = turn();
        let id = alloc(1).expect("a slot");
        let threads = 4;
        for _ in 1..threads {
            add_ref(id);
        }
        let freed = std::sync::atomic::AtomicUsize::new(0);
        let total = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        let mut l = lock(id).expect("open");
                        // A non-atomic read-modify-write under the lock: lost updates would
                        // show in the total.
                        *l.slot_callsite_mut() += 1;
                    }
                    release(id, |_, callsite| {
                        freed.fetch_add(1, Ordering::Relaxed);
                        total.store(callsite, Ordering::Relaxed);
                    });
                });
            }
        });
        assert_eq!(freed.load(Ordering::Relaxed), 1);
        assert_eq!(total.load(Ordering::Relaxed), 1 + threads * 10_000);
        assert!(lock(id).is_none());
    }

    #[test]
    fn many_spans_across_threads_get_distinct_live_ids() {
        let _turn = turn();
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    let ids: Vec<u64> = (0..3 * BATCH + 5)
                        .map(|i| alloc(t * 1000 + i).expect("a slot"))
                        .collect();
                    for (i, &id) in ids.iter().enumerate() {
                        assert_eq!(lock(id).map(|l| l.callsite()), Some(t * 1000 + i));
                    }
                    for &id in &ids {
                        assert!(release(id, |_, _| {}));
                    }
                });
            }
        });
    }

    impl Locked {
        fn slot_callsite_mut(&mut self) -> &mut usize {
            // SAFETY: this guard holds the slot's lock bit.
            unsafe { &mut *self.slot.callsite.get() }
        }
    }
}
