//! The compile-time off switch: `cargo test -p profpoint --features off --test off`.
//! Every macro expands to the bare code: no point exists, the code still runs.
#![cfg(feature = "off")]

#[profpoint::profile_point]
fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[profpoint::profile_point]
async fn later() -> u32 {
    7
}

profpoint::define_profile_point!(EXPLICIT);

profpoint::tracepoint!(fn event(n: u64));

#[test]
fn macros_expand_to_the_bare_code() {
    assert_eq!(add(2, 3), 5);
    let _g = profpoint::profile_scope!("scope");
    let t = EXPLICIT.start();
    EXPLICIT.leave(t);
    drop(later());
    assert_eq!(profpoint::points().count(), 0, "no point is compiled in");
    let h = register_trace_event(|_| panic!("never called")).unwrap();
    trace_event(1);
    assert!(!trace_event_enabled());
    let evaluated = std::cell::Cell::new(false);
    profpoint::trace!(event({
        evaluated.set(true);
        2
    }));
    assert!(!evaluated.get(), "compiled out: arguments not evaluated");
    h.unregister();
    assert!(
        profpoint::tracepoints().is_empty(),
        "no tracepoint is compiled in"
    );
    assert!(profpoint::snapshot().points.is_empty());
}

/// Nothing roots profpoint's runtime in an `off` build: its start-up initialiser (which reads
/// the `PROFPOINT_*` variables) is not linked, so none of its strings is in the binary. (This
/// test binary itself calls `snapshot()`, so the report code is linked; the initialiser and
/// what only it reaches must still be absent.)
#[test]
fn the_runtime_initialiser_is_not_linked() {
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    // Built at run time: the whole names must not be literals of this test itself.
    for var in ["SUBTRACT_OVERHEAD", "SAMPLE", "HEATMAP_SOURCE"] {
        let needle = format!("PROFPOINT_{var}");
        assert!(
            !exe.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{needle} is in the off build: the runtime's initialiser was linked"
        );
    }
}
