//! The spans entered on this thread, innermost last, each with its segment.
//!
//! # Mechanism
//! - Entering a span starts a segment of its call ([`SplitCall::enter`], under the span's own
//!   state: the caller's closure) and pushes it with the span's id; exiting pops it and hands
//!   it back to the caller, which ends it under the span's state ([`SplitCall::exit`]).
//!   Segments hold tokens, which are not `Send` and must be ended in reverse order of
//!   starting, which a per-thread stack gives.
//! - An exit of a span that is not the innermost (its `Entered` guards dropped out of order)
//!   ends the segments of the spans entered inside it first, as if they exited with it; their
//!   own exits later find nothing and do nothing. An exit of a span this thread never entered
//!   (entered before the subscriber was installed) does nothing.
//! - Nothing here panics: the thread-local may be gone (a span exited during the thread's
//!   destruction) or borrowed (profpoint calling back into `tracing`, which it does not): the
//!   enter or exit is then dropped (an enter's closure is not run).
//! - At thread exit, the segments still on the stack are forgotten, not ended: the thread's
//!   profpoint state may already be torn down, and its shard unmarks what they marked.

use profpoint::__private::{Point, Segment, SplitCall};
use std::cell::RefCell;

struct Entry {
    id: u64,
    /// The span's point and its segment (`None`: the span has no point; kept so that the
    /// stack's order stays the spans').
    timed: Option<(&'static Point, Segment)>,
}

struct Stack(Vec<Entry>);

impl Drop for Stack {
    fn drop(&mut self) {
        for e in self.0.drain(..) {
            if let Some((_, segment)) = e.timed {
                std::mem::forget(segment);
            }
        }
    }
}

thread_local! {
    static STACK: RefCell<Stack> = const { RefCell::new(Stack(Vec::new())) };
}

/// Enters span `id` on this thread: `start` starts its segment (`None`: the span has no
/// point). Returns whether the enter was recorded (`start` ran).
#[inline]
pub(crate) fn enter(id: u64, start: impl FnOnce() -> Option<(&'static Point, Segment)>) -> bool {
    STACK
        .try_with(|s| {
            let Ok(mut s) = s.try_borrow_mut() else {
                return false;
            };
            // Room first: an allocation must not land in the span's time.
            s.0.reserve(1);
            let timed = start();
            s.0.push(Entry { id, timed });
            true
        })
        .unwrap_or(false)
}

/// Exits span `id` on this thread (see the module docs for an exit out of order): `end` gets
/// each segment ended, innermost first, with its span's id and point.
#[inline]
pub(crate) fn exit(id: u64, mut end: impl FnMut(u64, &'static Point, Segment)) {
    let _ = STACK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let Some(at) = s.0.iter().rposition(|e| e.id == id) else {
            return;
        };
        while s.0.len() > at {
            if let Some(Entry {
                id,
                timed: Some((p, segment)),
            }) = s.0.pop()
            {
                end(id, p, segment);
            }
        }
    });
}

/// Ends `segment` of a span whose call state is not at hand (none was kept): its time is
/// recorded, the call is not.
pub(crate) fn end_lost(segment: Segment) {
    SplitCall::new().exit(segment);
}

/// The innermost span entered on this thread.
pub(crate) fn current() -> Option<u64> {
    STACK
        .try_with(|s| s.try_borrow().ok()?.0.last().map(|e| e.id))
        .ok()
        .flatten()
}
