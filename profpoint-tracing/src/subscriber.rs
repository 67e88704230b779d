//! [`ProfpointSubscriber`]: the bridge as a subscriber of its own, with nothing else to run.
//!
//! # Mechanism
//! - A span whose callsite has a point gets a [`SpanData`] on the heap: its callsite's slot, a
//!   count of references and its call's state ([`SplitCall`], under a mutex: a span may be
//!   entered on two threads at once). Its id is the data's address (a multiple of 8): entering
//!   it needs no lookup. `clone_span` adds a reference, `try_close` drops one, and the last
//!   one records the call ([`SplitCall::finish`]) and frees the data. Each enter holds a
//!   reference too, until its exit, so the data outlives every segment on every thread's
//!   stack (an `Entered` guard forgotten, then the span closed, still leaves it valid).
//! - A span whose callsite has no point (the pool or the table is full) keeps no state: its
//!   id carries the callsite's slot plus one in bits 1..=13 (bit 0 set: never an address)
//!   and a serial number above (blocks of 1,024 handed to each thread from one atomic
//!   counter), so ids of open spans are unique.

use crate::{callsites, count_event, stack};
use profpoint::__private::SplitCall;
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};

/// Bits of a stateless span id that hold its callsite's slot plus one (0: none), above the
/// tag bit.
const SLOT_BITS: u32 = 13;
const _: () = assert!(callsites::CAP < 1 << SLOT_BITS);

/// Serial numbers per block a thread takes.
const BLOCK: u64 = 1024;
/// The next block (block 0 is never handed out: serials are never 0).
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's next serial and the end of its block.
    static SERIAL: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn new_block() -> u64 {
    // Relaxed: only uniqueness matters.
    NEXT_BLOCK
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(BLOCK)
}

fn serial() -> u64 {
    SERIAL
        .try_with(|c| {
            let (next, end) = c.get();
            if next < end {
                c.set((next + 1, end));
                next
            } else {
                let b = new_block();
                c.set((b + 1, b + BLOCK));
                b
            }
        })
        .unwrap_or_else(|_| new_block())
}

/// A span with a point: what its id points to.
struct SpanData {
    /// The callsite's slot (it has a point).
    slot: usize,
    /// `tracing`'s handles to the span plus the enters not yet exited.
    refs: AtomicUsize,
    call: Mutex<SplitCall>,
}

/// The data a span id points to (`None`: a stateless id).
///
/// # Safety
/// `id` must be an id this subscriber made for a span still referenced: by a handle `tracing`
/// has not closed, or by an enter on a thread's stack.
unsafe fn data<'a>(id: u64) -> Option<&'a SpanData> {
    if id & 1 != 0 {
        return None;
    }
    // SAFETY: an even id is the address of a live `SpanData` (the caller's contract: the
    // data is freed only when its last reference goes).
    Some(unsafe { &*(id as usize as *const SpanData) })
}

/// Drops one reference to the span of `id` (with data); the last records its call and frees it.
///
/// # Safety
/// As [`data`], and the reference dropped is one the caller held.
unsafe fn release(id: u64) -> bool {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { data(id) }) else {
        return false;
    };
    // Release: this thread's uses of the data happen before the free below, on whichever
    // thread drops the last reference.
    if d.refs.fetch_sub(1, Ordering::Release) != 1 {
        return false;
    }
    // Acquire: pairs with the other references' release decrements.
    fence(Ordering::Acquire);
    // SAFETY: the last reference: nothing else uses the data; it was made by `Box::into_raw`
    // in `new_span`.
    let d = unsafe { Box::from_raw(id as usize as *mut SpanData) };
    let call = d.call.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(point) = callsites::point(d.slot) {
        call.finish(point);
    }
    true
}

/// The callsite slot of a span id.
fn slot_of(id: u64) -> Option<usize> {
    // SAFETY: every caller holds the span: it is entered (`current_span`) or referenced.
    match unsafe { data(id) } {
        Some(d) => Some(d.slot),
        None => (((id >> 1) & ((1 << SLOT_BITS) - 1)) as usize).checked_sub(1),
    }
}

/// A standalone subscriber that records every span as one call of its callsite's profile
/// point (busy time entered, idle time between enters; see [`crate::layer`]'s
/// [`ProfpointLayer`](crate::ProfpointLayer)); made by [`crate::subscriber`]. It records no
/// fields and prints nothing.
#[derive(Debug, Clone, Default)]
pub struct ProfpointSubscriber {
    events: bool,
}

impl ProfpointSubscriber {
    /// Counts events too (`info!` and the like): one count-only point per event callsite,
    /// named `target::event@file:line`. Off by default, and then events are disabled at their
    /// callsites (they cost what a disabled event costs).
    pub fn with_events(mut self, count: bool) -> Self {
        self.events = count;
        self
    }
}

impl Subscriber for ProfpointSubscriber {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        // The point is claimed when a span is made (or an event counted): see `new_span`.
        if meta.is_span() || self.events {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_span() || self.events
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let slot = callsites::slot(span.metadata());
        if let Some(slot) = slot.filter(|&s| callsites::point(s).is_some()) {
            let data = Box::new(SpanData {
                slot,
                refs: AtomicUsize::new(1),
                call: Mutex::new(SplitCall::new()),
            });
            // An address, a multiple of 8 (bit 0 clear), never 0.
            return Id::from_u64(Box::into_raw(data) as usize as u64);
        }
        let slot = slot.map_or(0, |s| s as u64 + 1);
        // Bit 0 set: never an address, never 0.
        Id::from_u64((serial().wrapping_shl(SLOT_BITS) | slot) << 1 | 1)
    }

    fn clone_span(&self, id: &Id) -> Id {
        // SAFETY: `tracing` clones only a span it holds a handle to.
        if let Some(d) = unsafe { data(id.into_u64()) } {
            // Relaxed: a new reference from one held (as `Arc::clone`).
            d.refs.fetch_add(1, Ordering::Relaxed);
        }
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        // SAFETY: `tracing` closes a handle it held, once.
        unsafe { release(id.into_u64()) }
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        if self.events {
            count_event(event.metadata());
        }
    }

    fn enter(&self, span: &Id) {
        let id = span.into_u64();
        // SAFETY: `tracing` enters only a span it holds a handle to.
        let Some(d) = (unsafe { data(id) }) else {
            stack::enter(id, || None);
            return;
        };
        let Some(point) = callsites::point(d.slot) else {
            stack::enter(id, || None);
            return;
        };
        stack::enter(id, || {
            // The enter's own reference, dropped at its exit (see the module docs).
            // Relaxed: as in `clone_span`.
            d.refs.fetch_add(1, Ordering::Relaxed);
            let mut call = d.call.lock().unwrap_or_else(|e| e.into_inner());
            Some((point, call.enter(point)))
        });
    }

    fn exit(&self, span: &Id) {
        stack::exit(span.into_u64(), |id, _point, segment| {
            // SAFETY: the stack's entry holds a reference (taken at its enter).
            match unsafe { data(id) } {
                Some(d) => d
                    .call
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .exit(segment),
                None => stack::end_lost(segment),
            }
            // SAFETY: the entry's reference, dropped once.
            unsafe { release(id) };
        });
    }

    fn current_span(&self) -> Current {
        let Some(id) = stack::current() else {
            return Current::none();
        };
        match slot_of(id).and_then(callsites::metadata) {
            Some(meta) => Current::new(Id::from_u64(id), meta),
            None => Current::none(),
        }
    }
}
