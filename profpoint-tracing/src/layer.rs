//! [`ProfpointLayer`]: the bridge as a `tracing-subscriber` layer, over any subscriber that
//! looks spans up (`Registry`, and `fmt` or other layers on it).

use crate::ids::Ids;
use crate::{callsites, spans, stack};
use tracing_core::span::{Attributes, Id};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Records every span as one call of its callsite's profile point: its enters' time (busy)
/// and, for a span entered more than once (a future's, on every poll), the time between them
/// (idle); made by [`crate::layer`]. The call is recorded when the span closes.
///
/// It enables everything (its `register_callsite` says `always`): what is recorded is for the
/// other layers and their filters to decide, and a span a filter turns off reaches no layer.
/// A callsite takes a point when one of its spans is first made (or its event first counted),
/// not when it is registered: libraries register many callsites that a filter keeps off, and
/// those would use up the pool.
///
/// A span's call is kept in the standalone subscriber's slab (`crate::spans`), found from the
/// registry's span id through a lock-free table of the layer's own (`crate::ids`), not through the registry: an enter, an exit and a close look nothing up in it.
/// A clone has a table of its own, for the registry it is put on (two registries give their
/// spans the same ids).
#[derive(Debug, Default)]
pub struct ProfpointLayer {
    events: bool,
    ids: Box<Ids>,
}

impl Clone for ProfpointLayer {
    fn clone(&self) -> Self {
        ProfpointLayer {
            events: self.events,
            ids: Box::default(),
        }
    }
}

impl ProfpointLayer {
    /// Counts events too (`info!` and the like): one count-only point per event callsite,
    /// named `target::event@file:line`. Off by default.
    pub fn with_events(mut self, count: bool) -> Self {
        self.events = count;
        self
    }
}

/// A span's slot id (0: its callsite has no point; [`NOT_YET`]: not chosen yet) where the
/// table of ids had no room for it (see `crate::ids`).
struct SlotId(u64);

/// The slot id of a span whose callsite had no point claimed when it was made: its first
/// enter claims one (a span made and never entered claims nothing). Odd: never a slot's id.
const NOT_YET: u64 = 1;

/// The slot id of span `id` (0: no point): the table's, else the span's extensions'; a span
/// whose callsite had not claimed a point when it was made, or made before the layer saw it,
/// gets its slot now.
fn slot_id<S>(ids: &Ids, id: &Id, ctx: &Context<'_, S>) -> Option<u64>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let raw = id.into_u64();
    let in_table = ids.get(raw);
    if let Some(ours) = in_table.filter(|&v| v != NOT_YET) {
        return Some(ours);
    }
    let span = ctx.span(id)?;
    // Under the span's extensions lock: two threads entering it at once give it one slot.
    let mut ext = span.extensions_mut();
    if let Some(s) = ext.get_mut::<SlotId>().filter(|s| s.0 != NOT_YET) {
        return Some(s.0);
    }
    if let Some(ours) = ids.get(raw).filter(|&v| v != NOT_YET) {
        return Some(ours);
    }
    let ours = new_slot(callsites::slot(span.metadata()));
    if in_table.is_some() {
        ids.set(raw, ours);
    } else if !ids.insert(raw, ours) {
        ext.insert(SlotId(ours));
    }
    Some(ours)
}

/// A slot for a span of the callsite in table slot `callsite`, whose point was claimed with
/// it (0: no table slot, the callsite has no point, or no span slot is left).
fn new_slot(callsite: Option<usize>) -> u64 {
    callsite
        .filter(|&s| callsites::point(s).is_some())
        .and_then(spans::alloc)
        .unwrap_or(0)
}

impl<S> Layer<S> for ProfpointLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, _meta: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        // Spans without a point are in the table too (0), so their enters find them at once;
        // a callsite with no point claimed yet waits for its first enter.
        let ours = match callsites::find(attrs.metadata()) {
            Some(callsite) => new_slot(Some(callsite)),
            None => NOT_YET,
        };
        if !self.ids.insert(id.into_u64(), ours) {
            match ctx.span(id) {
                Some(span) => span.extensions_mut().insert(SlotId(ours)),
                None => {
                    spans::release(ours, |_, _| {});
                }
            }
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let raw = id.into_u64();
        stack::enter_span(raw, slot_id(&self.ids, id, &ctx).and_then(spans::lock));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        stack::exit(id.into_u64(), |id, _point, segment| {
            let ours = self.ids.get(id).filter(|&v| v != NOT_YET).or_else(|| {
                let span = ctx.span(&Id::from_u64(id))?;
                let ext = span.extensions();
                ext.get::<SlotId>().map(|s| s.0)
            });
            stack::end_segment(ours.and_then(spans::lock), segment);
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let ours = self.ids.remove(id.into_u64()).or_else(|| {
            let span = ctx.span(&id)?;
            let mut ext = span.extensions_mut();
            ext.remove::<SlotId>().map(|s| s.0)
        });
        // The span's point was claimed when it was made or first entered (a slot id of
        // NOT_YET, never entered, releases nothing).
        if let Some(ours) = ours {
            spans::close(ours);
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if self.events {
            callsites::count_event(event.metadata());
        }
    }
}
