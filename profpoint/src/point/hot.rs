//! The hot path of a point, in one file: what `start`, `leave`, a guard and `#[profile_point]`'s
//! expansion run on every call, from reading the point's status byte to the seqlock write of
//! its slot, and the cold paths they branch to (a point's first call on a thread, a borrowed
//! shard). What it calls elsewhere is one inline instruction or a few: the clock read
//! (`clock.rs`), the shard's thread-local (`shard::fast_slot`), the slot's seqlock words and
//! the histogram bucket (`slot.rs`, `hist.rs`), owner-only loads and stores (`owned.rs`).

use super::*;

impl Point {
    /// Dense index of this point in [`all`].
    pub(crate) fn index(&self) -> u32 {
        // Relaxed: the value is a pure function of the point's address; racing initialisers
        // store the same number.
        let i = self.index.load(Ordering::Relaxed);
        if i != u32::MAX {
            return i;
        }
        self.index_slow()
    }

    #[cold]
    #[inline(never)]
    fn index_slow(&self) -> u32 {
        let base = all().as_ptr() as usize;
        let me = self as *const Point as usize;
        let i = (me - base) / std::mem::size_of::<Point>();
        assert!(
            i < all().len() && std::ptr::eq(&all()[i], self),
            "profpoint: point {:?} is not in the linker-gathered slice",
            self.name()
        );
        // Relaxed: see `index`.
        self.index.store(i as u32, Ordering::Relaxed);
        i as u32
    }

    /// Starts timing; hand the token to [`Point::leave`] on the same thread.
    #[inline(always)]
    pub fn start(&'static self) -> Token {
        let mut t = Token::OFF;
        self.start_into(&mut t);
        t
    }

    /// [`Point::start`] into `t`, which is off (a segment kept where it is: see
    /// `SplitCall::enter_in`).
    #[inline(always)]
    pub(super) fn start_into(&'static self, t: &mut Token) {
        // Relaxed: see `is_enabled`.
        let status = owned::get8(&self.status);
        if status != OFF {
            self.start_on(status, t);
        }
    }

    /// Starts an enabled call into `t` (which is off). The token is filled in place, field by
    /// field: an unoptimised build copies a returned 40-byte token with `memcpy` each time.
    #[inline(always)]
    fn start_on(&'static self, status: u8, t: &mut Token) {
        // Relaxed: the index is a pure function of the address (see `index`).
        let index = owned::get32(&self.index);
        if status == COUNT && (self.count_in_table(index) || self.count_cold()) {
            // Counted now, in the shard's table (see `enter_on`): the token stays off,
            // so leave has nothing to do.
            return;
        }
        if let Some((shard, slot)) = shard::fast_slot(index) {
            self.start_in(status, index, shard, slot, 0, t);
        } else {
            self.start_cold(status, t);
        }
    }

    #[inline(always)]
    fn start_in(
        &self,
        status: u8,
        index: u32,
        shard: &Shard,
        slot: &Slot,
        flags: u8,
        t: &mut Token,
    ) {
        t.slot = slot;
        t.shard = shard;
        if status == COUNT {
            // Counted at leave; no recursion mark (nothing is timed, nothing to fold).
            self.add_counted_stand_in(shard);
            t.mode = T_COUNTED | flags;
            return;
        }
        // Every mode below is a started call in the points tree (`tree.rs`), which leave
        // takes out of it again; an untimed call's time there is the wall sampler's
        // (`budget/wall.rs`).
        t.node = tree::enter(shard, slot, index);
        // Relaxed: owner-only fields (see shard/). `depth` says whether the point is active
        // on this thread: 0 no, ACTIVE_TIMED by a timed outermost call, ACTIVE_SKIPPED by an
        // outermost call that sampled timing left untimed.
        let active = owned::get32(&slot.depth);
        if status == SAMPLED {
            if active != 0 {
                // Recursion: counted as nested, never timed. Its time is in the outermost
                // call's interval anyway, and timing it would inflate the timed calls (whose
                // durations the estimate scales up) by the clock reads.
                t.mode = T_SKIPPED_NESTED | flags;
                return;
            }
            // Sampling picks among outermost calls only.
            let every = owned::get32(&self.sample_every).max(1);
            // A countdown drawn under a sparser rate is cut to the current one's range.
            let left = owned::get32(&slot.countdown).min(2 * every.min(1 << 30) - 1);
            if left > 1 {
                owned::set32(&slot.countdown, left - 1);
                owned::set32(&slot.depth, ACTIVE_SKIPPED);
                // At leave, the intervals around this call gain the point's stand-in (its mean
                // timed call, and its own cost while compensating: `set_means`; in `t0`,
                // unused by an untimed call) in place of what it really took, which no clock
                // read measured: their self time stays their own.
                t.saved_child = owned::get(&shard.child_acc);
                // Relaxed: see `set_means`.
                t.t0 = self.skipped_stand_in.load(Ordering::Relaxed);
                t.mode = T_SKIPPED | flags;
                return;
            }
            let every = u64::from(every);
            // Uniform on 1..=2N-1 (mean N, so one call in N is timed on average), by a
            // multiply-shift of 32 random bits instead of a division (N <= 2^30, see
            // `set_sampling`, so nothing overflows).
            let next = 1 + (((shard.next_random() >> 32) * (2 * every - 1)) >> 32);
            owned::set32(&slot.countdown, next as u32);
        }
        if active == 0 {
            owned::set32(&slot.depth, ACTIVE_TIMED);
            t.mode = T_TIMED | flags;
        } else {
            t.mode = T_NESTED | flags;
        }
        // The accumulator only grows: the time of points nested in this call is what it
        // gained by the time this call leaves.
        t.saved_child = owned::get(&shard.child_acc);
        t.t0 = shard.now(flags & T_MONO == 0);
    }

    #[cold]
    #[inline(never)]
    fn start_cold(&'static self, status: u8, t: &mut Token) {
        let (shard, slot, flags) = self.slot_cold();
        self.start_in(status, self.index(), shard, slot, flags, t);
    }

    /// This thread's shard and this point's slot, made on first use, with the token flags
    /// they call for (`T_BORROWED`, `T_MONO`). First-use work (the thread's shard, this
    /// point's slot: ~10 us with its page faults) must not land in the intervals of the points
    /// open on this thread: its time goes to the shard's `setup`, which every point's clock
    /// reads subtract, and to the process's own-cost tally in the report.
    #[cold]
    #[inline(never)]
    pub(super) fn slot_cold(&'static self) -> (&'static Shard, &'static Slot, u8) {
        let began = clock::now();
        let index = self.index();
        let current = shard::current();
        if self.kind != Kind::Hidden {
            // The overhead budget's controller starts with the process's first call of a
            // user's point (see `budget::ensure_started`).
            for listener in ON_NEW_SLOT.iter() {
                listener(current.is_none());
            }
        }
        let (shard, mut flags) = match current {
            Some(s) => (s, 0),
            None => match shard::acquire() {
                Lease::Owned(s) => (s, 0),
                Lease::Borrowed(s) => (s, T_BORROWED),
            },
        };
        if !shard.tsc {
            flags |= T_MONO;
        }
        let slot = shard.slot_or_new(index, self.kind == Kind::Hidden);
        let spent = clock::now().saturating_sub(began);
        // The shard's clock is the process clock (`shard.tsc` is a copy of its choice).
        shard::add_setup(shard, spent);
        (shard, slot, flags)
    }

    /// Stops timing and records the call.
    #[inline(always)]
    pub fn leave(&'static self, token: Token) {
        leave_token(token);
    }

    /// What `#[profile_point]` puts first in a synchronous function (after the token's own
    /// local, uninitialised): starts a guard that times the rest of the body and records the call when it drops (returns, `?`, panics). The body
    /// stays the function's own (same inference, drop order, lints, `Location::caller()`,
    /// nested item paths); only this test is inlined into it, and the enabled path is two
    /// calls into code compiled once, here, whatever the user's crate's opt-level or generics.
    #[doc(hidden)]
    #[inline(always)]
    pub fn __enter<'t>(&'static self, token: &'t mut MaybeUninit<Token>) -> FnGuard<'t> {
        // The token lives in its own local of the annotated function, so the guard is a flag
        // and a pointer, returned in registers: off, the flag stays in a register and the
        // token's memory is never touched.
        // Relaxed: see `is_enabled`. The std load, not `owned::get8`: optimised, it becomes one
        // `cmp` with the static's address in the instruction (asm would need it in a register).
        let on = self.status.load(Ordering::Relaxed) != OFF && self.enter_on(token);
        FnGuard { on, token }
    }

    /// The enabled half of [`Point::__enter`], out of line: one copy for every point. Fills
    /// `t` and says whether the guard must leave it.
    ///
    /// `extern "C"`, like [`leave_guard`], only to make it `nounwind` (a panic here aborts;
    /// nothing here panics but a bug): a call that cannot unwind needs no landing pad in the
    /// annotated function. With one, every point inlined into another annotated function
    /// brought a cleanup block that leaves the outer guard into LLVM's inline cost, enough to
    /// keep smallvec's accessors from inlining (docs/budget.md, "The smallvec miss", has the
    /// measured costs, and what a switched-off point still costs there).
    #[inline(never)]
    #[allow(improper_ctypes_definitions)] // never called from C: the ABI is for `nounwind`
    extern "C" fn enter_on(&'static self, t: &mut MaybeUninit<Token>) -> bool {
        // Relaxed: see `is_enabled`. Re-read: the caller's test may be stale, which is fine
        // (a point turned off in between is timed once more).
        let status = owned::get8(&self.status);
        // A counted-only call is done here: the thread's word, a bounds test and two adds,
        // the point's word in the shard's count table, at a fixed offset from the shard
        // (`shard::count_call`: no slot is looked up or made), and the shard's `child_acc`.
        // On x86_64 glibc the thread's shard is one `fs:`-relative load and the function saves
        // nothing but a push for the stack's alignment (`shard::word`: a `thread_local!` cost
        // three register saves here). Every other call is a tail call (a jump: the same
        // arguments) to `enter_started`, which pays that push and its pop (two instructions
        // against the ~190 of a timed call); as a second tail call the counted path paid a
        // jump (smallvec-loop, every point counted: 0.94x the two-jump build, median of 10
        // paired runs).
        if status == COUNT {
            // Counted, once: the guard has nothing to leave.
            if self.count_in_table(owned::get32(&self.index)) {
                return false;
            }
            self.enter_counted_cold(t)
        } else {
            self.enter_started(t)
        }
    }

    /// [`Point::enter_on`]'s counted-only call when the table did not take it: counted there after all
    /// if only the point's index was unknown (its first call in the process), else started.
    #[cold]
    #[inline(never)]
    fn enter_counted_cold(&'static self, t: &mut MaybeUninit<Token>) -> bool {
        if self.count_cold() {
            return false;
        }
        self.enter_started(t)
    }

    /// Counts a counted-only call of this point in this thread's count table
    /// (`shard::count_call`: one word changes, so no seqlock; a reader sees the count before
    /// or after, both consistent with the rest), and gives the intervals around it the point's
    /// stand-in. False, nothing done, without a shard or with the index not known yet.
    #[inline(always)]
    fn count_in_table(&self, index: u32) -> bool {
        match shard::count_call(index) {
            Some(shard) => {
                self.add_counted_stand_in(shard);
                true
            }
            None => false,
        }
    }

    /// A counted-only call's time in the intervals around it: the point's stand-in (its mean
    /// self time, see `set_means`), added to the thread's child-time accumulator as it starts.
    #[inline(always)]
    fn add_counted_stand_in(&self, shard: &Shard) {
        // Relaxed: see `set_means` (std's load: the field is not one of the owner-only words
        // `owned` serves).
        owned::add(
            &shard.child_acc,
            self.counted_stand_in.load(Ordering::Relaxed),
        );
    }

    /// Counts a counted-only call in this thread's table once the point's index is known (the
    /// hot path reads the index as stored, unknown before the point's first call in the
    /// process: without this, that call would make a slot). False without a shard.
    #[cold]
    #[inline(never)]
    fn count_cold(&'static self) -> bool {
        self.count_in_table(self.index())
    }

    /// The rest of [`Point::enter_on`]: every call but a counted-only one on a thread with a
    /// shard.
    #[inline(never)]
    #[allow(improper_ctypes_definitions)] // never called from C: the ABI is for `nounwind`
    extern "C" fn enter_started(&'static self, t: &mut MaybeUninit<Token>) -> bool {
        // Relaxed: see `is_enabled` (read again: cheaper than passing it through `enter_on`'s
        // jump, which measured two more instructions a call and no gain).
        let status = owned::get8(&self.status);
        if status == OFF {
            return false;
        }
        let t = init_token(t);
        // `start_on` inlined by hand, so that the cold path is a tail call (nothing is live
        // after it, so the common path saves no registers).
        let index = owned::get32(&self.index);
        match shard::fast_slot(index) {
            Some((shard, slot)) => {
                // Every mode `start_in` leaves is a started one (a counted call, the status
                // changed since `enter_on` read it, is started too: `start_in` counts it at
                // leave).
                self.start_in(status, index, shard, slot, 0, t);
                true
            }
            None => self.enter_cold(status, t),
        }
    }

    /// [`Point::enter_on`]'s first call on this thread (or without the TSC).
    #[cold]
    #[inline(never)]
    fn enter_cold(&'static self, status: u8, t: &mut Token) -> bool {
        self.start_cold(status, t);
        t.mode != T_OFF
    }

    /// Starts a guard that leaves the point when dropped (also during unwinding).
    #[inline(always)]
    pub fn guard(&'static self) -> Guard {
        let mut g = Guard {
            on: false,
            token: MaybeUninit::uninit(),
        };
        // Relaxed: see `is_enabled`.
        if owned::get8(&self.status) != OFF {
            g.on = self.enter_on(&mut g.token);
        }
        g
    }
}

/// An off token in `t`, written field by field (not `t.write(Token::OFF)`: unoptimised, that
/// is five `memcpy` calls).
#[inline(always)]
fn init_token(t: &mut MaybeUninit<Token>) -> &mut Token {
    let p = t.as_mut_ptr();
    // SAFETY: `p` points to writable, aligned memory for a `Token`; each assignment writes a
    // `Copy` field without reading the old (uninitialised) value, and after them every field
    // is initialised (`_not_send` is zero-sized), so the reference is to a valid `Token`.
    unsafe {
        (*p).t0 = 0;
        (*p).saved_child = 0;
        (*p).slot = std::ptr::null();
        (*p).shard = std::ptr::null();
        (*p).mode = T_OFF;
        (*p).node = 0;
        &mut *p
    }
}

/// Records a started call (every token mode but off).
#[inline(always)]
fn leave_on(token: &Token) {
    // SAFETY: the token was made by `start_in` on this thread (Token is !Send), from a
    // shard and slot that are never freed.
    let (shard, slot) = unsafe { (&*token.shard, &*token.slot) };
    let mode = token.mode & !(T_BORROWED | T_MONO);
    if mode == T_SKIPPED {
        tree_leave_untimed(shard, token);
        // Relaxed: owner-only (see shard/).
        owned::set32(&slot.depth, 0);
        // As if timed at the point's stand-in (see `start_in`): what points nested in this call
        // added is part of that. No mean yet (0): the nested points' time is all there is.
        if token.t0 != 0 {
            owned::set(&shard.child_acc, token.saved_child.wrapping_add(token.t0));
        }
        slot.write_begin();
        bump(&slot.skipped, 1);
        slot.write_end();
    } else if mode == T_SKIPPED_NESTED {
        tree_leave_untimed(shard, token);
        slot.write_begin();
        bump(&slot.nested, 1);
        slot.write_end();
    } else if mode == T_COUNTED {
        // One word: no seqlock needed (see `enter_on`).
        bump(&slot.skipped, 1);
    } else {
        let raw = shard.now(token.mode & T_MONO == 0).saturating_sub(token.t0);
        let (dur, self_ticks) = close_interval(shard, token, raw);
        // The points tree: this call's node gets it; the parent's node and point are current
        // again (see `tree.rs`; `NO_NODE`: the tree was full, nothing to leave).
        if token.node != tree::NO_NODE {
            let n = tree::node(shard, token.node);
            tree::add_timed(n, dur, self_ticks);
            tree::restore(shard, n);
        }
        if mode == T_TIMED {
            owned::set32(&slot.depth, 0);
        }
        slot.write_begin();
        // Wrapping: `children` holds estimates where nested points were left untimed (their
        // mean call), which may exceed this interval; the sum stays unbiased only if such a
        // call's self time may be negative (a two's-complement word: see `Scalars::self_signed`).
        bump(&slot.self_ticks, self_ticks);
        if mode == T_TIMED {
            record_interval(slot, dur);
        } else {
            bump(&slot.nested, 1);
        }
        slot.write_end();
    }
    if token.mode & T_BORROWED != 0 {
        shard::release(shard);
    }
}

/// The end of a timed interval, a whole call's (`leave_on`) or a segment's (`segment.rs`):
/// its duration less the in-interval cost of compensation, its self time (less what the
/// points nested in it added), the intervals around it told its duration, and, while
/// compensating, this call's whole cost taken out of those still open. Returns (duration,
/// self time).
#[inline(always)]
pub(super) fn close_interval(shard: &Shard, token: &Token, raw: u64) -> (u64, u64) {
    // Overhead compensation (0 and 0 while off; see `Compensation`).
    // Relaxed: constants, see `overhead::set_compensation`.
    let inside = COMPENSATION.inside.load(Ordering::Relaxed);
    let full = COMPENSATION.full.load(Ordering::Relaxed);
    let dur = raw.saturating_sub(inside);
    // Relaxed: owner-only fields (see shard/).
    let children = owned::get(&shard.child_acc).wrapping_sub(token.saved_child);
    owned::set(&shard.child_acc, token.saved_child.wrapping_add(dur));
    let self_ticks = dur.wrapping_sub(children);
    if full != 0 {
        // This call's whole cost leaves the intervals still open around it.
        bump(&shard.setup, full);
    }
    (dur, self_ticks)
}

/// An untimed call leaves the points tree: one call on its node, the parent current again.
#[inline(always)]
fn tree_leave_untimed(shard: &Shard, token: &Token) {
    if token.node != tree::NO_NODE {
        let n = tree::node(shard, token.node);
        tree::add_untimed(n);
        tree::restore(shard, n);
    }
}

/// Adds one timed interval to a slot (inside the caller's seqlock write).
#[inline(always)]
pub(super) fn record_interval(slot: &Slot, dur: u64) {
    bump(&slot.total, dur);
    record_timed_call(slot, dur);
}

/// Adds one timed call lasting `dur` to a slot's count, min, max and distribution, but not to
/// its total (inside the caller's seqlock write): a call made in segments added each
/// segment's time to the total as it ended (`segment.rs`).
#[inline(always)]
pub(super) fn record_timed_call(slot: &Slot, dur: u64) {
    bump(&slot.timed, 1);
    // Relaxed: owner-only fields.
    if dur < owned::get(&slot.min) {
        owned::set(&slot.min, dur);
    }
    if dur > owned::get(&slot.max) {
        owned::set(&slot.max, dur);
    }
    slot.record_hist(dur);
}

/// Leaves its point when dropped: returns, `?`, `break` and panics all count.
///
/// 48 bytes on the stack of the timed function (the token and a flag; its point is not
/// needed to leave).
#[must_use = "the point is left when the guard drops: bind it with `let _g = ...`"]
pub struct Guard {
    /// Whether `token` holds a started call (then it is initialised).
    on: bool,
    /// Never dropped as a token: the guard's own drop leaves it.
    token: MaybeUninit<Token>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard").field("on", &self.on).finish()
    }
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.on {
            // SAFETY: `on` is set only by `enter_on`, after it initialised the token.
            leave_guard(unsafe { self.token.assume_init_ref() });
        }
    }
}

/// What `#[profile_point]` declares first in a synchronous function: the call's token in a
/// local of its own (`MaybeUninit`, filled only when the point is on) and this guard, which
/// leaves it when dropped (returns, `?`, panics).
#[doc(hidden)]
#[must_use = "the point is left when the guard drops"]
pub struct FnGuard<'t> {
    /// Whether `token` holds a started call (then it is initialised).
    on: bool,
    token: &'t MaybeUninit<Token>,
}

impl std::fmt::Debug for FnGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnGuard").field("on", &self.on).finish()
    }
}

impl Drop for FnGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.on {
            // SAFETY: `on` is set only by `enter_on`, after it initialised the token.
            leave_guard(unsafe { self.token.assume_init_ref() });
        }
    }
}

/// The enabled half of a guard's drop, out of line: one copy for every point. The token is
/// read in place (never moved: see `start_on`), and never dropped (a `MaybeUninit`).
/// `extern "C"` to be `nounwind`: see [`Point::enter_on`].
#[inline(never)]
#[allow(improper_ctypes_definitions)] // never called from C: the ABI is for `nounwind`
extern "C" fn leave_guard(token: &Token) {
    leave_on(token);
}

/// Records a token's call (the body of [`Point::leave`], which needs no point).
#[inline(always)]
fn leave_token(token: Token) {
    if token.mode == T_OFF {
        return;
    }
    leave_on(&token);
    // Left: its drop (which handles tokens never left) must not run.
    std::mem::forget(token);
}

impl Drop for Token {
    /// A token dropped without [`Point::leave`] (an early return between start and leave)
    /// records nothing, but must not leave its point marked active on this thread: every
    /// later call would count as recursion and record no time.
    fn drop(&mut self) {
        let mode = self.mode & !(T_BORROWED | T_MONO);
        if mode == T_TIMED || mode == T_SKIPPED {
            // SAFETY: a token that is not off was made by `start_in` on this thread (it is
            // not Send) from a slot that is never freed.
            let slot = unsafe { &*self.slot };
            // Relaxed: owner-only.
            slot.depth.store(0, Ordering::Relaxed);
        }
        if mode != T_OFF && mode != T_COUNTED && self.node != tree::NO_NODE {
            // SAFETY: as above, for the shard. The parent's node and point are current again
            // (nothing is recorded on this call's node).
            let shard = unsafe { &*self.shard };
            tree::restore(shard, tree::node(shard, self.node));
        }
        if self.mode & T_BORROWED != 0 {
            // SAFETY: as above, for the borrowed shard, which goes back to the free list.
            shard::release(unsafe { &*self.shard });
        }
    }
}

impl Point {
    /// Starts a timed interval whatever the point's sampling, as an on point's call starts:
    /// a later segment of a call already timed as a whole (`segment.rs`). The status is the
    /// caller's to check (not off, not counted-only).
    #[inline]
    pub(super) fn start_timed_into(&'static self, t: &mut Token) {
        self.start_on(ON, t);
    }
}
