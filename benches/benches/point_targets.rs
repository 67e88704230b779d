//! The profile-point targets, measured in one run and checked: exits non-zero and
//! prints MISS for any target not met.
//!
//! ```text
//! cargo bench -p profpoint-benches --bench point_targets
//! ```
//!
//! Nanosecond figures are the minimum over rounds (the least disturbed round: this is a
//! shared 2-vCPU VM); instruction counts come from the PMU (`perf_event_open`) and are exact.

#[cfg(target_os = "linux")]
#[path = "common.rs"]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::Instant;

    use super::common;
    use common::*;

    const ROUNDS: usize = 15;
    const CALLS: u64 = 200_000;

    /// Minimum over rounds of the per-call wall time of `f(CALLS)`.
    fn ns_per_call(mut f: impl FnMut(u64)) -> f64 {
        f(CALLS / 10); // warm up: first-call paths, caches, branch predictors
        (0..ROUNDS)
            .map(|_| {
                let t = Instant::now();
                f(CALLS);
                t.elapsed().as_nanos() as f64 / CALLS as f64
            })
            .fold(f64::MAX, f64::min)
    }

    /// Minimum over rounds of the per-call process CPU time (background threads included).
    fn cpu_ns_per_call(mut f: impl FnMut(u64)) -> f64 {
        f(CALLS / 10);
        (0..ROUNDS / 2)
            .map(|_| process_cpu_of(|| f(CALLS)).as_nanos() as f64 / CALLS as f64)
            .fold(f64::MAX, f64::min)
    }

    fn loop_of(work: fn(u64) -> u64) -> impl FnMut(u64) {
        move |n| {
            for i in 0..n {
                black_box(work(i));
            }
        }
    }

    /// Per-thread time per call when `n` threads call `pp_on` at once (min over rounds).
    /// Per-thread ns a call of one thread and of two threads at once, each the least of ROUNDS
    /// rounds taken in turn. Two busy vCPUs of a shared VM slow each other in stretches of
    /// several rounds, with no shared data at all (BENCHMARKS.md, "Figures behind design
    /// choices"), so the two are interleaved and given as many rounds as the single-thread
    /// figures.
    fn per_thread_ns() -> (f64, f64) {
        let ns = |n| per_thread(n, CALLS).as_nanos() as f64 / CALLS as f64;
        (0..ROUNDS).fold((f64::MAX, f64::MAX), |(one, two), _| {
            (one.min(ns(1)), two.min(ns(2)))
        })
    }

    fn arg_after(flag: &str) -> Option<String> {
        let mut it = std::env::args();
        it.find(|a| a == flag)?;
        it.next()
    }

    /// The loop callgrind counts (`--toggle-collect=*point_targets::linux::run*`): every variant runs
    /// through it, so their differences are the points' own instructions.
    #[inline(never)]
    fn run(work: fn(u64) -> u64, n: u64) {
        for i in 0..n {
            black_box(work(black_box(i)));
        }
    }

    /// A named variant of the measured function.
    type Variant = (&'static str, fn(u64) -> u64);

    const COUNTED: [Variant; 4] = [
        ("bare", bare),
        ("off", pp_off),
        ("on", pp_on),
        ("sampled", pp_sampled),
    ];

    /// Instructions per call of each counted variant (bare, off, on, sampled), by callgrind in a
    /// child process of this binary.
    fn callgrind_counts() -> Result<[f64; 4], String> {
        let mut out = [0.0; 4];
        for (slot, (name, _)) in out.iter_mut().zip(COUNTED) {
            let total = profpoint_benches::callgrind_instructions(
                "*point_targets::linux::run*",
                &["--count-loop", name],
            )?;
            *slot = total as f64 / CALLS as f64;
        }
        Ok(out)
    }

    /// 32 counted-only points and 32 bare twins, each called with the last one's result: the
    /// counted call as a real caller makes it (many points, each call waiting for the one
    /// before), where the row above calls one point with independent arguments: the figure
    /// real loops such as smallvec's pay (BENCHMARKS.md, "Profile points"), no target yet.
    macro_rules! chain {
        ($counted:ident, $bare:ident; $($c:ident $b:ident)*) => {
            $(
                #[profpoint::profile_point]
                #[inline(never)]
                fn $c(x: u64) -> u64 {
                    black_box(x) + 1
                }

                #[inline(never)]
                fn $b(x: u64) -> u64 {
                    black_box(x) + 1
                }
            )*
            /// One pass of the chain of counted points (32 calls).
            fn $counted(mut x: u64) -> u64 {
                $(x = $c(x);)*
                x
            }
            /// One pass of the chain of bare twins (32 calls).
            fn $bare(mut x: u64) -> u64 {
                $(x = $b(x);)*
                x
            }
        };
    }
    chain!(chain_counted, chain_bare;
        cc00 cb00 cc01 cb01 cc02 cb02 cc03 cb03 cc04 cb04 cc05 cb05 cc06 cb06 cc07 cb07
        cc08 cb08 cc09 cb09 cc10 cb10 cc11 cb11 cc12 cb12 cc13 cb13 cc14 cb14 cc15 cb15
        cc16 cb16 cc17 cb17 cc18 cb18 cc19 cb19 cc20 cb20 cc21 cb21 cc22 cb22 cc23 cb23
        cc24 cb24 cc25 cb25 cc26 cb26 cc27 cb27 cc28 cb28 cc29 cb29 cc30 cb30 cc31 cb31);
    const CHAIN: u64 = 32;

    /// Per call (ns) of a chain pass `f`, `CALLS` calls in all.
    fn chain_ns(f: fn(u64) -> u64) -> f64 {
        ns_per_call(|n| {
            let mut x = 0;
            for _ in 0..n / CHAIN {
                x = f(x);
            }
            black_box(x);
        })
    }

    /// A child with a little work (~10 ns): compensation's error per child is what matters, and
    /// it is reported beside the figure.
    #[inline(always)]
    fn comp_work(x: u64) -> u64 {
        let mut h = x;
        for _ in 0..8 {
            h = black_box(h.wrapping_mul(0x0000_0100_0000_01b3) ^ (h >> 29));
        }
        h
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn comp_leaf(x: u64) -> u64 {
        comp_work(x)
    }

    #[inline(never)]
    fn comp_bare_leaf(x: u64) -> u64 {
        comp_work(x)
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn comp_parent_raw() -> u64 {
        (0..200).map(comp_leaf).sum()
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn comp_parent() -> u64 {
        (0..200).map(comp_leaf).sum()
    }

    #[profpoint::profile_point]
    #[inline(never)]
    fn comp_parent_bare() -> u64 {
        (0..200).map(comp_bare_leaf).sum()
    }

    /// Median parent times (ns): uncompensated, compensated, and with un-annotated children.
    fn compensation_medians() -> (u64, u64, u64) {
        for _ in 0..2_001 {
            black_box(comp_parent_raw());
            black_box(comp_parent_bare());
        }
        profpoint::compensate(true);
        for _ in 0..2_001 {
            black_box(comp_parent());
        }
        profpoint::compensate(false);
        let points = profpoint::snapshot().points;
        let p50 = |name: &str| {
            points
                .iter()
                .find(|p| p.name.ends_with(name))
                .map_or(0, |p| p.p50_ns)
        };
        (
            p50("::comp_parent_raw"),
            p50("::comp_parent"),
            p50("::comp_parent_bare"),
        )
    }

    pub(super) fn main() {
        // `cargo bench` passes `--bench`; `cargo test --benches` runs this as a smoke test.
        let quick = !std::env::args().any(|a| a == "--bench");
        // fastrace's most favourable set-up first (no reporter set yet: spans are not handed over).
        let fr_bare_cpu = if quick {
            0.0
        } else {
            cpu_ns_per_call(fastrace_calls)
        };
        let _guard = setup();
        let mut check = profpoint_benches::Targets::default();

        if let Some(name) = arg_after("--count-loop") {
            // Child mode for the valgrind fallback: run one loop, counted by callgrind.
            let (_, work) = COUNTED
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("no loop named {name:?}"));
            run(work, CALLS);
            return;
        }

        println!("== instructions per call (user space, perf_event_open; else valgrind)");
        let counted = match profpoint_benches::Instructions::open() {
            Ok(ctr) => {
                let per_call = |work: fn(u64) -> u64| {
                    let mut f = loop_of(work);
                    f(1_000);
                    (0..5).map(|_| ctr.count(|| f(CALLS))).min().unwrap() as f64 / CALLS as f64
                };
                Ok([
                    per_call(bare),
                    per_call(pp_off),
                    per_call(pp_on),
                    per_call(pp_sampled),
                ])
            }
            Err(e) => callgrind_counts()
                .inspect(|_| {
                    println!("      ({e}; counted with valgrind --tool=callgrind instead)");
                })
                .map_err(|v| format!("{e}; and {v}")),
        };
        match counted {
            Ok([bare_i, off_i, on_i, sampled_i]) => {
                println!(
                    "      bare fn {bare_i:.2}, off {off_i:.2}, on {on_i:.2}, sampled 1/16 {sampled_i:.2}"
                );
                // Known miss, by choice: the body stays in the function (so the annotation is
                // transparent), so the off path is a compare and a branch (3 instructions) plus, in
                // a leaf function like this one, the stack frame the enabled path's call needs (5):
                // recorded 8.
                check.known_miss(
                    "off point: extra instructions over the bare fn (a leaf)",
                    off_i - bare_i,
                    3.0,
                    8.0,
                    "instr",
                );
            }
            Err(why) => println!("SKIP  instruction counts: {why}"),
        }
        if quick {
            println!("(quick mode: timing targets are measured only under `cargo bench`)");
            check.finish();
            return;
        }

        println!("== nanoseconds per call (wall, min of {ROUNDS} rounds of {CALLS})");
        let bare_ns = ns_per_call(loop_of(bare));
        let tsc_pair = ns_per_call(|n| {
            for _ in 0..n {
                let t0 = profpoint_benches::rdtsc();
                black_box(profpoint_benches::rdtsc().wrapping_sub(t0));
            }
        });
        let tsc_one = ns_per_call(|n| {
            for _ in 0..n {
                black_box(profpoint_benches::rdtsc());
            }
        });
        let on_ns = ns_per_call(loop_of(pp_on));
        let sampled_ns = ns_per_call(loop_of(pp_sampled));
        let off_ns = ns_per_call(loop_of(pp_off));
        let counted_ns = ns_per_call(loop_of(pp_counted));
        println!(
            "      bare fn {bare_ns:.2}, tsc pair {tsc_pair:.2}, one tsc {tsc_one:.2}, on {on_ns:.2}, sampled 1/16 {sampled_ns:.2}, counted only {counted_ns:.2}, off {off_ns:.2}"
        );
        // Met since a timed call's histogram bucket is added one call late (`Slot::record_hist`):
        // +0.28-0.31 ns, +7.07-7.29 before, alternating (BENCHMARKS.md).
        check.target(
            "enabled point over bare fn, minus a bare TSC pair",
            (on_ns - bare_ns) - tsc_pair,
            3.0,
            "ns",
        );
        // The target for a call counted and not timed, 1.5 ns (the budget counts every call it
        // cannot afford to time, so many calls take this path): a call, the thread's word, one
        // add. It reads 1.35 or 1.62 ns by the binary's code layout alone (two builds
        // differing only in the timed path, alternating, 2026-12-01), so it is a known miss at
        // the slower figure.
        check.known_miss(
            "counted-only point over bare fn",
            counted_ns - bare_ns,
            1.5,
            1.62,
            "ns",
        );
        assert_eq!(profpoint::count_only("*::cc*"), 32);
        let chain_counted_ns = chain_ns(chain_counted);
        let chain_bare_ns = chain_ns(chain_bare);
        println!(
            "      32 points, dependent calls: bare {chain_bare_ns:.2}, counted only {chain_counted_ns:.2}"
        );
        println!(
            "FIGURE counted-only point over bare fn, 32 points, dependent calls     {:.2} ns   (no target: the row above's call as a real caller makes it)",
            chain_counted_ns - chain_bare_ns
        );
        // Met since the histogram's bucket is added one call late (8.99-9.03 ns against one TSC
        // read's 9.47; 10.06-10.26 before, alternating: BENCHMARKS.md).
        check.target(
            "sampled point (1/16) over bare fn, vs one TSC read",
            sampled_ns - bare_ns,
            tsc_one,
            "ns",
        );

        println!(
            "== process CPU per call, all threads (min of {} rounds)",
            ROUNDS / 2
        );
        let on_cpu = cpu_ns_per_call(loop_of(pp_on));
        let fr_cpu = cpu_ns_per_call(fastrace_calls);
        let hp_cpu = cpu_ns_per_call(loop_of(hp_work));
        println!(
            "      profpoint {on_cpu:.2}, fastrace LocalSpan {fr_cpu:.2} (with a reporter; {fr_bare_cpu:.2} without), hotpath measure {hp_cpu:.2}"
        );
        // Known miss since 2026-11-24: fastrace without a reporter measured 24.6 ns here (47.2 ns
        // when the target was set); 1.11-1.14x until the histogram's bucket went one call late,
        // 0.86-0.93x since (2026-12-01, alternating).
        check.known_miss(
            "profpoint / fastrace LocalSpan (its cheaper set-up)",
            on_cpu / fr_cpu.min(fr_bare_cpu),
            0.75,
            0.93,
            "x",
        );
        check.target("profpoint / hotpath #[measure]", on_cpu / hp_cpu, 0.60, "x");

        println!("== overhead compensation: a parent of 200 annotated children (overhead budget)");
        let (raw, comp, bare) = compensation_medians();
        println!(
            "      parent p50: uncompensated {raw} ns, compensated {comp} ns, with the children bare {bare} ns \
             (error per child {:+.2} ns)",
            (comp as f64 - bare as f64) / 200.0
        );
        // What compensation removes per child, against what the child's instrumentation really
        // costs there (uncompensated minus bare): within 10% (for children this small the residue
        // is a large share of the parent; for children of ~100 ns it is a few percent).
        let cost = (raw as f64 - bare as f64) / 200.0;
        let error = (comp as f64 - bare as f64) / 200.0;
        check.target(
            "compensation's error per child, share of a child's instrumentation",
            (error / cost).abs() * 100.0,
            10.0,
            "%",
        );

        println!("== two threads on the same point (per-thread ns per call)");
        let (one, two) = per_thread_ns();
        println!("      one thread {one:.2}, two threads {two:.2}");
        check.target("two threads / one thread, per thread", two / one, 1.15, "x");

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
        "SKIPPED point_targets: profpoint's benches measure its Linux build (perf counters, callgrind, Linux peers)"
    );
}
