//! The `tracing` bridge: what an `#[instrument]`ed call costs under no subscriber, `Registry`
//! alone, profpoint's layer on `Registry`, profpoint's standalone subscriber, and beside it the
//! same function under `#[profile_point]` (the floor the bridge is measured against):
//!
//! ```text
//! cargo bench -p profpoint-benches --bench tracing_spans
//! ```
//!
//! Each subscriber is the thread's default for its benchmark only
//! (`tracing::dispatcher::with_default`); the overhead budget is off, so every call is timed.

#[cfg(target_os = "linux")]
mod linux {
    use criterion::{Criterion, criterion_group};
    use std::hint::black_box;
    use tracing_subscriber::prelude::*;

    #[tracing::instrument(skip_all)]
    #[inline(never)]
    fn traced(x: u64) -> u64 {
        black_box(x) + 1
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn pointed(x: u64) -> u64 {
        black_box(x) + 1
    }

    #[inline(never)]
    fn bare(x: u64) -> u64 {
        black_box(x) + 1
    }

    fn under(c: &mut Criterion, name: &str, dispatch: tracing::Dispatch) {
        tracing::dispatcher::with_default(&dispatch, || {
            c.bench_function(name, |b| b.iter(|| traced(black_box(1))));
        });
    }

    fn spans(c: &mut Criterion) {
        profpoint::set_budget(None);
        c.bench_function("span/bare_fn", |b| b.iter(|| bare(black_box(1))));
        under(
            c,
            "span/no_subscriber",
            tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()),
        );
        under(
            c,
            "span/registry",
            tracing::Dispatch::new(tracing_subscriber::registry()),
        );
        under(
            c,
            "span/profpoint_layer_on_registry",
            tracing::Dispatch::new(tracing_subscriber::registry().with(profpoint_tracing::layer())),
        );
        under(
            c,
            "span/profpoint_subscriber",
            tracing::Dispatch::new(profpoint_tracing::subscriber()),
        );
        c.bench_function("span/profile_point", |b| b.iter(|| pointed(black_box(1))));
    }

    criterion_group!(benches, spans);
}

#[cfg(target_os = "linux")]
criterion::criterion_main!(linux::benches);

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "SKIPPED tracing_spans: profpoint's benches measure its Linux build (perf counters, callgrind, Linux peers)"
    );
}
