//! Sampled stacks under profpoint: each sample carries the thread's active point as its tag,
//! handed to the sampler when the thread takes its shard (`shard/`), and the report's stacks
//! keep it. The placement of an inlined point's frame from the tag is unit-tested in
//! `report/attribute.rs`; this checks the wiring end to end: samples taken inside `inner`
//! carry one tag, samples inside `outer` but not `inner` another, both non-zero; and each
//! point's sampled self time holds its own half, not its callee's.
//!
//! One test in this binary: the sampler is process-wide.
#![cfg(feature = "heatmap")]

use profpoint_test_support::cpu::thread_cpu;
use std::collections::BTreeMap;
use std::time::Duration;

fn burn(cpu: Duration) {
    let end = thread_cpu() + cpu;
    while thread_cpu() < end {
        std::hint::black_box(());
    }
}

#[profpoint::profile_point]
#[inline(never)]
fn inner() {
    burn(Duration::from_millis(2));
}

#[profpoint::profile_point]
#[inline(never)]
fn outer() {
    burn(Duration::from_millis(2));
    inner();
}

#[test]
fn samples_carry_the_active_point_as_their_tag() {
    if !heatmap::stacks::AVAILABLE {
        println!("SKIPPED: stacks are not available on this platform (x86_64 Linux only)");
        return;
    }
    let config = heatmap::Config::new().hz(1000).stacks(64);
    if let Err(e) = profpoint::start_heatmap(config) {
        println!("SKIPPED: the sampler cannot start here: {e}");
        return;
    }
    // Each round is 4 ms of thread CPU, half in each function; sample until both have enough.
    let mut rounds = 0;
    let (tags_inner, tags_outer) = loop {
        for _ in 0..50 {
            outer();
        }
        rounds += 50;
        let report = profpoint::snapshot();
        let stacks = report
            .heatmap
            .and_then(|h| h.stacks)
            .expect("the heatmap ran with stacks");
        // Samples per tag, split by whether the stack is inside `inner` or only in `outer`.
        let mut inner_tags: BTreeMap<u32, u64> = BTreeMap::new();
        let mut outer_tags: BTreeMap<u32, u64> = BTreeMap::new();
        for s in &stacks.stacks {
            let has = |name: &str| s.frames.iter().any(|f| f.function.ends_with(name));
            if has("stacks::inner") {
                *inner_tags.entry(s.tag).or_default() += s.count;
            } else if has("stacks::outer") {
                *outer_tags.entry(s.tag).or_default() += s.count;
            }
        }
        let enough = |m: &BTreeMap<u32, u64>| m.values().sum::<u64>() >= 100;
        if (enough(&inner_tags) && enough(&outer_tags)) || rounds >= 2_000 {
            break (inner_tags, outer_tags);
        }
    };
    assert!(
        tags_inner.values().sum::<u64>() >= 100 && tags_outer.values().sum::<u64>() >= 100,
        "too few samples after {rounds} rounds: inner {tags_inner:?}, outer {tags_outer:?}"
    );
    // The dominant tag of each side, and how much of the side it holds. A sample landing
    // between `outer`'s guard and its body's first instruction (or after `inner` returned but
    // before its guard's leave) may carry the neighbour's tag: a few, never most.
    let top = |m: &BTreeMap<u32, u64>| {
        let (t, n) = m
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(t, n)| (*t, *n))
            .unwrap();
        (t, n as f64 / m.values().sum::<u64>() as f64)
    };
    let (ti, share_i) = top(&tags_inner);
    let (to, share_o) = top(&tags_outer);
    assert!(
        ti != 0 && to != 0,
        "untagged: inner {tags_inner:?}, outer {tags_outer:?}"
    );
    assert_ne!(
        ti, to,
        "inner and outer share a tag: {tags_inner:?} {tags_outer:?}"
    );
    assert!(
        share_i > 0.95 && share_o > 0.95,
        "tags mixed: inner {tags_inner:?}, outer {tags_outer:?}"
    );
    // Each point's self time from the same stacks: a sample counts for its innermost
    // annotated function, so `outer` holds only its own half (its 2 ms a round), not
    // `inner`'s. The same thread CPU in each: about half each (the bound is wide for the
    // samples at the functions' edges, and holds ~8 sd at 100 samples a side).
    let report = profpoint::snapshot();
    let sampled = |name: &str| {
        report
            .points
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no point {name}"))
            .sampled_self
            .unwrap_or_else(|| panic!("{name}: no sampled self time"))
    };
    let (i, o) = (sampled("stacks::inner"), sampled("stacks::outer"));
    let share = i as f64 / (i + o) as f64;
    assert!(
        (0.3..=0.7).contains(&share),
        "inner {i} and outer {o} samples of their own: {share:.2} inner"
    );
}
