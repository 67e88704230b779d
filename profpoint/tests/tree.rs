//! The tree of profile points: exact paths, calls and times; recursion; threads that exit and
//! hand their shard to the next; async parents at first poll; throttled points.
//!
//! Each test uses points of its own (the tree is process-wide, the tests run in parallel).

use profpoint::{PointsTree, Report};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

/// Every path of the tree (point names joined by `;`, outermost first) whose points all start
/// with `prefix`, with its node's calls and timed calls.
fn paths(tree: &PointsTree, prefix: &str) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = (0..tree.nodes.len())
        .filter_map(|i| {
            let path = tree.path(i);
            path.iter().all(|p| p.starts_with(prefix)).then(|| {
                let short: Vec<&str> = path.iter().map(|p| &p[prefix.len()..]).collect();
                (short.join(";"), tree.nodes[i].calls, tree.nodes[i].timed)
            })
        })
        .collect();
    v.sort();
    v
}

/// Every call timed: these tests check the tree's timed calls against its calls (the budget's
/// states have their own tests, tests/budget.rs). Each test calls it first: they run in
/// parallel, in any order, and the budget is the process's.
fn every_call_timed() {
    profpoint::set_budget(None);
}

fn tree() -> PointsTree {
    let r: Report = profpoint::snapshot();
    r.tree.expect("a collected report has the tree")
}

fn spin(us: u64) {
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::black_box(());
    }
}

#[profpoint::profile_point]
fn n_outer() {
    for _ in 0..3 {
        n_mid();
    }
    n_leaf();
    spin(50);
}

#[profpoint::profile_point]
fn n_mid() {
    n_leaf();
    n_leaf();
    spin(30);
}

#[profpoint::profile_point]
fn n_leaf() {
    spin(20);
}

#[test]
fn a_nested_program_has_its_paths_and_calls_exactly() {
    every_call_timed();
    n_outer();
    n_outer();
    // A leaf called outside any point is outermost.
    n_leaf();
    let t = tree();
    let p = "tree::n_";
    assert_eq!(
        paths(&t, p),
        vec![
            ("leaf".to_string(), 1, 1),
            ("outer".to_string(), 2, 2),
            ("outer;leaf".to_string(), 2, 2),
            ("outer;mid".to_string(), 6, 6),
            ("outer;mid;leaf".to_string(), 12, 12),
        ]
    );
    // Edges are sums over paths: mid -> leaf 12, outer -> leaf 2, root -> leaf 1.
    let edges = t.edges();
    let edge = |parent: Option<&str>, child: &str| {
        edges
            .iter()
            .find(|e| e.parent.as_deref() == parent && e.child == child)
            .map(|e| e.calls)
    };
    assert_eq!(edge(Some("tree::n_mid"), "tree::n_leaf"), Some(12));
    assert_eq!(edge(Some("tree::n_outer"), "tree::n_leaf"), Some(2));
    assert_eq!(edge(Some("tree::n_outer"), "tree::n_mid"), Some(6));
    assert_eq!(edge(None, "tree::n_leaf"), Some(1));
    // Times: a node's total is its self time plus its children's totals (to the rounding of
    // each node to whole nanoseconds), and every self time is positive.
    let node = |path: &str| {
        (0..t.nodes.len())
            .find(|&i| t.path(i).join(";") == path)
            .unwrap()
    };
    let outer = node("tree::n_outer");
    let children: u64 = t
        .nodes
        .iter()
        .filter(|n| n.parent == Some(outer))
        .map(|n| n.total_ns)
        .sum();
    let o = &t.nodes[outer];
    let sum = o.self_ns.unwrap() + children as i64;
    assert!(
        (sum - o.total_ns as i64).abs() <= 3,
        "outer: total {} != self {:?} + children {children}",
        o.total_ns,
        o.self_ns
    );
    for n in &t.nodes {
        if n.name.starts_with(p) {
            assert!(n.self_ns.unwrap() > 0, "{n:?}");
        }
    }
    // The leaves under mid spin 20 us each: 12 of them at least 240 us.
    assert!(t.nodes[node("tree::n_outer;tree::n_mid;tree::n_leaf")].total_ns >= 240_000);
}

#[profpoint::profile_point]
fn r_rec(n: u32) {
    if n > 0 {
        r_rec(n - 1);
    }
}

#[profpoint::profile_point]
fn r_ping(n: u32) {
    if n > 0 {
        r_pong(n - 1);
    }
}

#[profpoint::profile_point]
fn r_pong(n: u32) {
    if n > 0 {
        r_ping(n - 1);
    }
}

#[profpoint::profile_point]
fn r_after() {}

#[test]
fn recursion_is_a_path_per_depth_and_leaves_no_stale_parent() {
    every_call_timed();
    r_rec(3);
    r_rec(1);
    r_ping(3);
    // After the recursions return, nothing is active: this call is outermost.
    r_after();
    let t = tree();
    assert_eq!(
        paths(&t, "tree::r_"),
        vec![
            ("after".to_string(), 1, 1),
            ("ping".to_string(), 1, 1),
            ("ping;pong".to_string(), 1, 1),
            ("ping;pong;ping".to_string(), 1, 1),
            ("ping;pong;ping;pong".to_string(), 1, 1),
            ("rec".to_string(), 2, 2),
            ("rec;rec".to_string(), 2, 2),
            ("rec;rec;rec".to_string(), 1, 1),
            ("rec;rec;rec;rec".to_string(), 1, 1),
        ]
    );
}

profpoint::define_profile_point!(C_LEAKED);

#[profpoint::profile_point]
fn c_outer() {
    c_inner();
}

#[profpoint::profile_point]
fn c_inner() {}

#[test]
fn threads_that_exit_lose_no_call_and_leak_no_parent() {
    every_call_timed();
    // One after another: each thread takes the shard the previous one gave back.
    for i in 0..40 {
        std::thread::spawn(move || {
            c_outer();
            if i % 2 == 0 {
                // A guard that never drops: its point stays active until the thread exits.
                std::mem::forget(C_LEAKED.guard());
            }
        })
        .join()
        .unwrap();
    }
    // And some at once.
    let hs: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..100 {
                    c_outer();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let t = tree();
    // Never under the leaked point: the next thread starts at the root.
    assert_eq!(
        paths(&t, "tree::c_"),
        vec![
            ("outer".to_string(), 840, 840),
            ("outer;inner".to_string(), 840, 840),
        ]
    );
    // The leaked calls entered the tree (a node with no completed call) ...
    let leaked: Vec<usize> = (0..t.nodes.len())
        .filter(|&i| t.nodes[i].name.contains("C_LEAKED"))
        .collect();
    assert_eq!(leaked.len(), 1, "one path: outermost");
    assert_eq!(t.nodes[leaked[0]].calls, 0);
    // ... and nothing ever ran under them.
    assert!(
        !t.nodes.iter().any(|n| n.parent == Some(leaked[0])),
        "nothing ever ran under the leaked point"
    );
}

use profpoint_test_support::task::{YieldOnce, poll_once};

#[profpoint::profile_point]
async fn a_fetch() -> u32 {
    YieldOnce(false).await;
    7
}

#[profpoint::profile_point]
fn a_first_poll(f: Pin<&mut (dyn Future<Output = u32> + Send)>) -> Poll<u32> {
    poll_once(f)
}

#[profpoint::profile_point]
fn a_later_poll(f: Pin<&mut (dyn Future<Output = u32> + Send)>) -> Poll<u32> {
    poll_once(f)
}

#[test]
fn an_async_point_is_under_the_point_active_at_its_first_poll() {
    every_call_timed();
    // Same thread: first polled inside `a_first_poll`, completed inside `a_later_poll`.
    let mut f = Box::pin(a_fetch());
    assert!(a_first_poll(f.as_mut()).is_pending());
    assert_eq!(a_later_poll(f.as_mut()), Poll::Ready(7));
    drop(f);
    // Completed on another thread (whose shard has no such path yet).
    let mut f: Pin<Box<dyn Future<Output = u32> + Send>> = Box::pin(a_fetch());
    assert!(a_first_poll(f.as_mut()).is_pending());
    std::thread::spawn(move || {
        assert_eq!(a_later_poll(f.as_mut()), Poll::Ready(7));
    })
    .join()
    .unwrap();
    let t = tree();
    assert_eq!(
        paths(&t, "tree::a_"),
        vec![
            ("first_poll".to_string(), 2, 2),
            ("first_poll;fetch".to_string(), 2, 2),
            ("later_poll".to_string(), 2, 2),
        ]
    );
    let fetch = t.nodes.iter().find(|n| n.name == "tree::a_fetch").unwrap();
    assert_eq!(fetch.self_ns, None, "an async point has no self time");
}

#[profpoint::profile_point]
fn b_outer() {
    for _ in 0..64 {
        b_counted();
        b_sampled();
    }
}

#[profpoint::profile_point]
fn b_counted() {
    b_leaf();
}

#[profpoint::profile_point]
fn b_sampled() {
    b_leaf();
}

#[profpoint::profile_point]
fn b_leaf() {}

#[test]
fn throttled_points_counted_only_are_left_out_and_sampled_ones_kept() {
    every_call_timed();
    assert_eq!(profpoint::count_only("tree::b_counted"), 1);
    assert_eq!(profpoint::set_sampling("tree::b_sampled", 4), 1);
    b_outer();
    let t = tree();
    let p = paths(&t, "tree::b_");
    let find = |path: &str| p.iter().find(|(q, _, _)| q == path).cloned();
    // Counted only: not in the tree; what it called attaches to the enclosing point.
    assert_eq!(find("outer;counted"), None);
    assert_eq!(find("outer;leaf"), Some(("outer;leaf".to_string(), 64, 64)));
    // Sampled 1 in 4: every call is in the tree, some timed; its callees under it.
    let (_, calls, timed) = find("outer;sampled").unwrap();
    assert_eq!(calls, 64);
    assert!(timed > 0 && timed < 64, "timed {timed} of 64");
    assert_eq!(
        find("outer;sampled;leaf"),
        Some(("outer;sampled;leaf".to_string(), 64, 64))
    );
}
