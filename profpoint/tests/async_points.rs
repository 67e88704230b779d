//! `async fn` points: first poll to completion, across awaits and threads, not folded.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use profpoint_test_support::task::{YieldOnce, poll_once};

/// The row of the point `name` in a report.
fn async_point<'r>(r: &'r profpoint::Report, name: &str) -> &'r profpoint::PointReport {
    r.points
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no point named {name}"))
}

/// The work of every annotated `async fn` below: 10 ms, an await, 10 ms, and a `?`.
async fn work(n: u32) -> Result<u32, String> {
    std::thread::sleep(Duration::from_millis(10));
    YieldOnce(false).await;
    std::thread::sleep(Duration::from_millis(10));
    let v: u32 = format!("{n}").parse().map_err(|_| "bad".to_string())?;
    Ok(v)
}

// One point per test: the tests of this file run side by side in one process under
// `cargo test`, and each counts its own point's calls.

#[profpoint::profile_point]
async fn fetch(n: u32) -> Result<u32, String> {
    work(n).await
}

#[profpoint::profile_point]
async fn fetch_overlapped(n: u32) -> Result<u32, String> {
    work(n).await
}

#[profpoint::profile_point]
async fn fetch_never_polled(n: u32) -> Result<u32, String> {
    work(n).await
}

#[test]
fn an_async_call_is_timed_from_first_poll_to_completion_across_threads() {
    let mut fut: Pin<Box<dyn Future<Output = Result<u32, String>> + Send>> = Box::pin(fetch(7));
    assert!(poll_once(fut.as_mut()).is_pending());
    // Finish it on another thread after a pause: the pause counts (the call is in flight).
    let out = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        loop {
            if let Poll::Ready(v) = poll_once(fut.as_mut()) {
                return v;
            }
        }
    })
    .join()
    .unwrap();
    assert_eq!(out, Ok(7));
    let r = profpoint::snapshot();
    let p = async_point(&r, "async_points::fetch");
    assert_eq!(p.kind, "async");
    assert_eq!((p.nr, p.timed), (1, 1));
    assert!(
        p.total_ns >= 30_000_000 && p.total_ns < 300_000_000,
        "{}",
        p.total_ns
    );
    assert!(
        r.to_table().contains("async_points::fetch @"),
        "async is marked"
    );
}

#[test]
fn overlapping_async_calls_are_not_folded() {
    let mut a = Box::pin(fetch_overlapped(1));
    let mut b = Box::pin(fetch_overlapped(2));
    assert!(poll_once(a.as_mut()).is_pending());
    assert!(poll_once(b.as_mut()).is_pending());
    assert!(poll_once(a.as_mut()).is_ready());
    assert!(poll_once(b.as_mut()).is_ready());
    let r = profpoint::snapshot();
    let p = async_point(&r, "async_points::fetch_overlapped");
    assert_eq!((p.nr, p.timed, p.nested), (2, 2, 0));
}

#[test]
fn a_future_never_polled_records_nothing() {
    drop(fetch_never_polled(3));
    let r = profpoint::snapshot();
    let p = async_point(&r, "async_points::fetch_never_polled");
    assert_eq!(p.nr, 0);
}
