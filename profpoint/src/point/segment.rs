//! Calls made in segments: one call of a point whose time is spent in several intervals,
//! maybe on several threads (a `tracing` span over a future, entered on every poll).
//!
//! # Mechanism
//! - A [`SplitCall`] is the call's state, kept by its owner (the span) and handed to each
//!   segment's [`SplitCall::enter`] and [`SplitCall::exit`] and, once, to
//!   [`SplitCall::finish`]. Each part is recorded on the thread where it happens, in that
//!   thread's shard: shards stay written by their own thread alone.
//! - A segment is an interval like a call's on its thread: it starts with the hot path's own
//!   start, takes part in the points tree, the child-time accumulator and self time, and adds
//!   its duration to the point's `total` and `self` (and its node's), but adds no call, no
//!   min, max or distribution entry.
//! - The first segment decides the call as a call's start does: timed (on, or picked by
//!   sampling), nested (the point is active on the thread: recursion), untimed (left untimed
//!   by sampling, or counted-only), or nothing (off). The later segments of a timed or nested
//!   call are all timed, whatever the sampling (half a call's time would be no figure of it),
//!   unless the point is off or counted-only by then; those of an untimed call are not.
//! - [`SplitCall::finish`] records the one call on the thread where it ends: a timed call
//!   adds its busy time (the sum of its segments) to the min, max and distribution, and its
//!   idle time (the time between its segments: from the end of one to the start of the next)
//!   to the slot's `idle`; its node in the points tree gets the call (the node of its first
//!   segment's path, made on this thread if it ends on another).
//! - Gaps are measured with the segments' own clock reads (the shard clock plus its offset:
//!   the raw clock), so idle time costs no clock read. A gap across an untimed segment is not
//!   counted, and a gap is counted once (the first segment after it takes it): busy plus idle
//!   never exceeds the call's time from first enter to last exit, but for segments that
//!   overlap (a span entered on two threads at once), whose overlap is busy time twice.

use super::*;
use crate::tree::Origin;

/// States of a [`SplitCall`].
const S_NEW: u8 = 0;
/// The point was off at the first segment: nothing is recorded.
const S_OFF: u8 = 1;
const S_TIMED: u8 = 2;
const S_NESTED: u8 = 3;
/// Left untimed by sampling (in the points tree) or counted only (not in it).
const S_UNTIMED: u8 = 4;
/// Left untimed by sampling, the point active on the thread (recursion).
const S_NESTED_UNTIMED: u8 = 5;

/// One call of a point made in segments (see the module docs): enter and exit each segment
/// with it, on any thread, then [`SplitCall::finish`] it once.
pub struct SplitCall {
    state: u8,
    /// Whether the first segment entered the points tree (not a counted-only one).
    in_tree: bool,
    /// Sum of the timed segments' intervals, ticks.
    busy: u64,
    /// Sum of the gaps between timed segments, ticks.
    idle: u64,
    /// The raw clock at the end of the last timed segment (0: none, or an untimed segment
    /// since).
    last_exit: u64,
    /// The first segment's node in the points tree and its shard.
    node: Option<(&'static Shard, u32)>,
    /// The thread's current node at the first segment (the call's parent in the tree).
    origin: Origin,
}

impl std::fmt::Debug for SplitCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitCall")
            .field("state", &self.state)
            .field("busy", &self.busy)
            .field("idle", &self.idle)
            .finish()
    }
}

impl Default for SplitCall {
    fn default() -> Self {
        SplitCall::new()
    }
}

/// A segment of a [`SplitCall`] in progress on this thread: hand it back to
/// [`SplitCall::exit`] on the same thread, segments in reverse order of entering (as tokens).
#[must_use = "a segment must be exited"]
#[derive(Debug)]
pub struct Segment(Token);

impl Segment {
    /// A segment that records nothing (a span with no point).
    pub const OFF: Segment = Segment(Token::OFF);

    /// Whether it records nothing (never started, or ended by [`SplitCall::exit_in`]).
    pub fn is_off(&self) -> bool {
        self.0.mode == T_OFF
    }
}

impl SplitCall {
    /// A call not entered yet.
    pub const fn new() -> SplitCall {
        SplitCall {
            state: S_NEW,
            in_tree: false,
            busy: 0,
            idle: 0,
            last_exit: 0,
            node: None,
            origin: None,
        }
    }

    /// Whether a segment was entered.
    pub fn entered(&self) -> bool {
        self.state != S_NEW
    }

    /// Busy time so far: the timed segments' intervals, in the clock's ticks.
    pub fn busy_ticks(&self) -> u64 {
        self.busy
    }

    /// Idle time so far: the gaps between timed segments, in the clock's ticks.
    pub fn idle_ticks(&self) -> u64 {
        self.idle
    }

    /// Starts a segment of this call of `point` on this thread.
    #[inline]
    pub fn enter(&mut self, point: &'static Point) -> Segment {
        let mut segment = Segment::OFF;
        self.enter_in(point, &mut segment);
        segment
    }

    /// [`SplitCall::enter`] into `segment`, which must be off (as [`Segment::OFF`], or as
    /// [`SplitCall::exit_in`] leaves it): the segment is written where it is kept, field by
    /// field. A segment returned and then moved into place is copied with wide loads of
    /// fields just written narrow, which the CPU cannot forward from its store buffer: a
    /// stall of a dozen cycles a copy on this path.
    #[inline]
    pub fn enter_in(&mut self, point: &'static Point, segment: &mut Segment) {
        let token = &mut segment.0;
        debug_assert_eq!(token.mode, T_OFF, "a segment entered twice");
        match self.state {
            S_NEW => {
                self.origin = tree::origin();
                point.start_into(token);
                let mode = token.mode & !(T_BORROWED | T_MONO);
                self.state = match mode {
                    T_OFF => S_OFF,
                    T_TIMED => S_TIMED,
                    T_NESTED => S_NESTED,
                    T_SKIPPED_NESTED => S_NESTED_UNTIMED,
                    _ => S_UNTIMED,
                };
                self.in_tree = mode != T_OFF && mode != T_COUNTED;
                if self.in_tree && token.node != tree::NO_NODE {
                    // SAFETY: a started token's shard is never freed.
                    self.node = Some((unsafe { &*token.shard }, token.node));
                }
            }
            S_TIMED | S_NESTED => {
                // Relaxed: see `is_enabled`.
                let status = point.status.load(Ordering::Relaxed);
                if status == OFF || status == COUNT {
                    self.last_exit = 0;
                    return;
                }
                point.start_timed_into(token);
                if token.mode != T_OFF && self.last_exit != 0 {
                    // SAFETY: a started token's shard is never freed.
                    let shard = unsafe { &*token.shard };
                    // The raw clock at the start: the shard's clock plus its offset (owner only;
                    // nothing changed it since the start's read).
                    let began = token.t0.wrapping_add(owned::get(&shard.setup));
                    self.idle = self
                        .idle
                        .saturating_add(began.saturating_sub(self.last_exit));
                    // The gap is counted: a segment entered on another thread before this
                    // one ends finds none (the call is busy), not the same gap again.
                    self.last_exit = 0;
                }
            }
            _ => {}
        }
    }

    /// Ends a segment entered on this thread (see [`Segment`] for the order).
    #[inline]
    pub fn exit(&mut self, mut segment: Segment) {
        self.exit_in(&mut segment);
    }

    /// [`SplitCall::exit`] of the segment where it is kept (see [`SplitCall::enter_in`]); it
    /// is left off, so dropping it does nothing.
    #[inline]
    pub fn exit_in(&mut self, segment: &mut Segment) {
        let token = &mut segment.0;
        let mode = token.mode & !(T_BORROWED | T_MONO);
        if mode == T_TIMED || mode == T_NESTED {
            let (dur, end) = leave_timed(token);
            self.busy = self.busy.saturating_add(dur);
            self.last_exit = end;
        } else if mode == T_SKIPPED || mode == T_SKIPPED_NESTED {
            leave_untimed(token, mode);
        } else {
            // Off or counted: what the token's drop does is all that is left (a borrowed
            // shard goes back); it is done here, and the token left off.
            drop(std::mem::replace(token, Token::OFF));
            return;
        }
        if token.mode & T_BORROWED != 0 {
            // SAFETY: a started token's shard is never freed.
            shard::release(unsafe { &*token.shard });
        }
        // Left: off from here, so its drop does nothing.
        token.mode = T_OFF;
    }

    /// Records the call of `point` on this thread, once its last segment is exited: one call
    /// whatever the point's status now (none if it was off at the first segment, or no segment
    /// was entered). The call is left new, ready for another. By reference: a call moved out
    /// of where its last exit wrote it is copied with wide loads of fields just written
    /// narrow, a stall (see [`SplitCall::enter_in`]).
    pub fn finish(&mut self, point: &'static Point) {
        let state = self.state;
        if state == S_NEW || state == S_OFF {
            *self = SplitCall::new();
            return;
        }
        let index = point.index();
        // `slot_for_read`, not `slot`: the latter serves no slot without the TSC.
        let fast = shard::current().and_then(|s| Some((s, s.slot_for_read(index as usize)?)));
        let (shard, slot, borrowed) = match fast {
            Some((shard, slot)) => (shard, slot, false),
            None => {
                // First use on this thread: outside the intervals open here.
                let (shard, slot, flags) = point.slot_cold();
                (shard, slot, flags & T_BORROWED != 0)
            }
        };
        if self.in_tree {
            let node = match self.node {
                Some((s, id)) if std::ptr::eq(s, shard) => id,
                _ => tree::async_node(shard, self.origin, index),
            };
            if node != tree::NO_NODE {
                let n = tree::node(shard, node);
                if self.state == S_UNTIMED || self.state == S_NESTED_UNTIMED {
                    tree::add_untimed(n);
                } else {
                    tree::add_timed(n, 0, 0);
                }
            }
        }
        slot.write_begin();
        match self.state {
            S_TIMED => {
                super::hot::record_timed_call(slot, self.busy);
                bump(&slot.idle, self.idle);
            }
            S_NESTED | S_NESTED_UNTIMED => bump(&slot.nested, 1),
            _ => bump(&slot.skipped, 1),
        }
        slot.write_end();
        if borrowed {
            shard::release(shard);
        }
        *self = SplitCall::new();
    }
}

/// Ends a timed segment as `leave_on` ends a timed call, without the call: its time goes to
/// the point's total (outermost only) and self time, its node's, and the intervals around it.
/// Returns its duration and the raw clock at its end.
#[inline]
fn leave_timed(token: &Token) -> (u64, u64) {
    // SAFETY: the token was made by `start_in` on this thread (Token is !Send), from a
    // shard and slot that are never freed.
    let (shard, slot) = unsafe { (&*token.shard, &*token.slot) };
    let mode = token.mode & !(T_BORROWED | T_MONO);
    let end = clock::now_with(token.mode & T_MONO == 0);
    // Relaxed: owner-only (the shard's clock is the raw one minus this offset).
    let raw = end
        .wrapping_sub(owned::get(&shard.setup))
        .saturating_sub(token.t0);
    let (dur, self_ticks) = super::hot::close_interval(shard, token, raw);
    if token.node != tree::NO_NODE {
        let n = tree::node(shard, token.node);
        tree::add_time(n, dur, self_ticks);
        tree::restore(shard, n);
    }
    if mode == T_TIMED {
        owned::set32(&slot.depth, 0);
    }
    slot.write_begin();
    bump(&slot.self_ticks, self_ticks);
    if mode == T_TIMED {
        bump(&slot.total, dur);
    }
    slot.write_end();
    (dur, end)
}

/// Ends a segment that sampling left untimed, as `leave_on` does without the call.
#[inline]
fn leave_untimed(token: &Token, mode: u8) {
    // SAFETY: as in `leave_timed`.
    let (shard, slot) = unsafe { (&*token.shard, &*token.slot) };
    if token.node != tree::NO_NODE {
        tree::restore(shard, tree::node(shard, token.node));
    }
    if mode == T_SKIPPED {
        // Relaxed: owner-only.
        owned::set32(&slot.depth, 0);
        // The point's stand-in for the intervals around it (see `leave_on`).
        if token.t0 != 0 {
            owned::set(&shard.child_acc, token.saved_child.wrapping_add(token.t0));
        }
    }
}
