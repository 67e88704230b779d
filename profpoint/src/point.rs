//! Profile points: a named count and total time, gathered by the linker.
//!
//! # Concept
//! A [`Point`] is a `static` that the macros (`#[profile_point]`, [`profile_scope!`],
//! [`define_profile_point!`]) place in one linker section, the way the seed places
//! `struct profile_point` in `.profile.point`. [`all`] is that section as a slice: every point
//! compiled into the program, hit or not, with no registration call and no constructor per
//! point. A point's status (on, off, sampled) is one byte in the static, read relaxed on every
//! call; its counters live in per-thread shards (`shard.rs`).
//!
//! # Mechanism
//! - [`Point::start`] reads the status; off costs that load and one predictable branch and
//!   reads no clock. On, it finds this thread's slot (a thread-local load, the point's dense
//!   index, a table load: each a cold path the first time), raises the slot's recursion depth,
//!   saves and clears the thread's child-time accumulator, and reads the clock.
//! - [`Point::leave`] reads the clock and, inside the slot's seqlock, adds the interval:
//!   an outermost call adds to `total`, `min`, `max` and the distribution; a re-entered call
//!   (recursion) only to `nr`, so `total` never exceeds the thread's wall time. Every call adds
//!   its interval minus its children's to `self`, and its whole interval to its parent's
//!   child-time accumulator. This needs start/leave to nest like a stack on each thread, which
//!   the guards guarantee; hand-written tokens must be left in reverse order of starting.
//! - Sampled mode counts every call but reads the clock on one call in about N, chosen at
//!   random (a countdown drawn uniformly from 1..2N-1), so totals are estimated without bias.
//! - Async points ([`AsyncGuard`]) time from first poll to completion on whichever threads poll
//!   the future, and are not folded for recursion: concurrent futures overlap.
//!
//! # Extending
//! A new per-call statistic: a field in `shard::Slot`, written in `record`, summed by
//! `shard::Slot::read`, reported from `report::PointReport`.

use crate::clock;
use crate::hist;
use crate::owned;
use crate::shard::{self, Lease, Shard};
use crate::slot::{Slot, bump};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};

/// The linker-gathered section of every point (the seed's `.profile.point`).
#[cfg(not(feature = "off"))]
#[linkme::distributed_slice]
pub static POINTS: [Point];

/// The `off` feature: no point exists, and no linker section is declared (a declared one is
/// retained, which links the runtime's code around it into the program).
#[cfg(feature = "off")]
pub static POINTS: [Point; 0] = [];

/// Every profile point compiled into the program, in link order.
pub(crate) fn all() -> &'static [Point] {
    &POINTS
}

/// What a user's point calls on its first call on a thread (the cold path that gives it a
/// slot), with whether the thread was new to points (had no shard yet). The overhead budget
/// registers its start here (`budget::ensure_started`), so the hot path's file names nothing
/// above it; the linker gathers the listeners.
#[cfg(not(feature = "off"))]
#[linkme::distributed_slice]
pub(crate) static ON_NEW_SLOT: [fn(bool)];

/// The `off` feature declares no linker section (see [`POINTS`]).
#[cfg(feature = "off")]
pub(crate) static ON_NEW_SLOT: [fn(bool); 0] = [];

/// A shard has a slot pointer for every point (see `shard::Sizes`).
#[cfg(not(feature = "off"))]
#[linkme::distributed_slice(shard::SIZES)]
static SHARD_SLOTS: fn(&mut shard::Sizes) = |s| s.slots = all().len();

/// Overhead compensation (`PROFPOINT_COMPENSATE`, [`crate::compensate`]): while on, every timed
/// call records its interval minus the in-interval cost (`inside`) and, as it leaves, adds a
/// whole call's cost (`full`) to its thread's clock offset, so the intervals of the points
/// around it exclude that call's instrumentation: a parent's total and self time do not grow
/// with the number of annotated children. Both 0 while off. Raw ticks; written only by
/// `overhead::set_compensation`.
#[derive(Debug)]
pub(crate) struct Compensation {
    pub(crate) inside: AtomicU64,
    pub(crate) full: AtomicU64,
}

pub(crate) static COMPENSATION: Compensation = Compensation {
    inside: AtomicU64::new(0),
    full: AtomicU64::new(0),
};

/// A point's run-time status byte.
const OFF: u8 = 0;
const ON: u8 = 1;
const SAMPLED: u8 = 2;
/// Every call counted, none timed (no clock read, no recursion mark): the cheapest on state.
const COUNT: u8 = 3;

/// What kind of code a point times; decides how the report reads its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum Kind {
    /// A synchronous function or scope: recursion folded, self time tracked.
    Sync,
    /// An `async fn`: first poll to completion, not folded.
    Async,
    /// Used by profpoint itself (overhead calibration); never reported.
    Hidden,
}

/// Where a point's name comes from.
#[derive(Debug, Clone, Copy)]
#[doc(hidden)]
pub enum Name {
    /// Given by the user, or the `define_profile_point!` identifier.
    Static(&'static str),
    /// The type name of a marker `fn` item nested in the annotated function, minus the
    /// marker's own last path segment: `crate::module::Type::method`. `type_name` is not
    /// `const`, so it is resolved on first use.
    Marker(fn() -> &'static str),
}

/// A named profile point. Create them with the macros; read them with [`crate::snapshot`].
#[derive(Debug)]
pub struct Point {
    status: AtomicU8,
    kind: Kind,
    /// Dense index of this point in [`all`], `u32::MAX` until first use.
    index: AtomicU32,
    /// In sampled mode: time one call in about this many.
    sample_every: AtomicU32,
    /// The point's recent mean timed call, in ticks (kept by the overhead budget's
    /// controller): what an untimed call adds to the intervals around it.
    mean_ticks: AtomicU64,
    /// Whether the status was last set by the overhead budget's controller (cleared by every
    /// public setter): the controller manages only points in a state it gave them.
    by_budget: AtomicBool,
    name: Name,
    resolved: OnceLock<&'static str>,
    file: &'static str,
    line: u32,
}

/// The time a point started, to hand back to [`Point::leave`].
///
/// Not `Send`: the counters it refers to belong to the thread that started it.
#[must_use = "a started point must be left (or use a guard: profile_scope!)"]
#[derive(Debug)]
pub struct Token {
    t0: u64,
    saved_child: u64,
    slot: *const Slot,
    shard: *const Shard,
    mode: u8,
    _not_send: PhantomData<*const ()>,
}

/// Token modes.
const T_OFF: u8 = 0;
const T_TIMED: u8 = 1;
const T_NESTED: u8 = 2;
const T_SKIPPED: u8 = 3;
/// Untimed because an enclosing call of the same point is untimed (sampled mode).
const T_SKIPPED_NESTED: u8 = 4;
/// Counted only (the point's status is `COUNT`).
const T_COUNTED: u8 = 5;
/// `Slot::depth` values: the point is active on this thread, timed or skipped.
const ACTIVE_TIMED: u32 = 1;
const ACTIVE_SKIPPED: u32 = 2;
/// Flag: the shard was borrowed for this call and goes back to the free list at leave.
const T_BORROWED: u8 = 0x80;
/// Flag: `t0` is from the monotonic clock (no invariant TSC); only the general path sets it.
const T_MONO: u8 = 0x40;

impl Token {
    const OFF: Token = Token {
        t0: 0,
        saved_child: 0,
        slot: std::ptr::null(),
        shard: std::ptr::null(),
        mode: T_OFF,
        _not_send: PhantomData,
    };
}

impl Point {
    #[doc(hidden)]
    pub const fn new(name: Name, kind: Kind, file: &'static str, line: u32) -> Point {
        Point {
            status: AtomicU8::new(ON),
            kind,
            index: AtomicU32::new(u32::MAX),
            sample_every: AtomicU32::new(1),
            mean_ticks: AtomicU64::new(0),
            by_budget: AtomicBool::new(false),
            name,
            resolved: OnceLock::new(),
            file,
            line,
        }
    }

    /// The point's name.
    pub fn name(&self) -> &'static str {
        match self.name {
            Name::Static(s) => s,
            Name::Marker(f) => self.resolved.get_or_init(|| {
                // `a::b::Type::method::__profpoint_name`, or inside an `async fn`
                // `a::b::f::{{closure}}::__profpoint_name`: keep the function's own path.
                let full = f();
                let mut name = full.rsplit_once("::").map_or(full, |(head, _marker)| head);
                while let Some(head) = name.strip_suffix("::{{closure}}") {
                    name = head;
                }
                name
            }),
        }
    }

    /// Source file and line of the point's definition.
    pub fn location(&self) -> (&'static str, u32) {
        (self.file, self.line)
    }

    /// Whether the point times anything right now.
    pub fn is_enabled(&self) -> bool {
        // Relaxed: a status change needs no ordering with other memory; a call racing with it
        // may go either way, which is the documented behaviour.
        self.status.load(Ordering::Relaxed) != OFF
    }

    /// `Some(n)` when the point times one call in about `n` (sampled mode); `Some(0)` when it
    /// counts every call and times none ([`Point::set_counting`]).
    pub fn sampling(&self) -> Option<u32> {
        // Relaxed: see `is_enabled`.
        match self.status.load(Ordering::Relaxed) {
            SAMPLED => Some(self.sample_every.load(Ordering::Relaxed)),
            COUNT => Some(0),
            _ => None,
        }
    }

    /// Sets the mean timed call that stands for an untimed one in the intervals around it.
    pub(crate) fn set_mean_ticks(&self, ticks: u64) {
        // Relaxed: a figure read on its own; a call that reads the old one uses a valid mean.
        self.mean_ticks.store(ticks, Ordering::Relaxed);
    }

    /// Counts every call and times none: no clock read, so an on point's cheapest state, for
    /// code too hot to time (its `nr` stays exact; its times are those recorded before).
    pub fn set_counting(&self) {
        // Relaxed: see `is_enabled`.
        self.by_budget.store(false, Ordering::Relaxed);
        self.status.store(COUNT, Ordering::Relaxed);
    }

    /// Runs `set` (one of the public setters) for the overhead budget's controller, and marks
    /// the state as the controller's: a later public setter (the user's) takes it back.
    pub(crate) fn set_by_budget(&self, set: impl FnOnce(&Point)) {
        set(self);
        // Relaxed: a hint for the controller's next round, read by the controller alone.
        self.by_budget.store(true, Ordering::Relaxed);
    }

    /// Whether the status is as the budget's controller last set it (no public setter since).
    pub(crate) fn is_by_budget(&self) -> bool {
        // Relaxed: see `set_by_budget`.
        self.by_budget.load(Ordering::Relaxed)
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Turns the point on or off.
    pub fn set_enabled(&self, on: bool) {
        // Relaxed: see `is_enabled`. Turning on keeps sampled mode off; use `set_sampling`.
        self.by_budget.store(false, Ordering::Relaxed);
        self.status
            .store(if on { ON } else { OFF }, Ordering::Relaxed);
    }

    /// Times one call in about `every` (1 = every call); the point is turned on.
    pub fn set_sampling(&self, every: u32) {
        // At most 2^30: the countdown arithmetic stays in range (and one in a billion calls is
        // as sparse as sampling needs to be).
        let every = every.clamp(1, 1 << 30);
        // Relaxed: the rate is read by the sampling path only after it saw SAMPLED; a call
        // that reads an older rate still draws a valid countdown.
        self.sample_every.store(every, Ordering::Relaxed);
        self.by_budget.store(false, Ordering::Relaxed);
        self.status
            .store(if every == 1 { ON } else { SAMPLED }, Ordering::Relaxed);
    }

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
        // Relaxed: see `is_enabled`.
        let status = owned::get8(&self.status);
        if status != OFF {
            self.start_on(status, &mut t);
        }
        t
    }

    /// Starts an enabled call into `t` (which is off). The token is filled in place, field by
    /// field: an unoptimised build copies a returned 40-byte token with `memcpy` each time.
    #[inline(always)]
    fn start_on(&'static self, status: u8, t: &mut Token) {
        // Relaxed: the index is a pure function of the address (see `index`).
        let index = owned::get32(&self.index);
        if let Some((shard, slot)) = shard::fast_slot(index) {
            self.start_in(status, shard, slot, 0, t);
        } else {
            self.start_cold(status, t);
        }
    }

    #[inline(always)]
    fn start_in(&self, status: u8, shard: &Shard, slot: &Slot, flags: u8, t: &mut Token) {
        t.slot = slot;
        t.shard = shard;
        if status == COUNT {
            // Counted at leave; no recursion mark (nothing is timed, nothing to fold). The
            // intervals around it gain the point's mean timed call (see the skipped branch).
            // Relaxed: see `set_mean_ticks` (std's load: the field is not one of the owner-only
            // words `owned` serves).
            owned::add(&shard.child_acc, self.mean_ticks.load(Ordering::Relaxed));
            t.mode = T_COUNTED | flags;
            return;
        }
        // Relaxed: owner-only fields (see shard.rs). `depth` says whether the point is active
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
                // At leave, the intervals around this call gain the point's mean timed call
                // (in `t0`, unused by an untimed call) in place of what it really took, which
                // no clock read measured: their self time stays their own.
                t.saved_child = owned::get(&shard.child_acc);
                // Relaxed: see `set_mean_ticks`.
                t.t0 = self.mean_ticks.load(Ordering::Relaxed);
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
        self.start_in(status, shard, slot, flags, t);
    }

    /// This thread's shard and this point's slot, made on first use, with the token flags
    /// they call for (`T_BORROWED`, `T_MONO`). First-use work (the thread's shard, this
    /// point's slot: ~10 us with its page faults) must not land in the intervals of the points
    /// open on this thread: its time goes to the shard's `setup`, which every point's clock
    /// reads subtract, and to the process's own-cost tally in the report.
    #[cold]
    #[inline(never)]
    fn slot_cold(&'static self) -> (&'static Shard, &'static Slot, u8) {
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
    /// brought a cleanup block that leaves the outer guard into LLVM's inline cost (smallvec's
    /// `triple_mut`, annotated with the points of the five accessors it inlines: 755 against
    /// a threshold of 325; 590 without the landing pads). See BENCHMARKS.md, "Real crates",
    /// for what a switched-off point still costs there, and why.
    #[inline(never)]
    #[allow(improper_ctypes_definitions)] // never called from C: the ABI is for `nounwind`
    extern "C" fn enter_on(&'static self, t: &mut MaybeUninit<Token>) -> bool {
        // Relaxed: see `is_enabled`. Re-read: the caller's test may be stale, which is fine
        // (a point turned off in between is timed once more).
        let status = owned::get8(&self.status);
        if status == OFF {
            return false;
        }
        // `start_on` inlined by hand, so that the cold path is a tail call (nothing is live
        // after it, so the common path saves no registers).
        let index = owned::get32(&self.index);
        let fast = shard::fast_slot(index);
        if let Some((shard, slot)) = fast
            && status == COUNT
        {
            // Counted here, once: the guard has nothing to leave. One word changes, so no
            // seqlock: a reader sees the count before or after, both consistent with the rest.
            bump(&slot.skipped, 1);
            // The intervals around it gain the point's mean timed call (see `start_in`).
            // Relaxed: see `set_mean_ticks` (std's load: the field is not one of the owner-only
            // words `owned` serves).
            owned::add(&shard.child_acc, self.mean_ticks.load(Ordering::Relaxed));
            return false;
        }
        let t = init_token(t);
        match fast {
            Some((shard, slot)) => {
                // Every mode `start_in` leaves is a started one.
                self.start_in(status, shard, slot, 0, t);
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

    /// Starts the timing of one `async` call (see [`AsyncGuard`]); call it when the call
    /// starts running (its first poll).
    #[inline]
    pub fn async_guard(&'static self) -> AsyncGuard {
        AsyncGuard {
            point: self,
            t0: None,
        }
    }

    /// What `#[profile_point]` puts first in an `async fn`'s body: a guard that lives in the
    /// future's state from its first poll (when the body starts) to its completion, or its
    /// drop if it is cancelled. `Send` and `Sync`, so the future keeps its auto traits; the
    /// body stays the function's own.
    #[doc(hidden)]
    #[inline]
    pub fn __async_enter(&'static self) -> AsyncGuard {
        let mut g = self.async_guard();
        g.poll();
        g
    }

    /// Records one completed async call of `dur` ticks on the current thread.
    fn record_async(&'static self, dur: u64) {
        let index = self.index();
        // `slot_for_read`, not `slot`: the latter serves no slot without the TSC.
        let fast = shard::current().and_then(|s| Some((s, s.slot_for_read(index as usize)?)));
        let (shard, slot, borrowed) = match fast {
            Some((shard, slot)) => (shard, slot, false),
            None => {
                // First use on this thread: outside the intervals open here.
                let (shard, slot, flags) = self.slot_cold();
                (shard, slot, flags & T_BORROWED != 0)
            }
        };
        slot.write_begin();
        bump(&slot.self_ticks, dur);
        record_interval(slot, dur);
        slot.write_end();
        if borrowed {
            shard::release(shard);
        }
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
        // Relaxed: owner-only (see shard.rs).
        owned::set32(&slot.depth, 0);
        // As if timed at the point's mean (see `start_in`): what points nested in this call
        // added is part of that. No mean yet (0): the nested points' time is all there is.
        if token.t0 != 0 {
            owned::set(&shard.child_acc, token.saved_child.wrapping_add(token.t0));
        }
        slot.write_begin();
        bump(&slot.skipped, 1);
        slot.write_end();
    } else if mode == T_SKIPPED_NESTED {
        slot.write_begin();
        bump(&slot.nested, 1);
        slot.write_end();
    } else if mode == T_COUNTED {
        // One word: no seqlock needed (see `enter_on`).
        bump(&slot.skipped, 1);
    } else {
        let raw = shard.now(token.mode & T_MONO == 0).saturating_sub(token.t0);
        // Overhead compensation (0 and 0 while off; see `Compensation`).
        // Relaxed: constants, see `overhead::set_compensation`.
        let inside = COMPENSATION.inside.load(Ordering::Relaxed);
        let full = COMPENSATION.full.load(Ordering::Relaxed);
        let dur = raw.saturating_sub(inside);
        // Relaxed: owner-only fields (see shard.rs).
        let children = owned::get(&shard.child_acc).wrapping_sub(token.saved_child);
        owned::set(&shard.child_acc, token.saved_child.wrapping_add(dur));
        if full != 0 {
            // This call's whole cost leaves the intervals still open around it.
            bump(&shard.setup, full);
        }
        if mode == T_TIMED {
            owned::set32(&slot.depth, 0);
        }
        slot.write_begin();
        // Wrapping: `children` holds estimates where nested points were left untimed (their
        // mean call), which may exceed this interval; the sum stays unbiased only if such a
        // call's self time may be negative (a two's-complement word: see `Scalars::self_signed`).
        bump(&slot.self_ticks, dur.wrapping_sub(children));
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

/// Adds one timed interval to a slot (inside the caller's seqlock write).
#[inline(always)]
fn record_interval(slot: &Slot, dur: u64) {
    bump(&slot.timed, 1);
    bump(&slot.total, dur);
    // Relaxed: owner-only fields.
    if dur < owned::get(&slot.min) {
        owned::set(&slot.min, dur);
    }
    if dur > owned::get(&slot.max) {
        owned::set(&slot.max, dur);
    }
    // Indexed with a bounds check: built into the language (no call at opt-level 0), and
    // `hist::index` never exceeds the last bucket (`hist::tests`), so it never fails.
    bump(&slot.hist[hist::index(dur)], 1);
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
        if self.mode & T_BORROWED != 0 {
            // SAFETY: as above, for the borrowed shard, which goes back to the free list.
            shard::release(unsafe { &*self.shard });
        }
    }
}

/// Times one `async` call from its first poll to its completion (or its drop, if it is
/// cancelled after starting), on whichever threads poll it. Used by `#[profile_point]` on
/// `async fn`.
#[derive(Debug)]
pub struct AsyncGuard {
    point: &'static Point,
    t0: Option<u64>,
}

impl AsyncGuard {
    /// Marks a poll: the first one starts the clock (if the point is on at that moment).
    #[inline]
    pub fn poll(&mut self) {
        if self.t0.is_none() && self.point.is_enabled() {
            self.t0 = Some(clock::now());
        }
    }
}

impl Drop for AsyncGuard {
    fn drop(&mut self) {
        if let Some(t0) = self.t0 {
            self.point.record_async(clock::now().saturating_sub(t0));
        }
    }
}

/// Times until the end of the enclosing scope: `let _g = profile_scope!("name");`.
///
/// The name must be a string literal (it is stored in a `static`). Expands to the bare code
/// under the `off` feature.
#[cfg(not(feature = "off"))]
#[macro_export]
macro_rules! profile_scope {
    ($name:literal $(,)?) => {{
        const _: () = $crate::__private::check_name($name);
        #[$crate::__private::linkme::distributed_slice($crate::__private::POINTS)]
        #[linkme(crate = $crate::__private::linkme)]
        static __PROFPOINT_SCOPE: $crate::__private::Point = $crate::__private::Point::new(
            $crate::__private::Name::Static($name),
            $crate::__private::Kind::Sync,
            $crate::__private::core::file!(),
            $crate::__private::core::line!(),
        );
        __PROFPOINT_SCOPE.guard()
    }};
}

/// Times until the end of the enclosing scope (compiled out by the `off` feature).
#[cfg(feature = "off")]
#[macro_export]
macro_rules! profile_scope {
    ($name:literal $(,)?) => {
        $crate::__private::OffToken
    };
}

/// Defines a named point for explicit `start`/`leave`, the seed's `DEFINE_PROFILE_POINT`:
///
/// ```
/// profpoint::define_profile_point!(FLUSH_TLB_OTHERS);
/// let t = FLUSH_TLB_OTHERS.start();
/// // ... the code to time ...
/// FLUSH_TLB_OTHERS.leave(t);
/// ```
///
/// The point is named after the identifier; `define_profile_point!(pub NAME, "display name")`
/// sets the visibility and the name.
#[cfg(not(feature = "off"))]
#[macro_export]
macro_rules! define_profile_point {
    ($vis:vis $ident:ident $(,)?) => {
        $crate::define_profile_point!($vis $ident, $crate::__private::core::stringify!($ident));
    };
    ($vis:vis $ident:ident, $name:expr $(,)?) => {
        const _: () = $crate::__private::check_name($name);
        #[$crate::__private::linkme::distributed_slice($crate::__private::POINTS)]
        #[linkme(crate = $crate::__private::linkme)]
        $vis static $ident: $crate::__private::Point = $crate::__private::Point::new(
            $crate::__private::Name::Static($name),
            $crate::__private::Kind::Sync,
            $crate::__private::core::file!(),
            $crate::__private::core::line!(),
        );
    };
}

/// Defines a named point (compiled out by the `off` feature: `start`/`leave` do nothing).
#[cfg(feature = "off")]
#[macro_export]
macro_rules! define_profile_point {
    ($vis:vis $ident:ident $(,)?) => {
        $vis static $ident: $crate::__private::OffPoint = $crate::__private::OffPoint;
    };
    ($vis:vis $ident:ident, $name:expr $(,)?) => {
        $vis static $ident: $crate::__private::OffPoint = $crate::__private::OffPoint;
    };
}

/// What `define_profile_point!` defines under the `off` feature: every method is empty.
#[doc(hidden)]
#[derive(Debug)]
pub struct OffPoint;

/// The token of an [`OffPoint`]: a value, not `()`, so that `let t = P.start();` lints alike
/// (no `let_unit_value`) whether profiling is compiled in or out.
#[doc(hidden)]
#[derive(Debug)]
#[must_use = "a started point must be left (or use a guard: profile_scope!)"]
pub struct OffToken;

impl OffPoint {
    /// Does nothing.
    #[inline(always)]
    pub fn start(&self) -> OffToken {
        OffToken
    }
    /// Does nothing.
    #[inline(always)]
    pub fn leave(&self, _token: OffToken) {}
}

#[cfg(all(test, not(loom)))]
mod size_tests {
    /// The size ARCHITECTURE.md states for a point's static.
    #[test]
    fn a_point_static_is_as_documented() {
        assert_eq!(std::mem::size_of::<super::Point>(), 80);
    }
}
