//! The spans entered on this thread, innermost last, each with its segment.
//!
//! # Mechanism
//! - Entering a span writes its id into the next entry, whose segment is off, then starts the
//!   segment there ([`SplitCall::enter_in`], under the span's own state: the caller's
//!   closure); exiting ends it in place ([`SplitCall::exit_in`], the caller's closure again),
//!   which leaves it off, and the entry is kept for the next enter. Nothing is moved: an entry
//!   built aside and copied in, or a segment returned by value, is copied with wide loads of
//!   fields just written narrow, which the CPU cannot forward from its store buffer (a stall
//!   each, about a tenth of a span's cost here). Segments hold tokens, which are not `Send`
//!   and must be ended in reverse order of starting, which a per-thread stack gives.
//! - A span entered again while it is entered on this thread gets an entry that times
//!   nothing: its time is its outer segment's, which would otherwise count it twice in the
//!   call's busy time.
//! - An exit of a span that is not the innermost (its `Entered` guards dropped out of order)
//!   ends the segments of the spans entered inside it first, as if they exited with it; their
//!   own exits later find nothing and do nothing. An exit of a span this thread never entered
//!   (entered before the subscriber was installed) does nothing.
//! - Nothing here panics: the thread-local may be gone (a span exited during the thread's
//!   destruction) or borrowed (profpoint calling back into `tracing`, which it does not): the
//!   enter or exit is then dropped (an enter's closure is not run).
//! - At thread exit, the segments still on the stack are forgotten, not ended: the thread's
//!   profpoint state may already be torn down, and its shard unmarks what they marked.

use crate::callsites;
use crate::spans::Locked;
use profpoint::__private::{Point, Segment, SplitCall};
use std::cell::RefCell;

struct Entry {
    id: u64,
    key: u64,
    /// The span's point (`None`: the span has no point; kept so that the stack's order stays
    /// the spans').
    point: Option<&'static Point>,
    segment: Segment,
}

/// The entries: the first `len` are the entered spans; those past it are kept (their
/// segments off) to be written in place by the next enters.
struct Stack {
    entries: Vec<Entry>,
    len: usize,
}

impl Drop for Stack {
    fn drop(&mut self) {
        let len = self.len;
        for e in self.entries.drain(..len) {
            std::mem::forget(e.segment);
        }
    }
}

thread_local! {
    static STACK: RefCell<Stack> = const {
        RefCell::new(Stack {
            entries: Vec::new(),
            len: 0,
        })
    };
}

/// Enters span `id` on this thread, its slot `locked` (`None`: the span keeps no state): its
/// segment is started under the lock where its callsite has a point (the subscriber's and the
/// layer's enter).
#[inline]
pub(crate) fn enter_span(id: u64, locked: Option<Locked>) {
    let Some(mut l) = locked else {
        enter(id, |_| None);
        return;
    };
    let Some(point) = callsites::point(l.callsite()) else {
        drop(l);
        enter(id, |_| None);
        return;
    };
    let key = l.key();
    enter_keyed(id, key, |segment| {
        l.call().enter_in(point, segment);
        Some(point)
    });
}

/// Ends `segment` of a span under its slot's lock, or, with the span gone (closed while
/// entered: an `Entered` guard forgotten), as lost: its time is recorded, its call was at the
/// close (the subscriber's and the layer's exit).
pub(crate) fn end_segment(locked: Option<Locked>, segment: &mut Segment) {
    match locked {
        Some(mut l) => l.call().exit_in(segment),
        None => SplitCall::new().exit_in(segment),
    }
}

/// Enters span `id` on this thread: `start` starts its segment in the place given (returning
/// the span's point; `None`: the span has no point, and the segment stays off). Nothing is
/// done (`start` does not run) without the thread's stack.
#[inline]
fn enter(id: u64, start: impl FnOnce(&mut Segment) -> Option<&'static Point>) {
    enter_keyed(id, 0, start);
}

/// [`enter`] of a span whose slab key is `key` (0: none).
#[inline]
fn enter_keyed(id: u64, key: u64, start: impl FnOnce(&mut Segment) -> Option<&'static Point>) {
    let _ = STACK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let s = &mut *s;
        // The entry first: an allocation must not land in the span's time.
        if s.len == s.entries.len() {
            s.entries.push(Entry {
                id,
                key: 0,
                point: None,
                segment: Segment::OFF,
            });
        }
        // A span entered again inside itself on this thread (a future polled within its own
        // span): its time is already its outer segment's, so this entry times nothing (and
        // its exit, finding it innermost, ends nothing).
        let again = key != 0 && s.entries[..s.len].iter().any(|e| e.key == key);
        let Some(e) = s.entries.get_mut(s.len) else {
            return;
        };
        s.len += 1;
        if !e.segment.is_off() {
            // Left started by an exit whose `end` panicked: dropped as the unwinding
            // would have dropped it (its point no longer marked active on this thread).
            drop(std::mem::replace(&mut e.segment, Segment::OFF));
        }
        // Field by field, in place (its segment is off: see `exit`).
        e.id = id;
        e.key = key;
        e.point = if again { None } else { start(&mut e.segment) };
    });
}

/// Exits span `id` on this thread (see the module docs for an exit out of order): `end` ends
/// each segment in its place, innermost first, given its span's id and point; it must leave it
/// off (as `SplitCall::exit_in` does), for the next enter to start there.
#[inline]
pub(crate) fn exit(id: u64, mut end: impl FnMut(u64, &'static Point, &mut Segment)) {
    let _ = STACK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        let s = &mut *s;
        let Some(at) = s.entries[..s.len].iter().rposition(|e| e.id == id) else {
            return;
        };
        while s.len > at {
            s.len -= 1;
            let e = &mut s.entries[s.len];
            if let Some(p) = e.point.take() {
                end(e.id, p, &mut e.segment);
            }
        }
    });
}

/// The innermost span entered on this thread.
pub(crate) fn current() -> Option<u64> {
    STACK
        .try_with(|s| {
            let s = s.try_borrow().ok()?;
            Some(s.entries.get(s.len.checked_sub(1)?)?.id)
        })
        .ok()
        .flatten()
}
