//! What the bridge's tests share: reading points and paths of the points tree by prefix.
//!
//! Points are process-wide and the tests of one binary run in parallel: every test names its
//! spans (or their target) with a prefix of its own.

#![allow(dead_code)]

use profpoint::{PointReport, Report};

/// The report's point named `name`.
pub(crate) fn point(report: &Report, name: &str) -> PointReport {
    report
        .points
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no point {name} in the report"))
        .clone()
}

/// Calls of the point named `name` now (0: no such point yet).
pub(crate) fn calls(name: &str) -> u64 {
    profpoint::snapshot()
        .points
        .iter()
        .find(|p| p.name == name)
        .map_or(0, |p| p.nr)
}

/// Every path of the points tree (names joined by `;`, outermost first) whose points all start
/// with `prefix` (which is cut from each name), with its calls.
pub(crate) fn paths(prefix: &str) -> Vec<(String, u64)> {
    let report = profpoint::snapshot();
    let tree = report.tree.expect("a collected report has the tree");
    let mut v: Vec<(String, u64)> = (0..tree.nodes.len())
        .filter_map(|i| {
            let path = tree.path(i);
            path.iter().all(|p| p.starts_with(prefix)).then(|| {
                let short: Vec<&str> = path.iter().map(|p| &p[prefix.len()..]).collect();
                (short.join(";"), tree.nodes[i].calls)
            })
        })
        .collect();
    v.sort();
    v
}

/// The layer on a `Registry`, for `tracing::subscriber::with_default` (this thread only).
pub(crate) fn layered() -> impl tracing::Subscriber + Send + Sync + 'static {
    use tracing_subscriber::prelude::*;
    tracing_subscriber::registry().with(profpoint_tracing::layer())
}

/// Every tree check wants every call in the tree: the overhead budget could leave a hot
/// point counted only (not in the tree). Counts are exact either way.
pub(crate) fn no_budget() {
    profpoint::set_budget(None);
}
