//! The report reader (`profpoint_report::Report::from_json`, what `profpoint report` and
//! `compare` read with): a report collected in this process reads back equal, and no input
//! makes it panic.
//!
//! Cases run: the round trip on one real report (points sync, recursive and async, a
//! tracepoint; the heatmap section on Linux); every truncation of a real report (one case per
//! byte offset of the report this test makes); [`MUTATIONS`] proptest cases of 1 to
//! 8 byte replacements each, and [`MUTATIONS`] cases of one JSON value swapped for another
//! kind. Each must read (mutations can leave a valid report) or fail with a message, never
//! panic.

use profpoint_report::Report;
use proptest::prelude::*;
use std::sync::OnceLock;

/// Cases of each proptest below.
const MUTATIONS: u32 = 3_000;

#[profpoint::profile_point]
fn leaf(n: u64) -> u64 {
    std::hint::black_box((0..n).sum())
}

#[profpoint::profile_point]
fn parent(n: u64) -> u64 {
    leaf(n) + leaf(n / 2)
}

#[profpoint::profile_point]
fn recurse(depth: u32) -> u32 {
    if depth == 0 {
        0
    } else {
        1 + recurse(depth - 1)
    }
}

#[profpoint::profile_point]
async fn later(n: u64) -> u64 {
    leaf(n)
}

profpoint::tracepoint!(fn reader_event(n: u64));

/// Runs a future that never waits (ours do not) to completion.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// A real report of this process, collected once.
fn real() -> &'static (Report, String) {
    static R: OnceLock<(Report, String)> = OnceLock::new();
    R.get_or_init(|| {
        profpoint::trace_count("reader::reader_event");
        for i in 0..200 {
            parent(i);
            recurse(5);
            block_on(later(i));
            trace_reader_event(i);
        }
        let r = profpoint::snapshot();
        let json = r.to_json();
        (r, json)
    })
}

#[test]
fn a_collected_report_reads_back_equal() {
    let (r, json) = real();
    let back = Report::from_json(json).expect("a report profpoint wrote reads back");
    assert_eq!(&back, r);
    assert_eq!(&back.to_json(), json);
    // The async point has no self time, in the model and in the JSON.
    let a = back
        .points
        .iter()
        .find(|p| p.name == "reader::later")
        .unwrap();
    assert_eq!(a.kind, "async");
    assert_eq!(a.self_ns, None);
    assert!(json.contains("\"self_ns\": null"));
    let s = back
        .points
        .iter()
        .find(|p| p.name == "reader::parent")
        .unwrap();
    assert!(s.self_ns.is_some());
}

#[cfg(target_os = "linux")]
#[test]
fn a_report_with_the_heatmap_section_reads_back_equal() {
    let s = heatmap::start(heatmap::Config::new().hz(1000)).expect("the sampler starts");
    // A fixed amount of work (not a wall time: beside busy loops a wall time may hold little
    // CPU time, and the section few samples).
    let mut x = 0;
    for _ in 0..20_000 {
        x = std::hint::black_box(x + parent(1_000));
    }
    let mut r = profpoint::snapshot();
    r.heatmap = Some(s.stop().report(&heatmap::ReportOptions::default()));
    let json = r.to_json();
    let back = Report::from_json(&json).unwrap();
    assert_eq!(back, r);
    assert!(back.heatmap.is_some_and(|h| h.total_samples > 0));
}

/// A version-1 report (async self time = total) reads as version 2 (no self time).
#[test]
fn version_1_reads_as_the_current_model() {
    let (r, json) = real();
    let v1 = json.replacen("\"version\": 3", "\"version\": 1", 1);
    let total = r
        .points
        .iter()
        .find(|p| p.name == "reader::later")
        .unwrap()
        .total_ns;
    // Version 1 wrote the async point's total as its self time.
    let v1 = v1.replacen("\"self_ns\": null", &format!("\"self_ns\": {total}"), 1);
    let back = Report::from_json(&v1).unwrap();
    assert_eq!(back.version, 3);
    assert_eq!(&back, r);
}

#[test]
fn version_2_without_the_tree_reads_as_the_current_model() {
    let (r, json) = real();
    assert!(r.tree.is_some(), "a version 3 report has the points tree");
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    // serde_json (without its float_roundtrip feature) may move a float's last digit, so the
    // points to compare with are the same document through serde_json, unchanged.
    let same = Report::from_json(&serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(same.points.len(), r.points.len());
    v["version"] = 2.into();
    v.as_object_mut().unwrap().remove("tree");
    let back = Report::from_json(&serde_json::to_string(&v).unwrap()).unwrap();
    assert_eq!(back.version, 3);
    assert_eq!(back.tree, None);
    assert_eq!(back.points, same.points);
}

#[test]
fn every_truncation_is_an_error_with_a_message() {
    let (_, json) = real();
    let mut cases = 0;
    for cut in (0..json.len()).filter(|&i| json.is_char_boundary(i)) {
        let e = Report::from_json(&json[..cut]).expect_err("a cut report is no report");
        assert!(!e.to_string().is_empty(), "cut at {cut}");
        cases += 1;
    }
    assert!(cases > 1_000, "{cases} truncations");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: MUTATIONS, failure_persistence: None, ..ProptestConfig::default() })]

    /// Bytes replaced at random offsets: a report or an error with a message, never a panic.
    #[test]
    fn replaced_bytes_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let (_, json) = real();
        let mut b = json.clone().into_bytes();
        for (at, v) in &edits {
            let i = at.index(b.len());
            b[i] = *v;
        }
        if let Err(e) = Report::from_json_slice(&b) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// One value replaced by a value of another kind (or an extreme): the error names a field.
    #[test]
    fn swapped_values_never_panic(at in any::<prop::sample::Index>(), with in prop::sample::select(vec![
        "0", "-1", "18446744073709551616", "1e308", "0.5", "\"x\"", "null", "[]", "{}", "true", "[[1,2,3]]",
    ])) {
        let (_, json) = real();
        let keys: Vec<usize> = json.match_indices("\": ").map(|(i, _)| i + 3).collect();
        let start = keys[at.index(keys.len())];
        let end = json[start..].find([',', '\n']).map_or(json.len(), |e| start + e);
        let text = format!("{}{}{}", &json[..start], with, &json[end..]);
        match Report::from_json(&text) {
            Ok(_) => {}
            Err(e) => {
                let m = e.to_string();
                prop_assert!(!m.is_empty());
            }
        }
    }
}
