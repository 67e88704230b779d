//! [`ProfpointLayer`]: the bridge as a `tracing-subscriber` layer, over any subscriber that
//! looks spans up (`Registry`, and `fmt` or other layers on it).

use crate::{callsites, count_event, stack};
use profpoint::__private::SplitCall;
use tracing_core::span::Id;
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
/// A callsite takes a point when one of its spans is first entered (or its event first
/// counted), not when it is registered: libraries register many callsites that a filter keeps
/// off, and those would use up the pool.
#[derive(Debug, Clone, Default)]
pub struct ProfpointLayer {
    events: bool,
}

impl ProfpointLayer {
    /// Counts events too (`info!` and the like): one count-only point per event callsite,
    /// named `target::event@file:line`. Off by default.
    pub fn with_events(mut self, count: bool) -> Self {
        self.events = count;
        self
    }
}

impl<S> Layer<S> for ProfpointLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, _meta: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            stack::enter(id.into_u64(), || None);
            return;
        };
        let Some(point) = callsites::slot(span.metadata()).and_then(callsites::point) else {
            stack::enter(id.into_u64(), || None);
            return;
        };
        // The span's call, kept in its extensions from its first enter to its close.
        let mut ext = span.extensions_mut();
        if ext.get_mut::<SplitCall>().is_none() {
            ext.insert(SplitCall::new());
        }
        let Some(call) = ext.get_mut::<SplitCall>() else {
            return;
        };
        stack::enter(id.into_u64(), || Some((point, call.enter(point))));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        stack::exit(id.into_u64(), |id, _point, segment| {
            let span = ctx.span(&Id::from_u64(id));
            let mut ext = span.as_ref().map(|s| s.extensions_mut());
            match ext.as_mut().and_then(|e| e.get_mut::<SplitCall>()) {
                Some(call) => call.exit(segment),
                None => stack::end_lost(segment),
            }
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(call) = span.extensions_mut().remove::<SplitCall>() else {
            return;
        };
        // The callsite's point was claimed at the span's first enter.
        if let Some(point) = callsites::find(span.metadata()).and_then(callsites::point) {
            call.finish(point);
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if self.events {
            count_event(event.metadata());
        }
    }
}
