//! [`ProfpointSubscriber`]: the bridge as a subscriber of its own, with nothing else to run.
//!
//! # Mechanism
//! A span id carries the span's callsite: its slot in the callsite table plus one in the low
//! 13 bits, and a serial number above (blocks of 1,024 handed to each thread from one atomic
//! counter), so ids of open spans are unique and entering a span needs no lookup beyond the
//! table's point. Spans keep no state: `clone_span` returns the same id and closing does
//! nothing.

use crate::{callsites, count_event, stack};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};

/// Bits of a span id that hold its callsite's slot plus one (0: none).
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

/// The slot (plus one) a span id carries.
fn slot_of(id: u64) -> Option<usize> {
    ((id & ((1 << SLOT_BITS) - 1)) as usize).checked_sub(1)
}

/// A standalone subscriber that times every span's enter..exit as a call of its callsite's
/// profile point; made by [`crate::subscriber`]. It records no fields and prints nothing.
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
        let slot = callsites::slot(span.metadata()).map_or(0, |s| s as u64 + 1);
        // Never 0: the serial is not.
        let id = serial().wrapping_shl(SLOT_BITS) | slot;
        Id::from_u64(id.max(1))
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
        stack::enter(id, slot_of(id).and_then(callsites::point));
    }

    fn exit(&self, span: &Id) {
        stack::exit(span.into_u64());
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
