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
//! pay there), the least of rounds that take the rows in turn (the least disturbed round of a
//! shared 2-vCPU VM, with the same disturbances for every row). Each subscriber is the
//! thread's default for its own rounds only (`tracing::dispatcher::with_default`); the
//! overhead budget is off, so every call is timed.

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

    /// One round of `f(CALLS)`: the process's CPU per call and the calling thread's wall time
    /// per call (the two differ where a peer's worker threads do part of the work).
    fn one_round(f: &mut dyn FnMut(u64)) -> (f64, f64) {
        let mut wall = 0.0;
        let cpu = process_cpu_of(|| {
            let t = std::time::Instant::now();
            f(CALLS);
            wall = t.elapsed().as_nanos() as f64 / CALLS as f64;
        })
        .as_nanos() as f64
            / CALLS as f64;
        (cpu, wall)
    }

    /// A row: its name, its calls, and its least CPU and wall time per call so far.
    struct Row {
        name: &'static str,
        run: Box<dyn FnMut(u64)>,
        cpu: f64,
        wall: f64,
    }

    impl Row {
        fn new(name: &'static str, run: impl FnMut(u64) + 'static) -> Row {
            Row {
                name,
                run: Box::new(run),
                cpu: f64::MAX,
                wall: f64::MAX,
            }
        }
    }

    /// Measures `rows` in turn, `rounds` times, each after a warm-up, keeping each row's
    /// least round: a disturbance of the shared machine that lasts seconds (the neighbours of
    /// a 2-vCPU VM) then lands on every row alike, not on whichever rows ran during it.
    /// Prints each row; `only` keeps the rows whose name holds it.
    fn interleaved(rounds: usize, rows: &mut Vec<Row>, only: Option<&str>) {
        rows.retain(|r| only.is_none_or(|o| r.name.contains(o)));
        for r in rows.iter_mut() {
            (r.run)(CALLS / 10);
        }
        for _ in 0..rounds {
            for r in rows.iter_mut() {
                let (cpu, wall) = one_round(&mut r.run);
                r.cpu = r.cpu.min(cpu);
                r.wall = r.wall.min(wall);
            }
        }
        for r in rows.iter() {
            println!("      wall {:>8.1}  CPU {:>8.1}  {}", r.wall, r.cpu, r.name);
        }
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

    thread_local! {
        /// The clock floors' entered spans (their clock reads at enter) and their summed time.
        static ENTERED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
        static SUM: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// The clock subscriber's next span id.
        static NEXT_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
    }

    /// What any span timer does at least: a clock read at enter, one at exit, the difference
    /// kept (a thread's stack of open reads; no span state, no call recorded).
    fn clock_enter() {
        let t = profpoint_benches::rdtsc();
        ENTERED.with(|e| e.borrow_mut().push(t));
    }

    fn clock_exit() {
        let t = profpoint_benches::rdtsc();
        if let Some(t0) = ENTERED.with(|e| e.borrow_mut().pop()) {
            SUM.with(|s| s.set(s.get() + t.wrapping_sub(t0)));
        }
    }

    /// The floor of a timing layer: [`clock_enter`] and [`clock_exit`] on a `Registry`.
    struct ClockLayer;

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClockLayer {
        fn on_enter(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
            clock_enter();
        }
        fn on_exit(&self, _: &tracing::span::Id, _: tracing_subscriber::layer::Context<'_, S>) {
            clock_exit();
        }
    }

    /// The floor of a timing subscriber: ids from a thread's counter (no span state: nothing
    /// a span moved to another thread could find), [`clock_enter`] and [`clock_exit`].
    struct ClockOnly;

    impl tracing::Subscriber for ClockOnly {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            let id = NEXT_ID.with(|n| {
                let id = n.get();
                n.set(id + 1);
                id
            });
            tracing::span::Id::from_u64(id)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {
            clock_enter();
        }
        fn exit(&self, _: &tracing::span::Id) {
            clock_exit();
        }
    }

    /// One uncontended atomic read-modify-write a call, beside the bare call: the least a
    /// change of a span's state costs when another thread may hold the span.
    static SHARED_WORD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    #[inline(never)]
    fn bare_and_atomic(x: u64) -> u64 {
        SHARED_WORD.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        black_box(x) + 1
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
        // The budget off: every call timed.
        profpoint::set_budget(None);
        let mut check = profpoint_benches::Targets::default();
        // `TRACING_SPANS_ONLY=text`: only the rows whose name holds it, and no targets (to read
        // one row under `perf record`).
        let only = std::env::var("TRACING_SPANS_ONLY").ok();
        println!(
            "== per call, ns (least of {rounds} rounds, the rows in turn): the calling thread's wall time, the process's CPU (all threads)"
        );
        let under = |dispatch: tracing::Dispatch| {
            move |n: u64| tracing::dispatcher::with_default(&dispatch, || calls(traced)(n))
        };
        let mut rows = vec![
            Row::new("bare function", calls(bare)),
            Row::new("#[profile_point], timed", calls(pointed)),
            Row::new(
                "#[instrument], no subscriber",
                under(tracing::Dispatch::new(
                    tracing::subscriber::NoSubscriber::default(),
                )),
            ),
            // What `tracing` itself costs with a subscriber that does nothing (the same id
            // for every span, nothing recorded): the floor under every subscriber row.
            Row::new(
                "#[instrument], a subscriber doing nothing",
                under(tracing::Dispatch::new(Nothing)),
            ),
            // The floors under the targets: a subscriber and a layer that read the clock at
            // enter and exit and keep nothing else, and one atomic add (what each change of a
            // span's state costs at least where another thread may hold the span).
            Row::new(
                "#[instrument], a subscriber reading the clock only",
                under(tracing::Dispatch::new(ClockOnly)),
            ),
            Row::new("bare function and one atomic add", calls(bare_and_atomic)),
            Row::new(
                "#[instrument], Registry alone",
                under(tracing::Dispatch::new(tracing_subscriber::registry())),
            ),
            Row::new(
                "#[instrument], a layer reading the clock only, on Registry",
                under(tracing::Dispatch::new(
                    tracing_subscriber::registry().with(ClockLayer),
                )),
            ),
            Row::new(
                "#[instrument], profpoint layer on Registry",
                under(tracing::Dispatch::new(
                    tracing_subscriber::registry().with(profpoint_tracing::layer()),
                )),
            ),
            Row::new(
                "#[instrument], profpoint subscriber",
                under(tracing::Dispatch::new(profpoint_tracing::subscriber())),
            ),
            Row::new(
                "#[instrument], fmt layer, output discarded",
                under(tracing::Dispatch::new(tracing_subscriber::registry().with(
                    tracing_subscriber::fmt::layer().with_writer(std::io::sink),
                ))),
            ),
            // tracing-timing times the gaps between a span's events; with close events on, a
            // span with none is timed from its opening to its close.
            Row::new(
                "#[instrument], tracing-timing layer",
                under(tracing::Dispatch::new(
                    tracing_subscriber::registry().with(
                        tracing_timing::Builder::default()
                            .span_close_events()
                            .layer(|| {
                                tracing_timing::Histogram::new_with_max(1_000_000_000, 2).unwrap()
                            }),
                    ),
                )),
            ),
            Row::new(
                "#[instrument], tracing-flame layer (to a sink)",
                under(tracing::Dispatch::new(
                    tracing_subscriber::registry()
                        .with(tracing_flame::FlameLayer::new(std::io::sink())),
                )),
            ),
            Row::new("puffin scope, profiling off", |n| {
                puffin::set_scopes_on(false);
                puffin_calls(n);
            }),
            Row::new("puffin scope, profiling on", |n| {
                puffin::set_scopes_on(true);
                puffin_calls(n);
                puffin::set_scopes_on(false);
            }),
        ];
        interleaved(rounds, &mut rows, only.as_deref());
        // The peers with worker threads last, after their set-up: their threads' CPU time
        // would otherwise land on every row measured beside them.
        let _hotpath = setup();
        let mut peers = vec![
            Row::new("fastrace LocalSpan (with a reporter)", fastrace_calls),
            Row::new("hotpath #[measure]", calls(hp_work)),
        ];
        interleaved(rounds, &mut peers, only.as_deref());
        let ns = |name: &str| {
            rows.iter()
                .find(|r| r.name == name)
                .map_or(f64::NAN, |r| r.cpu)
        };
        let bare_ns = ns("bare function");
        let point = ns("#[profile_point], timed");
        let registry = ns("#[instrument], Registry alone");
        let layer = ns("#[instrument], profpoint layer on Registry");
        let standalone = ns("#[instrument], profpoint subscriber");
        let timing = ns("#[instrument], tracing-timing layer");
        let flame = ns("#[instrument], tracing-flame layer (to a sink)");
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
