//! # profpoint-tracing
//!
//! Every [`tracing`](https://docs.rs/tracing) span as a profpoint profile point, with no
//! re-annotation: `#[instrument]`ed functions, `info_span!` scopes and the spans libraries
//! emit get a row in profpoint's table, a place in its points tree (nested with
//! `#[profile_point]` functions either way), self time, a histogram, the overhead budget and
//! `PROFPOINT_DISABLE=my_crate::*`, like any point.
//!
//! ```
//! use tracing_subscriber::prelude::*;
//!
//! #[tracing::instrument]
//! fn parse(input: &str) -> usize {
//!     input.split_whitespace().count()
//! }
//!
//! fn main() {
//!     tracing_subscriber::registry().with(profpoint_tracing::layer()).init();
//!     profpoint::report_at_exit();
//!     for _ in 0..10 {
//!         parse("a few words to count");
//!     }
//!     let report = profpoint::snapshot();
//!     # let name = format!("{}::parse", module_path!());
//!     # assert_eq!(report.points.iter().find(|p| p.name == name).unwrap().nr, 10);
//! }
//! ```
//!
//! [`layer()`] is a `tracing-subscriber` [`Layer`](tracing_subscriber::Layer) over any
//! subscriber that looks spans up (`Registry`, with `fmt` or any other layer beside it).
//! [`subscriber()`] needs nothing else: it keeps no span data at all, for the lowest cost when
//! profiling is all the spans are for (`tracing::subscriber::set_global_default(
//! profpoint_tracing::subscriber())`).
//!
//! ## What a span becomes
//! - **One point per span callsite**, named `target::span_name` (an `#[instrument]`ed function
//!   in module `my_crate::parse` named `lex`: `my_crate::parse::lex`), at the callsite's file
//!   and line. Points are claimed from a pool of 1,024 reserved in profpoint's linker slice
//!   (unclaimed, they are in no report); past it, further callsites are not profiled and
//!   profpoint says so once on stderr.
//! - **One call per span**, recorded when the span closes, however many times it was entered
//!   and on whichever threads. Its **busy** time (entered, summed over its enters) is the
//!   point's total and self time and its min, max and histogram entry; its **idle** time (the
//!   time between its enters) is the report's `idle_ns` for the point
//!   ([`PointReport::idle_ns`](profpoint::PointReport::idle_ns)), listed under the table. Its
//!   parent in the points tree is whatever point or span is active on the thread of its first
//!   enter; the points and spans entered inside it, on any thread, are its children.
//! - **Sync spans** entered once: one call, timed from enter to exit, no idle time, as a
//!   `#[profile_point]` function's.
//! - **Async spans** (`.instrument(span)`, `#[instrument] async fn`) are entered on every poll,
//!   and once more when the future is dropped (`tracing` drops it inside its span): one call,
//!   whose busy time is the time spent in those polls and whose idle time is the time between
//!   them (waiting to be woken and polled again), as tokio-console and `tracing-subscriber`'s
//!   fmt timings tell them apart. The time before the first poll and after the last exit is in
//!   neither figure.
//! - **Events** are not counted unless asked ([`ProfpointLayer::with_events`],
//!   [`ProfpointSubscriber::with_events`]): then each event callsite has a count-only point
//!   named `target::event@file:line`.
//! - The user's settings apply to span points as to any: `PROFPOINT_DISABLE`,
//!   `PROFPOINT_ENABLE`, `PROFPOINT_SAMPLE` and [`profpoint::disable`] and its kin, including
//!   settings made before the span's callsite was first seen.

mod callsites;
mod ids;
mod layer;
mod spans;
mod stack;
mod subscriber;

pub use layer::ProfpointLayer;
pub use subscriber::ProfpointSubscriber;

/// The bridge as a `tracing-subscriber` layer: `tracing_subscriber::registry().with(
/// profpoint_tracing::layer()).init()`.
pub fn layer() -> ProfpointLayer {
    ProfpointLayer::default()
}

/// The bridge as a subscriber of its own, which records nothing but the spans' points.
pub fn subscriber() -> ProfpointSubscriber {
    ProfpointSubscriber::default()
}

/// How many callsites can have a point: the pool of spare points this crate reserves.
pub const POOL_SIZE: usize = callsites::POOL;
