//! Spans as points: exact counts, the points tree with `#[profile_point]` functions both
//! ways, threads, `#[instrument]`, async spans polled many times, events, both subscribers.

mod common;

use common::{calls, layered, no_budget, paths, point};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tracing::Instrument;

/// One callsite (one point) entered from two places.
fn nest_leaf() {
    let _leaf = tracing::info_span!(target: "t_nest", "leaf").entered();
}

#[test]
fn nested_sync_spans_count_each_enter_once_and_nest_in_the_tree() {
    no_budget();
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..3 {
            let _outer = tracing::info_span!(target: "t_nest", "outer").entered();
            for _ in 0..4 {
                let _mid = tracing::info_span!(target: "t_nest", "mid").entered();
                nest_leaf();
            }
            nest_leaf();
        }
    });
    let r = profpoint::snapshot();
    assert_eq!(point(&r, "t_nest::outer").nr, 3);
    assert_eq!(point(&r, "t_nest::mid").nr, 12);
    let leaf = point(&r, "t_nest::leaf");
    assert_eq!((leaf.nr, leaf.timed), (15, 15));
    assert_eq!(leaf.kind, "sync");
    assert!(leaf.file.ends_with("spans.rs"), "{}", leaf.file);
    assert!(point(&r, "t_nest::outer").self_ns.is_some());
    assert_eq!(
        paths("t_nest::"),
        vec![
            ("outer".to_string(), 3),
            ("outer;leaf".to_string(), 3),
            ("outer;mid".to_string(), 12),
            ("outer;mid;leaf".to_string(), 12),
        ]
    );
}

/// The same, through the standalone subscriber.
#[test]
fn the_standalone_subscriber_counts_and_nests_alike() {
    no_budget();
    tracing::subscriber::with_default(profpoint_tracing::subscriber(), || {
        for _ in 0..5 {
            let outer = tracing::info_span!(target: "t_alone", "outer");
            let _o = outer.enter();
            assert_eq!(
                tracing::Span::current().metadata().map(|m| m.name()),
                Some("outer")
            );
            tracing::info_span!(target: "t_alone", "inner").in_scope(|| {
                assert_eq!(
                    tracing::Span::current().metadata().map(|m| m.name()),
                    Some("inner")
                );
            });
        }
        assert!(tracing::Span::current().is_none());
    });
    assert_eq!(calls("t_alone::outer"), 5);
    assert_eq!(calls("t_alone::inner"), 5);
    assert_eq!(
        paths("t_alone::"),
        vec![("outer".to_string(), 5), ("outer;inner".to_string(), 5)]
    );
}

#[profpoint::profile_point(name = "t_mixed::annotated")]
fn annotated(inner_span: bool) {
    if inner_span {
        let _s = tracing::info_span!(target: "t_mixed", "in_fn").entered();
    }
}

#[test]
fn spans_and_profile_point_functions_nest_both_ways() {
    no_budget();
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..2 {
            let _s = tracing::info_span!(target: "t_mixed", "around").entered();
            annotated(false);
            annotated(true);
        }
        annotated(true);
    });
    assert_eq!(
        paths("t_mixed::"),
        vec![
            ("annotated".to_string(), 1),
            ("annotated;in_fn".to_string(), 1),
            ("around".to_string(), 2),
            ("around;annotated".to_string(), 4),
            ("around;annotated;in_fn".to_string(), 2),
        ]
    );
}

#[test]
fn a_span_entered_on_many_threads_counts_every_enter() {
    no_budget();
    let dispatch = profpoint_tracing::subscriber();
    let span = tracing::subscriber::with_default(
        dispatch.clone(),
        || tracing::info_span!(target: "t_threads", "shared"),
    );
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (span, dispatch) = (span.clone(), dispatch.clone());
            std::thread::spawn(move || {
                tracing::subscriber::with_default(dispatch, || {
                    for _ in 0..100 {
                        span.in_scope(|| {
                            let _child =
                                tracing::info_span!(target: "t_threads", "child").entered();
                        });
                    }
                })
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(calls("t_threads::shared"), 400);
    assert_eq!(calls("t_threads::child"), 400);
    assert_eq!(
        paths("t_threads::"),
        vec![
            ("shared".to_string(), 400),
            ("shared;child".to_string(), 400)
        ]
    );
}

mod instrumented {
    #[tracing::instrument]
    pub(crate) fn parse(n: u32) -> u32 {
        if n == 0 { 0 } else { lex(n) + parse(n - 1) }
    }

    #[tracing::instrument(level = "debug", skip_all)]
    pub(crate) fn lex(n: u32) -> u32 {
        n
    }
}

#[test]
fn instrumented_functions_are_named_after_their_module_and_count_recursion() {
    no_budget();
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..2 {
            assert_eq!(instrumented::parse(3), 6);
        }
    });
    let r = profpoint::snapshot();
    // Recursion folds as for any point: 4 calls a run, 1 outermost (timed) and 3 nested.
    let parse = point(&r, "spans::instrumented::parse");
    assert_eq!((parse.nr, parse.timed, parse.nested), (8, 2, 6));
    assert_eq!(point(&r, "spans::instrumented::lex").nr, 6);
}

/// A future pending `left` more times before it is ready.
struct Pending {
    left: u32,
}

impl Future for Pending {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        // Time in a poll: a span entered inside it is a child of the async span.
        let _inner = tracing::info_span!(target: "t_async", "in_poll").entered();
        if self.left == 0 {
            return Poll::Ready(7);
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Polls `f` to completion on this thread; returns its output and the number of polls.
fn block_on<F: Future>(f: F) -> (F::Output, u32) {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return (v, polls);
        }
    }
}

/// What a span over a future polled several times reports today: one call per poll, and one
/// more for the future's drop, which `tracing` runs inside the span (its total is the time
/// inside those), as the crate docs say.
#[test]
fn an_async_span_counts_one_call_per_poll_and_one_for_the_drop() {
    no_budget();
    tracing::subscriber::with_default(layered(), || {
        let span = tracing::info_span!(target: "t_async", "task");
        let (v, polls) = block_on(Pending { left: 3 }.instrument(span));
        assert_eq!((v, polls), (7, 4));
    });
    let r = profpoint::snapshot();
    let task = point(&r, "t_async::task");
    assert_eq!((task.nr, task.timed), (5, 5));
    assert_eq!(
        paths("t_async::"),
        vec![("task".to_string(), 5), ("task;in_poll".to_string(), 4)]
    );
}

#[test]
fn exits_out_of_order_unwind_the_stack_without_panicking() {
    no_budget();
    tracing::subscriber::with_default(profpoint_tracing::subscriber(), || {
        let a = tracing::info_span!(target: "t_order", "a");
        let b = tracing::info_span!(target: "t_order", "b");
        let ga = a.enter();
        let gb = b.enter();
        // `a` exits first: `b`, entered inside it, is left with it...
        drop(ga);
        // ...and its own exit finds nothing left to do.
        drop(gb);
        // An exit of a span never entered here does nothing either.
        let c = tracing::info_span!(target: "t_order", "c");
        drop(c);
        let _after = tracing::info_span!(target: "t_order", "after").entered();
    });
    assert_eq!(calls("t_order::a"), 1);
    assert_eq!(calls("t_order::b"), 1);
    assert_eq!(calls("t_order::c"), 0);
    // Nothing was left open: `after` is outermost.
    assert_eq!(
        paths("t_order::"),
        vec![
            ("a".to_string(), 1),
            ("a;b".to_string(), 1),
            ("after".to_string(), 1),
        ]
    );
}

#[test]
fn events_are_counted_per_callsite_only_when_asked() {
    use tracing_subscriber::prelude::*;
    let quiet = tracing_subscriber::registry().with(profpoint_tracing::layer());
    tracing::subscriber::with_default(quiet, || {
        tracing::info!(target: "t_events_off", "not counted");
    });
    assert!(
        !profpoint::snapshot()
            .points
            .iter()
            .any(|p| p.name.starts_with("t_events_off::"))
    );
    let counting =
        tracing_subscriber::registry().with(profpoint_tracing::layer().with_events(true));
    tracing::subscriber::with_default(counting, || {
        for _ in 0..3 {
            tracing::info!(target: "t_events", "counted");
        }
    });
    let r = profpoint::snapshot();
    let e = r
        .points
        .iter()
        .find(|p| p.name.starts_with("t_events::event@") && p.name.contains("spans.rs:"))
        .expect("the event's point");
    assert_eq!((e.nr, e.timed, e.sampling), (3, 0, Some(0)));
    let alone = profpoint_tracing::subscriber().with_events(true);
    tracing::subscriber::with_default(alone, || {
        tracing::warn!(target: "t_events_alone", "counted");
    });
    assert!(
        profpoint::snapshot()
            .points
            .iter()
            .any(|p| p.name.starts_with("t_events_alone::event@") && p.nr == 1)
    );
}

#[test]
fn the_layer_composes_with_fmt() {
    use tracing_subscriber::prelude::*;
    let stack = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink))
        .with(profpoint_tracing::layer());
    tracing::subscriber::with_default(stack, || {
        for i in 0..3 {
            let _s = tracing::info_span!(target: "t_fmt", "with_fields", i).entered();
            tracing::info!(target: "t_fmt", "inside");
        }
    });
    assert_eq!(calls("t_fmt::with_fields"), 3);
}

#[test]
fn a_callsite_takes_a_point_only_once_a_span_of_it_is_entered() {
    use tracing_subscriber::prelude::*;
    let filtered = tracing_subscriber::registry()
        .with(profpoint_tracing::layer())
        .with(tracing_subscriber::filter::LevelFilter::INFO);
    tracing::subscriber::with_default(filtered, || {
        // Made and never entered; kept off by the filter.
        let _made = tracing::info_span!(target: "t_lazy", "made");
        let _filtered = tracing::debug_span!(target: "t_lazy", "filtered").entered();
        let _entered = tracing::info_span!(target: "t_lazy", "entered").entered();
    });
    let names: Vec<String> = profpoint::snapshot()
        .points
        .into_iter()
        .filter(|p| p.name.starts_with("t_lazy::"))
        .map(|p| p.name)
        .collect();
    assert_eq!(names, vec!["t_lazy::entered".to_string()]);
}
