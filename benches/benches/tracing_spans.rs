//! The `tracing` bridge against its peers, in one run: what an `#[instrument]`ed one-line
//! function costs per call (new span, enter, exit, close) under no subscriber, `Registry`
//! alone, profpoint's layer on `Registry`, profpoint's standalone subscriber, the fmt layer
//! with its output discarded, tracing-timing's layer, tracing-flame's layer; beside them the
//! same function under `#[profile_point]`, puffin's scope (profiling on and off), fastrace's
//! local span and hotpath's `#[measure]`, and bare. Checks the bridge's targets and exits
//! non-zero, printing MISS, for any not met:
//!
//! ```text
//! cargo bench -p profpoint-benches --bench tracing_spans
//! ```
//!
//! Figures are process CPU per call, all threads (peers that hand records to a worker thread
//! pay there), the minimum over rounds (the least disturbed round of a shared 2-vCPU VM). Each
//! subscriber is the thread's default for its own rounds only
//! (`tracing::dispatcher::with_default`); the overhead budget is off, so every call is timed.

// Shared with the point benches; this one uses the peers' workloads and the set-up.
#[cfg(target_os = "linux")]
#[path = "common.rs"]
#[allow(dead_code)]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use super::common::{fastrace_calls, hp_work, process_cpu_of, setup};
    use std::hint::black_box;
    use tracing_subscriber::prelude::*;

    const ROUNDS: usize = 10;
    const CALLS: u64 = 200_000;

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

    #[inline(never)]
    fn scoped(x: u64) -> u64 {
        puffin::profile_scope!("scoped");
        black_box(x) + 1
    }

    /// Minimum over rounds of the process CPU per call of `f(CALLS)`, after a warm-up; and
    /// of the calling thread's wall time per call (printed beside it: the two differ where a
    /// peer's worker threads do part of the work).
    fn cpu_ns_per_call(rounds: usize, mut f: impl FnMut(u64)) -> f64 {
        f(CALLS / 10);
        let mut wall = f64::MAX;
        let cpu = (0..rounds)
            .map(|_| {
                process_cpu_of(|| {
                    let t = std::time::Instant::now();
                    f(CALLS);
                    wall = wall.min(t.elapsed().as_nanos() as f64 / CALLS as f64);
                })
                .as_nanos() as f64
                    / CALLS as f64
            })
            .fold(f64::MAX, f64::min);
        print!("      wall {wall:>8.1}  ");
        cpu
    }

    fn calls(f: fn(u64) -> u64) -> impl FnMut(u64) {
        move |n| {
            for i in 0..n {
                black_box(f(i));
            }
        }
    }

    /// A subscriber that enables every span and records nothing.
    struct Nothing;

    impl tracing::Subscriber for Nothing {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// `traced` under `dispatch`, the thread's default for these rounds only.
    fn under(rounds: usize, dispatch: tracing::Dispatch) -> f64 {
        tracing::dispatcher::with_default(&dispatch, || cpu_ns_per_call(rounds, calls(traced)))
    }

    /// puffin's scopes, a frame closed every 1,000 calls (as a game loop closes one per frame:
    /// puffin keeps a frame's scopes until it is closed).
    fn puffin_calls(n: u64) {
        let mut left = n;
        while left > 0 {
            let batch = left.min(1_000);
            for i in 0..batch {
                black_box(scoped(i));
            }
            puffin::GlobalProfiler::lock().new_frame();
            left -= batch;
        }
    }

    pub(super) fn main() {
        // `cargo bench` passes `--bench`; `cargo test --benches` runs this as a smoke test.
        let quick = !std::env::args().any(|a| a == "--bench");
        let rounds = if quick { 1 } else { ROUNDS };
        // The budget off (every call timed); the peers with worker threads (fastrace's
        // reporter, hotpath's) are set up only before their own rows: their threads' CPU time
        // would otherwise land on every row measured after them.
        profpoint::set_budget(None);
        let mut check = profpoint_benches::Targets::default();
        // `TRACING_SPANS_ONLY=text`: only the rows whose name holds it, and no targets (to read
        // one row under `perf record`).
        let only = std::env::var("TRACING_SPANS_ONLY").ok();
        let row = |name: &str, measure: &mut dyn FnMut() -> f64| {
            if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
                return f64::NAN;
            }
            let ns = measure();
            println!("CPU {ns:>8.1}  {name}");
            ns
        };
        println!(
            "== per call, ns (min of {rounds} rounds): the calling thread's wall time, the process's CPU (all threads)"
        );
        let bare_ns = row("bare function", &mut || {
            cpu_ns_per_call(rounds, calls(bare))
        });
        let point = row("#[profile_point], timed", &mut || {
            cpu_ns_per_call(rounds, calls(pointed))
        });
        row("#[instrument], no subscriber", &mut || {
            under(
                rounds,
                tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()),
            )
        });
        // What `tracing` itself costs with a subscriber that does nothing (the same id for
        // every span, nothing recorded): the floor under every subscriber row.
        row("#[instrument], a subscriber doing nothing", &mut || {
            under(rounds, tracing::Dispatch::new(Nothing))
        });
        let registry = row("#[instrument], Registry alone", &mut || {
            under(
                rounds,
                tracing::Dispatch::new(tracing_subscriber::registry()),
            )
        });
        let layer = row("#[instrument], profpoint layer on Registry", &mut || {
            under(
                rounds,
                tracing::Dispatch::new(
                    tracing_subscriber::registry().with(profpoint_tracing::layer()),
                ),
            )
        });
        let standalone = row("#[instrument], profpoint subscriber", &mut || {
            under(
                rounds,
                tracing::Dispatch::new(profpoint_tracing::subscriber()),
            )
        });
        row("#[instrument], fmt layer, output discarded", &mut || {
            under(
                rounds,
                tracing::Dispatch::new(
                    tracing_subscriber::registry()
                        .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink)),
                ),
            )
        });
        // tracing-timing times the gaps between a span's events; with close events on, a span
        // with none is timed from its opening to its close.
        let timing = row("#[instrument], tracing-timing layer", &mut || {
            under(
                rounds,
                tracing::Dispatch::new(
                    tracing_subscriber::registry().with(
                        tracing_timing::Builder::default()
                            .span_close_events()
                            .layer(|| {
                                tracing_timing::Histogram::new_with_max(1_000_000_000, 2).unwrap()
                            }),
                    ),
                ),
            )
        });
        let flame = row(
            "#[instrument], tracing-flame layer (to a sink)",
            &mut || {
                under(
                    rounds,
                    tracing::Dispatch::new(
                        tracing_subscriber::registry()
                            .with(tracing_flame::FlameLayer::new(std::io::sink())),
                    ),
                )
            },
        );
        puffin::set_scopes_on(false);
        row("puffin scope, profiling off", &mut || {
            cpu_ns_per_call(rounds, puffin_calls)
        });
        puffin::set_scopes_on(true);
        row("puffin scope, profiling on", &mut || {
            cpu_ns_per_call(rounds, puffin_calls)
        });
        puffin::set_scopes_on(false);
        let _hotpath = setup();
        row("fastrace LocalSpan (with a reporter)", &mut || {
            cpu_ns_per_call(rounds, fastrace_calls)
        });
        row("hotpath #[measure]", &mut || {
            cpu_ns_per_call(rounds, calls(hp_work))
        });

        if only.is_some() {
            return;
        }
        check.target(
            "standalone subscriber / #[profile_point]",
            (standalone - bare_ns) / (point - bare_ns),
            2.0,
            "x",
        );
        check.target(
            "profpoint layer over Registry alone",
            layer - registry,
            25.0,
            "ns",
        );
        for (name, peer) in [("tracing-timing", timing), ("tracing-flame", flame)] {
            check.target(
                &format!("standalone subscriber / {name}'s layer"),
                standalone / peer,
                0.5,
                "x",
            );
            check.target(
                &format!("profpoint layer / {name}'s layer"),
                layer / peer,
                0.5,
                "x",
            );
        }
        if quick {
            println!("(a smoke run: `cargo bench` measures)");
            return;
        }
        check.finish();
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!(
        "SKIPPED tracing_spans: profpoint's benches measure its Linux build (perf counters, callgrind, Linux peers)"
    );
}
