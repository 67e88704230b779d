//! Annotating a function changes nothing but its timing: the same drop order of by-value
//! parameters (sync and async), the same `Location::caller()`, nested functions named by
//! their documented path, and profpoint's first-use work outside every interval.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

thread_local! {
    static DROPS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

struct D(&'static str);

impl Drop for D {
    fn drop(&mut self) {
        DROPS.with(|d| d.borrow_mut().push(self.0));
    }
}

fn drops_of(f: impl FnOnce()) -> Vec<&'static str> {
    DROPS.with(|d| d.borrow_mut().clear());
    f();
    DROPS.with(|d| d.borrow_mut().clone())
}

fn bare(_a: D, b: D, (c, _d): (D, D)) {
    let _local = D("local");
    let _ = &b;
    let _ = &c;
}

#[profpoint::profile_point]
fn annotated(_a: D, b: D, (c, _d): (D, D)) {
    let _local = D("local");
    let _ = &b;
    let _ = &c;
}

async fn bare_async(_a: D, b: D, _: D) {
    let _local = D("local");
    let _ = &b;
}

#[profpoint::profile_point]
async fn annotated_async(_a: D, b: D, _: D) {
    let _local = D("local");
    let _ = &b;
}

fn args() -> (D, D, (D, D)) {
    (D("a"), D("b"), (D("c"), D("d")))
}

/// Polls a future that never waits to completion.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn by_value_parameters_drop_in_the_same_order() {
    let want = drops_of(|| {
        let (a, b, c) = args();
        bare(a, b, c)
    });
    let got = drops_of(|| {
        let (a, b, c) = args();
        annotated(a, b, c)
    });
    assert_eq!(want.len(), 5, "{want:?}");
    assert_eq!(got, want);

    let want = drops_of(|| block_on(bare_async(D("a"), D("b"), D("c"))));
    let got = drops_of(|| block_on(annotated_async(D("a"), D("b"), D("c"))));
    assert_eq!(want.len(), 4, "{want:?}");
    assert_eq!(got, want);
    // A future dropped before its first poll drops its parameters the same way too.
    let want = drops_of(|| drop(bare_async(D("a"), D("b"), D("c"))));
    let got = drops_of(|| drop(annotated_async(D("a"), D("b"), D("c"))));
    assert_eq!(got, want);
}

#[profpoint::profile_point]
#[track_caller]
fn where_called() -> &'static std::panic::Location<'static> {
    std::panic::Location::caller()
}

#[test]
fn track_caller_still_reports_the_caller() {
    let line = line!() + 1;
    let loc = where_called();
    assert_eq!((loc.file(), loc.line()), (file!(), line));
}

#[profpoint::profile_point]
fn parent() -> u32 {
    #[profpoint::profile_point]
    fn nested() -> u32 {
        7
    }
    nested()
}

fn unannotated_parent() -> u32 {
    #[profpoint::profile_point]
    fn nested_too() -> u32 {
        8
    }
    nested_too()
}

#[test]
fn a_nested_fn_is_named_by_its_path_whether_or_not_its_parent_is_annotated() {
    assert_eq!(parent() + unannotated_parent(), 15);
    let names: Vec<String> = profpoint::snapshot()
        .points
        .into_iter()
        .map(|p| p.name)
        .collect();
    for want in [
        "transparent::parent",
        "transparent::parent::nested",
        "transparent::unannotated_parent::nested_too",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
}

/// Pairs of points, each pair used once: the child's first call on this thread allocates its
/// slot inside the parent's interval.
macro_rules! pairs {
    ($($parent:ident $child:ident),*) => {
        $(
            #[profpoint::profile_point]
            fn $parent() {
                $child();
            }
            #[profpoint::profile_point]
            fn $child() {}
        )*
        const PAIRS: &[(fn(), &str)] = &[$(($parent, stringify!($parent))),*];
    };
}

pairs!(p0 c0, p1 c1, p2 c2, p3 c3, p4 c4, p5 c5, p6 c6, p7 c7);

fn setup_ns() -> f64 {
    profpoint::snapshot().setup.ns
}

#[test]
fn first_use_work_is_in_no_interval_and_is_reported_as_profpoints_own() {
    // Warm this thread's shard and the report path.
    let _ = setup_ns();
    let mut verdicts = Vec::new();
    for (parent, name) in PAIRS {
        let before = setup_ns();
        parent();
        let setup = setup_ns() - before;
        let total = profpoint::snapshot()
            .points
            .into_iter()
            .find(|p| p.name == format!("transparent::{name}"))
            .unwrap()
            .total_ns;
        verdicts.push((total, setup));
    }
    println!("(parent total ns, first-use set-up ns in its interval): {verdicts:?}");
    assert!(
        verdicts.iter().all(|&(_, s)| s > 0.0),
        "set-up was reported"
    );
    // Were the set-up inside the parent's interval, the parent's total would be at least the
    // set-up, every time. It is not: one call's own cost is far below it (a preempted call
    // can exceed it, so one attempt of eight suffices).
    assert!(
        verdicts
            .iter()
            .any(|&(total, setup)| (total as f64) < setup),
        "every parent's total includes its child's first-use set-up"
    );
}
