//! [`ProfpointLayer`]: the bridge as a `tracing-subscriber` layer, over any subscriber that
//! looks spans up (`Registry`, and `fmt` or other layers on it).

use crate::{callsites, count_event, stack};
use tracing_core::span::Id;
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Times every span's enter..exit as a call of its callsite's profile point; made by
/// [`crate::layer`].
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
        let point = ctx
            .metadata(id)
            .and_then(callsites::slot)
            .and_then(callsites::point);
        stack::enter(id.into_u64(), point);
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        stack::exit(id.into_u64());
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if self.events {
            count_event(event.metadata());
        }
    }
}
