//! The spans entered on this thread, innermost last, each with its point's token.
//!
//! # Mechanism
//! - Entering a span starts its point ([`Point::start`]) and pushes the token with the span's
//!   id; exiting pops it and leaves the point ([`Point::leave`]). Tokens are not `Send` and
//!   must be left in reverse order of starting, which a per-thread stack gives.
//! - An exit of a span that is not the innermost (its `Entered` guards dropped out of order)
//!   leaves the spans entered inside it first, as if they exited with it; their own exits later
//!   find nothing and do nothing. An exit of a span this thread never entered (entered before
//!   the subscriber was installed) does nothing.
//! - Nothing here panics: the thread-local may be gone (a span exited during the thread's
//!   destruction) or borrowed (profpoint calling back into `tracing`, which it does not): the
//!   enter or exit is then dropped.
//! - At thread exit, the tokens still on the stack are forgotten, not left: the thread's
//!   profpoint state may already be torn down, and its shard unmarks what they marked.

use profpoint::{Point, Token};
use std::cell::RefCell;

struct Entry {
    id: u64,
    /// The span's point and token (`None`: the span has no point; kept so that the stack's
    /// order stays the spans').
    timed: Option<(&'static Point, Token)>,
}

struct Stack(Vec<Entry>);

impl Drop for Stack {
    fn drop(&mut self) {
        for e in self.0.drain(..) {
            if let Some((_, token)) = e.timed {
                std::mem::forget(token);
            }
        }
    }
}

thread_local! {
    static STACK: RefCell<Stack> = const { RefCell::new(Stack(Vec::new())) };
}

/// Enters span `id` on this thread, timing `point` if it has one.
#[inline]
pub(crate) fn enter(id: u64, point: Option<&'static Point>) {
    let _ = STACK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        // Room first: an allocation must not land in the span's time.
        s.0.reserve(1);
        let timed = point.map(|p| (p, p.start()));
        s.0.push(Entry { id, timed });
    });
}

/// Exits span `id` on this thread (see the module docs for an exit out of order).
#[inline]
pub(crate) fn exit(id: u64) {
    let _ = STACK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let Some(at) = s.0.iter().rposition(|e| e.id == id) else {
            return;
        };
        while s.0.len() > at {
            if let Some(Entry {
                timed: Some((p, token)),
                ..
            }) = s.0.pop()
            {
                p.leave(token);
            }
        }
    });
}

/// The innermost span entered on this thread.
pub(crate) fn current() -> Option<u64> {
    STACK
        .try_with(|s| s.try_borrow().ok()?.0.last().map(|e| e.id))
        .ok()
        .flatten()
}
