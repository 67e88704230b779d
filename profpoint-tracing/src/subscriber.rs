//! [`ProfpointSubscriber`]: the bridge as a subscriber of its own, with nothing else to run.
//!
//! # Mechanism
//! - A span whose callsite has a point gets a slot in [`crate::spans`]: its callsite, a count
//!   of references and its call's state (`SplitCall`, under the slot's lock bit: a span may
//!   be entered on two threads at once). Its id is the slot's index and generation (bit 0
//!   clear); an id that names no open span finds nothing. `clone_span` adds a reference,
//!   `try_close` drops one, and the last one records the call (`SplitCall::finish`) and frees
//!   the slot. An enter holds no reference: a span is closed while entered only if an
//!   `Entered` guard was forgotten, and then its exit finds no data and records the segment's
//!   time without the call.
//! - A span whose callsite has no point (the pool or the table is full) keeps no state: its
//!   id carries the callsite's slot plus one in bits 1..=14 (bit 0 set: never an address)
//!   and a serial number above (blocks of 1,024 handed to each thread from one atomic
//!   counter), so ids of open spans are unique.

use crate::{callsites, spans, stack};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};

/// Bits of a stateless span id that hold its callsite's slot plus one (0: none), above the
/// tag bit.
const SLOT_BITS: u32 = 14;
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

/// The callsite slot of a span id.
fn slot_of(id: u64) -> Option<usize> {
    if id & 1 == 0 {
        return spans::lock(id).map(|l| l.callsite());
    }
    (((id >> 1) & ((1 << SLOT_BITS) - 1)) as usize).checked_sub(1)
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
            // Bit 0 clear, never 0. No slot left (4 M spans open) leaves the span stateless.
            if let Some(id) = spans::alloc(slot) {
                return Id::from_u64(id);
            }
        }
        let slot = slot.map_or(0, |s| s as u64 + 1);
        // Bit 0 set: never a slab key, never 0.
        Id::from_u64((serial().wrapping_shl(SLOT_BITS) | slot) << 1 | 1)
    }

    fn clone_span(&self, id: &Id) -> Id {
        spans::add_ref(id.into_u64());
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        spans::close(id.into_u64())
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        if self.events {
            callsites::count_event(event.metadata());
        }
    }

    fn enter(&self, span: &Id) {
        let id = span.into_u64();
        stack::enter_span(id, spans::lock(id));
    }

    fn exit(&self, span: &Id) {
        stack::exit(span.into_u64(), |id, _point, segment| {
            stack::end_segment(spans::lock(id), segment);
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
