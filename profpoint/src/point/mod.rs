//! Profile points: a named count and total time, gathered by the linker.
//!
//! # Concept
//! A [`Point`] is a `static` that the macros (`#[profile_point]`, [`profile_scope!`],
//! [`define_profile_point!`]) place in one linker section, the way the seed places
//! `struct profile_point` in `.profile.point`. [`all`] is that section as a slice: every point
//! compiled into the program, hit or not, with no registration call and no constructor per
//! point. A point's status (on, off, sampled) is one byte in the static, read relaxed on every
//! call; its counters live in per-thread shards (`shard/`).
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
//! - The hot path is `hot.rs`, whole; this file holds the statics, the settings and the
//!   macros; `async_guard.rs` the async timing; `segment.rs` calls made in segments (a
//!   `tracing` span over a future: one call, its busy and idle time).
//!
//! # Extending
//! A new per-call statistic: a field in `slot::Slot`, written in `hot.rs`'s `leave_on`, summed
//! by `slot::Slot::read`, reported from `profpoint_report::PointReport`.

use crate::clock;
use crate::owned;
use crate::shard::{self, Lease, Shard};
use crate::slot::{Slot, bump};
use crate::tree;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};

mod async_guard;
mod hot;
mod segment;
pub(crate) mod spare;

pub use async_guard::AsyncGuard;
pub use hot::{FnGuard, Guard};
pub use segment::{Segment, SplitCall};

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

/// The points a user sees ([`crate::points`]): all but the hidden ones.
pub(crate) fn listed() -> impl Iterator<Item = &'static Point> {
    all().iter().filter(|p| p.kind() != Kind::Hidden)
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
/// with the number of annotated children. Untimed calls (counted only, or left untimed by
/// sampling) take their cost out of the self time of the intervals around them through their
/// point's stand-ins (`counted`, `skipped`: see [`Point::set_means`]). All 0 while off.
/// Raw ticks; written only by `overhead::set_compensation`.
#[derive(Debug)]
pub(crate) struct Compensation {
    pub(crate) inside: AtomicU64,
    pub(crate) full: AtomicU64,
    pub(crate) counted: AtomicU64,
    pub(crate) skipped: AtomicU64,
}

pub(crate) static COMPENSATION: Compensation = Compensation {
    inside: AtomicU64::new(0),
    full: AtomicU64::new(0),
    counted: AtomicU64::new(0),
    skipped: AtomicU64::new(0),
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
    /// A spare for a point named at run time (`spare.rs`): read as `Hidden` until claimed,
    /// then as `Sync`.
    Spare,
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
    /// The point's mean timed call and its mean self time, in ticks (kept by the overhead
    /// budget's controller; 0: none yet).
    mean_ticks: AtomicU64,
    mean_self_ticks: AtomicU64,
    /// What a counted-only call, and a call sampling leaves untimed, adds to the child time of
    /// the interval around it: the mean self time and the mean call, plus the untimed call's
    /// own cost while compensation is on (see [`Point::set_means`]).
    counted_stand_in: AtomicU64,
    skipped_stand_in: AtomicU64,
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
    /// The call's node in the points tree (`tree.rs`; `tree::NO_NODE`: not in it). In the
    /// token's padding: the token stays 40 bytes.
    node: u32,
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
        node: 0,
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
            mean_self_ticks: AtomicU64::new(0),
            counted_stand_in: AtomicU64::new(0),
            skipped_stand_in: AtomicU64::new(0),
            by_budget: AtomicBool::new(false),
            name,
            resolved: OnceLock::new(),
            file,
            line,
        }
    }

    /// A spare point (`spare.rs`): no name until claimed.
    #[doc(hidden)]
    pub const fn spare() -> Point {
        Point::new(Name::Static(""), Kind::Spare, "", 0)
    }

    /// The claim of a claimed spare point.
    fn claim(&self) -> Option<spare::Claim> {
        if self.kind != Kind::Spare {
            return None;
        }
        spare::claim_of(self.index())
    }

    /// The point's name.
    pub fn name(&self) -> &'static str {
        if self.kind == Kind::Spare {
            return self.claim().map_or("", |c| c.name);
        }
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
        match self.claim() {
            Some(c) => (c.file, c.line),
            None => (self.file, self.line),
        }
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

    /// Sets the mean timed call and mean self time, and from them the stand-ins of untimed
    /// calls: what each adds to the child time of the interval around it, so that the
    /// enclosing point's self time stays its own. A call sampling leaves untimed replaces what
    /// the points nested in it added (see `leave_on`): its stand-in is the mean call. A
    /// counted-only call adds its stand-in as it starts and the points nested in it add their
    /// own as they run, so its stand-in is the mean self time: the mean call counted the
    /// nested points' time twice, and a counted point with annotated children took its
    /// parent's self time to nothing (compensation_split's root read 0% under the budget).
    /// Both plus, while compensation is on, the untimed call's own cost (its clock has no
    /// offset to take it out of, as a timed call's has: without it, a parent of ten counted
    /// children read ~30 ns of self time a call that was profpoint's). A sampled point with no
    /// mean yet adds nothing: the time of the points nested in its untimed call is then all
    /// there is.
    pub(crate) fn set_means(&self, ticks: u64, own: u64) {
        // Relaxed (all): figures read on their own; a call that reads an old one uses a valid
        // figure once.
        self.mean_ticks.store(ticks, Ordering::Relaxed);
        self.mean_self_ticks.store(own, Ordering::Relaxed);
        let counted = COMPENSATION.counted.load(Ordering::Relaxed);
        let skipped = COMPENSATION.skipped.load(Ordering::Relaxed);
        self.counted_stand_in
            .store(own.min(ticks) + counted, Ordering::Relaxed);
        let skipped = if ticks == 0 { 0 } else { ticks + skipped };
        self.skipped_stand_in.store(skipped, Ordering::Relaxed);
    }

    /// Recomputes the stand-ins from the means (compensation was turned on or off).
    pub(crate) fn refresh_stand_ins(&self) {
        // Relaxed: see `set_means`.
        self.set_means(
            self.mean_ticks.load(Ordering::Relaxed),
            self.mean_self_ticks.load(Ordering::Relaxed),
        );
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

    /// What the point times; a spare reads as hidden until claimed, then as sync.
    pub(crate) fn kind(&self) -> Kind {
        match self.kind {
            Kind::Spare if self.claim().is_some() => Kind::Sync,
            Kind::Spare => Kind::Hidden,
            k => k,
        }
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
    /// The size docs/profile-points.md states for a point's static.
    #[test]
    fn a_point_static_is_as_documented() {
        assert_eq!(std::mem::size_of::<super::Point>(), 104);
    }
}
