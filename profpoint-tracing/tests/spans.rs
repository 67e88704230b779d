//! Spans as points: exact counts, the points tree with `#[profile_point]` functions both
//! ways, threads, `#[instrument]`, async spans polled many times on two threads (one call,
//! busy and idle time), events, both subscribers.

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

/// A span entered 400 times on four threads is one call (its enters' time is its busy
/// time); the spans made inside it, one per enter, are 400 calls nested under it.
#[test]
fn a_span_entered_on_many_threads_is_one_call() {
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
    // Not closed yet: no call.
    assert_eq!(calls("t_threads::shared"), 0);
    drop(span);
    assert_eq!(calls("t_threads::shared"), 1);
    assert_eq!(calls("t_threads::child"), 400);
    assert_eq!(
        paths("t_threads::"),
        vec![("shared".to_string(), 1), ("shared;child".to_string(), 400)]
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

/// What each poll of the async tests' future runs: a point nested in the async span.
#[profpoint::profile_point(name = "t_async::work")]
fn poll_work(left: u32) -> u32 {
    std::hint::black_box(left)
}

/// The same for the standalone subscriber's test (its own names: tests run in parallel).
#[profpoint::profile_point(name = "t_async_alone::work")]
fn poll_work_alone(left: u32) -> u32 {
    std::hint::black_box(left)
}

/// A future pending `left` more times before it is ready; each poll runs `work`.
struct Pending {
    left: u32,
    work: fn(u32) -> u32,
}

impl Future for Pending {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        (self.work)(self.left);
        if self.left == 0 {
            return Poll::Ready(7);
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A tiny executor: polls `f` to completion, alternately on this thread and on a new thread
/// each time, sleeping between polls (the future waits: idle time), then drops it on another
/// new thread. Returns its output, the number of polls and the time from just before the
/// first poll to just after the drop.
fn run_across_threads<F>(f: F) -> (F::Output, u32, std::time::Duration)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn poll_once<F: Future>(f: &mut Pin<Box<F>>) -> Poll<F::Output> {
        f.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    }
    let began = std::time::Instant::now();
    let mut f = Box::pin(f);
    let mut polls = 0;
    let out = loop {
        polls += 1;
        let ready = if polls % 2 == 0 {
            let (g, ready) = std::thread::spawn(move || {
                let ready = poll_once(&mut f);
                (f, ready)
            })
            .join()
            .unwrap();
            f = g;
            ready
        } else {
            poll_once(&mut f)
        };
        if let Poll::Ready(v) = ready {
            break v;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    std::thread::spawn(move || drop(f)).join().unwrap();
    (out, polls, began.elapsed())
}

/// An async span is one call: its busy time (entered, summed over the polls on two threads
/// and the drop, which `tracing` runs inside the span) is its total, min, max and
/// distribution; its idle time (between polls) is reported beside it; the points its polls
/// run are counted exactly and nested under it.
fn check_async_span(prefix: &str, alive: std::time::Duration, polls: u32) {
    let r = profpoint::snapshot();
    let task = point(&r, &format!("{prefix}task"));
    assert_eq!((task.nr, task.timed, task.nested), (1, 1, 0));
    assert_eq!(point(&r, &format!("{prefix}work")).nr, u64::from(polls));
    assert_eq!(
        paths(prefix),
        vec![
            ("task".to_string(), 1),
            ("task;work".to_string(), u64::from(polls)),
        ]
    );
    // The one call's busy time is the distribution's only entry.
    assert_eq!(task.min_ns, task.max_ns);
    assert_eq!(task.hist.iter().map(|b| b[1]).sum::<u64>(), 1);
    // Busy plus idle is the span's time from first poll to drop: within what the executor saw.
    let alive = alive.as_nanos() as u64;
    assert!(
        task.idle_ns > 0,
        "the future waited between polls: {task:?}"
    );
    assert!(
        task.total_ns + task.idle_ns <= alive,
        "busy {} + idle {} ns over {alive} ns alive",
        task.total_ns,
        task.idle_ns
    );
    assert!(task.self_ns.is_some_and(|own| own <= task.total_ns));
    assert_eq!(r.impossible(), Vec::<String>::new());
    // In the JSON, and in the table's idle list.
    let json = r.to_json();
    assert!(
        json.contains(&format!("\"idle_ns\": {}", task.idle_ns)),
        "{json}"
    );
    let table = r.to_table();
    assert!(
        table
            .lines()
            .any(|l| l.contains(" idle ") && l.ends_with(&format!("{prefix}task"))),
        "{table}"
    );
}

#[test]
fn an_async_span_polled_on_two_threads_is_one_call_with_busy_and_idle_time() {
    no_budget();
    let dispatch = tracing::Dispatch::new(layered());
    let span = tracing::dispatcher::with_default(
        &dispatch,
        || tracing::info_span!(target: "t_async", "task"),
    );
    let fut = Pending {
        left: 3,
        work: poll_work,
    }
    .instrument(span);
    let (v, polls, alive) = run_across_threads(fut);
    assert_eq!((v, polls), (7, 4));
    check_async_span("t_async::", alive, polls);
}

#[test]
fn the_standalone_subscriber_reports_an_async_span_alike() {
    no_budget();
    let dispatch = tracing::Dispatch::new(profpoint_tracing::subscriber());
    let span = tracing::dispatcher::with_default(
        &dispatch,
        || tracing::info_span!(target: "t_async_alone", "task"),
    );
    let fut = Pending {
        left: 5,
        work: poll_work_alone,
    }
    .instrument(span);
    let (v, polls, alive) = run_across_threads(fut);
    assert_eq!((v, polls), (7, 6));
    check_async_span("t_async_alone::", alive, polls);
}

/// Counts stay exact whatever the point's status: counted only (no segment timed), sampled
/// (a span is timed or not as a whole), and a status changed while spans are alive.
#[test]
fn async_spans_count_exactly_counted_only_sampled_and_switched() {
    no_budget();
    profpoint::count_only("t_async_count::*");
    profpoint::set_sampling("t_async_sampled::*", 3);
    fn poll_here<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                return v;
            }
        }
    }
    fn idle(left: u32) -> u32 {
        left
    }
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..20 {
            let counted = tracing::info_span!(target: "t_async_count", "task");
            let sampled = tracing::info_span!(target: "t_async_sampled", "task");
            let pending = |left| Pending { left, work: idle };
            assert_eq!(poll_here(pending(2).instrument(counted)), 7);
            assert_eq!(poll_here(pending(2).instrument(sampled)), 7);
        }
        // Switched between polls: the span started timed stays one call.
        let switched = tracing::info_span!(target: "t_async_switch", "task");
        let mut f = Box::pin(
            Pending {
                left: 1,
                work: idle,
            }
            .instrument(switched),
        );
        let mut cx = Context::from_waker(Waker::noop());
        assert!(f.as_mut().poll(&mut cx).is_pending());
        profpoint::count_only("t_async_switch::*");
        assert!(f.as_mut().poll(&mut cx).is_ready());
        drop(f);
    });
    let r = profpoint::snapshot();
    let counted = point(&r, "t_async_count::task");
    assert_eq!((counted.nr, counted.timed, counted.total_ns), (20, 0, 0));
    let sampled = point(&r, "t_async_sampled::task");
    assert_eq!(sampled.nr, 20);
    assert!(sampled.timed <= 20);
    let switched = point(&r, "t_async_switch::task");
    assert_eq!((switched.nr, switched.timed), (1, 1));
}

/// A sync span entered once has no idle time (and nothing in the idle section).
#[test]
fn a_sync_span_entered_once_has_no_idle_time() {
    no_budget();
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..3 {
            let _s = tracing::info_span!(target: "t_once", "once").entered();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
    let p = point(&profpoint::snapshot(), "t_once::once");
    assert_eq!((p.nr, p.timed, p.idle_ns), (3, 3, 0));
    assert!(p.min_ns <= p.max_ns && p.total_ns >= 3_000_000, "{p:?}");
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

/// Ids the standalone subscriber did not make (or that name a closed span) find nothing:
/// entering, exiting, cloning and closing them does nothing, and counts stay exact.
#[test]
fn the_standalone_subscriber_ignores_ids_it_did_not_make() {
    use tracing::span::Id;
    no_budget();
    let dispatch = tracing::Dispatch::new(profpoint_tracing::subscriber());
    let closed = tracing::dispatcher::with_default(&dispatch, || {
        let s = tracing::info_span!(target: "t_ids", "real");
        s.in_scope(|| {});
        s.id().unwrap()
    });
    assert_eq!(calls("t_ids::real"), 1);
    // Not small even ids: those are the keys of the first spans the other tests (running
    // meanwhile) make, which may be open.
    for raw in [closed.into_u64(), 1 << 62, u64::MAX - 1, 1, 3] {
        let id = Id::from_u64(raw);
        dispatch.enter(&id);
        dispatch.exit(&id);
        let _ = dispatch.clone_span(&id);
        assert!(!dispatch.try_close(id));
    }
    assert_eq!(calls("t_ids::real"), 1);
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

/// Two registries, each with the layer, on one thread (a program's default and a scope's
/// `with_default`): both number their spans from the same start, so a span of each has the
/// same id at once. Each span is its own call: the inner registry's span, closed, does not
/// close the outer one's, nor lend it its time. Twice: the second time both callsites have
/// their points when the spans are made.
#[test]
fn two_registries_on_one_thread_keep_spans_with_the_same_id_apart() {
    no_budget();
    for round in 1..=2 {
        tracing::subscriber::with_default(layered(), || {
            let a = tracing::info_span!(target: "t_two_reg", "a");
            let a_id = a.id().expect("enabled");
            tracing::subscriber::with_default(layered(), || {
                let b = tracing::info_span!(target: "t_two_reg", "b");
                assert_eq!(
                    b.id(),
                    Some(a_id.clone()),
                    "the case: one id in both registries"
                );
                b.in_scope(|| std::thread::sleep(std::time::Duration::from_millis(30)));
                drop(b);
            });
            assert_eq!(calls("t_two_reg::b"), round);
            assert_eq!(calls("t_two_reg::a"), round - 1, "a is open: no call yet");
            a.in_scope(|| {});
            // And the inner registry's span entered while the outer one's, of the same id,
            // is entered: not taken for the outer span entered again.
            a.in_scope(|| {
                tracing::subscriber::with_default(layered(), || {
                    let c = tracing::info_span!(target: "t_two_reg", "c");
                    assert_eq!(c.id(), Some(a_id.clone()), "the case: one id in both");
                    c.in_scope(|| {});
                });
            });
            assert_eq!(calls("t_two_reg::c"), round);
            drop(a);
        });
    }
    let r = profpoint::snapshot();
    let (a, b) = (point(&r, "t_two_reg::a"), point(&r, "t_two_reg::b"));
    assert_eq!((a.nr, b.nr), (2, 2));
    // a's enters did nothing: none of b's 30 ms.
    assert!(
        a.total_ns < 20_000_000,
        "a holds b's time: {} ns",
        a.total_ns
    );
    assert!(b.total_ns >= 60_000_000, "{} ns", b.total_ns);
}

/// A span entered again inside itself on one thread (a future polled within its own span):
/// one call, whose busy time (its total, and the call's entry in min, max and the
/// distribution) is its outer enter's, not that plus the inner one's again.
#[test]
fn a_span_entered_inside_itself_counts_its_time_once() {
    no_budget();
    let ms = std::time::Duration::from_millis(30);
    let mut longest = std::time::Duration::ZERO;
    for sub in 0..2 {
        let name = if sub == 0 { "layer" } else { "alone" };
        let run = || {
            let s = tracing::info_span!(target: "t_self_nest", "s", which = name);
            let t = std::time::Instant::now();
            s.in_scope(|| {
                std::thread::sleep(ms);
                s.in_scope(|| std::thread::sleep(ms));
            });
            let outer = t.elapsed();
            drop(s);
            outer
        };
        let outer = if sub == 0 {
            tracing::subscriber::with_default(layered(), run)
        } else {
            tracing::subscriber::with_default(profpoint_tracing::subscriber(), run)
        };
        longest = longest.max(outer);
        let p = point(&profpoint::snapshot(), "t_self_nest::s");
        assert_eq!(p.nr, sub + 1, "{name}");
        // Within the longest outer enter's wall time (a fifth over it for two clocks'
        // rates); the inner enter counted again would be half as much again.
        for (what, ns) in [("total", p.total_ns / (sub + 1)), ("max", p.max_ns)] {
            assert!(
                ns as f64 <= 1.2 * longest.as_nanos() as f64,
                "{name}: {what} {ns} ns over the {longest:?} the span was entered"
            );
            assert!(ns >= 2 * ms.as_nanos() as u64, "{name}: {what} {ns} ns");
        }
    }
}

/// A span entered on two threads at once after a gap: the gap is idle time once, not once
/// per thread that entered.
#[test]
fn a_gap_before_two_threads_enter_a_span_is_idle_once() {
    no_budget();
    tracing::subscriber::with_default(profpoint_tracing::subscriber(), || {
        let s = tracing::info_span!(target: "t_idle_once", "s");
        // Read before the exit's own clock read: the gap is no longer than from here.
        let exited = s.in_scope(std::time::Instant::now);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let barrier = std::sync::Barrier::new(2);
        let entered: Vec<std::time::Instant> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (s, barrier) = (s.clone(), &barrier);
                    let d = tracing::dispatcher::get_default(|d| d.clone());
                    scope.spawn(move || {
                        tracing::dispatcher::with_default(&d, || {
                            let g = s.enter();
                            let at = std::time::Instant::now();
                            // Both inside at once.
                            barrier.wait();
                            drop(g);
                            at
                        })
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        drop(s);
        let first = entered.iter().min().unwrap().duration_since(exited);
        let p = point(&profpoint::snapshot(), "t_idle_once::s");
        assert_eq!(p.nr, 1);
        // The gap ends at the first enter (a third over it for two clocks' rates); counted
        // again for the second thread it was about twice this.
        assert!(
            p.idle_ns as f64 <= 1.3 * first.as_nanos() as f64,
            "idle {} ns, the gap at most {first:?}",
            p.idle_ns
        );
        assert!(p.idle_ns >= 25_000_000, "{} ns", p.idle_ns);
    });
}
