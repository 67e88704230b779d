//! Every export read by the program that consumes it (the report model's rule), not by our own readers: the
//! pprof profile by `go tool pprof` (`-raw`, `-top`) and by `protoc --decode` with upstream's
//! `profile.proto` (`third_party/pprof`), the Prometheus exposition by `promtool check
//! metrics`, the SVG chart by an XML parser. `scripts/test-ci` installs the tools (Debian's
//! golang-go, protobuf-compiler, prometheus); where one is missing its test prints `SKIPPED:`
//! with the reason and passes.
//!
//! Values are compared with the JSON form of the same report (one snapshot rendered twice), or,
//! for the at-exit files, with the JSON report the same exit wrote.

mod common;
#[path = "consumers/prometheus.rs"]
mod prometheus;
#[path = "consumers/svg.rs"]
mod svg;

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

#[profpoint::profile_point]
fn outer() {
    std::thread::sleep(Duration::from_millis(4));
    inner();
}

#[profpoint::profile_point]
fn inner() {
    std::thread::sleep(Duration::from_millis(2));
}

#[profpoint::profile_point]
fn once() {
    std::thread::sleep(Duration::from_millis(1));
}

#[profpoint::profile_point]
async fn fetch() {
    std::thread::sleep(Duration::from_millis(1));
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Runs a future that never waits on anything to completion.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let waker = Waker::from(Arc::new(Noop));
    loop {
        if let Poll::Ready(v) = Pin::as_mut(&mut f).poll(&mut Context::from_waker(&waker)) {
            return v;
        }
    }
}

/// The calls every scenario makes: a nested pair (outer's self time is less than its total),
/// a point called once, an async point (no self time).
fn work() {
    for _ in 0..3 {
        outer();
    }
    once();
    block_on(fetch());
}

/// The points this file defines (the report also lists points of other test files).
const OURS: [&str; 4] = [
    "consumers::outer",
    "consumers::inner",
    "consumers::once",
    "consumers::fetch",
];

/// `Some(path)` of `tool` on PATH; `None` after printing why the caller is SKIPPED.
fn tool(test: &str, tool: &str, deb: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file());
    if found.is_none() {
        println!(
            "SKIPPED: {test}: `{tool}` is not installed (Debian's {deb}; scripts/test-ci installs it)"
        );
    }
    found
}

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("profpoint-consumers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `cmd`, which must succeed; its standard output.
fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `go tool pprof ARGS FILE`, with its temporary files kept in `dir`.
fn pprof(dir: &Path, args: &[&str], file: &Path) -> String {
    run(Command::new("go")
        .args(["tool", "pprof", "-symbolize=none"])
        .args(args)
        .arg(file)
        .env("HOME", dir)
        .env("PPROF_TMPDIR", dir))
}

/// The rows of `go tool pprof -top -unit=ns`: function name to its flat value.
fn top(dir: &Path, file: &Path, index: &str) -> BTreeMap<String, u64> {
    let out = pprof(
        dir,
        &[
            "-top",
            "-unit=ns",
            "-nodefraction=0",
            "-nodecount=100000",
            &format!("-sample_index={index}"),
        ],
        file,
    );
    let mut rows = BTreeMap::new();
    for line in out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
    {
        // flat flat% sum% cum cum% NAME (a name may hold spaces).
        let mut f = line.split_whitespace();
        let flat = f.next().unwrap();
        let name = f.skip(4).collect::<Vec<_>>().join(" ");
        let v: f64 = flat
            .trim_end_matches("ns")
            .parse()
            .unwrap_or_else(|_| panic!("a flat value {flat:?} in {line:?}:\n{out}"));
        rows.insert(name, v as u64);
    }
    rows
}

/// The points of a JSON report (parsed by serde_json, not by profpoint), by name.
fn json_points(json: &str) -> BTreeMap<String, serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

/// A point's self time in the JSON: `None` where the report says it is not measured (an async
/// point), however the schema says so (a missing or null field).
fn json_self(p: &serde_json::Value) -> Option<u64> {
    p.get("self_ns").and_then(serde_json::Value::as_u64)
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

/// Whether `b` starts as gzip does (RFC 1952's magic bytes).
fn is_gzip(b: &[u8]) -> bool {
    b.starts_with(&[0x1f, 0x8b])
}

/// What `go tool pprof` says of a profile file, checked against the JSON report `json`: `-raw`
/// lists one sample per point with the JSON's calls, self and total; `-top` ranks them by each
/// sample type with the same values.
fn go_tool_pprof_agrees(dir: &Path, file: &Path, json: &str) {
    let points = json_points(json);
    let raw = pprof(dir, &["-raw"], file);
    assert!(
        raw.contains("calls/count self/nanoseconds[dflt] total/nanoseconds"),
        "{raw}"
    );
    for (index, field) in [("calls", "nr"), ("self", "self_ns"), ("total", "total_ns")] {
        let rows = top(dir, file, index);
        for name in OURS {
            let p = &points[name];
            let want = if field == "self_ns" {
                json_self(p)
            } else {
                p[field].as_u64()
            };
            // pprof leaves out a function whose value is 0: that is how a self time that is
            // not measured (an async point's) is absent.
            assert_eq!(
                rows.get(name).copied(),
                want.filter(|&v| v > 0),
                "go tool pprof -top -sample_index={index}: {name} (JSON {p})\n{rows:?}"
            );
        }
    }
}

#[test]
fn go_tool_pprof_reads_the_profile_with_the_jsons_values() {
    let test = "go_tool_pprof_reads_the_profile_with_the_jsons_values";
    if tool(test, "go", "golang-go").is_none() {
        return;
    }
    work();
    let r = profpoint::snapshot();
    let pb = r.to_pprof();
    // pprof's format is gzipped on disk ("the serialized proto must be gzip-compressed",
    // profile.proto), once.
    assert!(is_gzip(&pb), "to_pprof is not gzipped: {:02x?}", &pb[..4]);
    assert!(!is_gzip(&gunzip(&pb)), "to_pprof is gzipped twice");
    let dir = scratch("go");
    let file = dir.join("snapshot.pb.gz");
    std::fs::write(&file, &pb).unwrap();
    go_tool_pprof_agrees(&dir, &file, &r.to_json());
    std::fs::remove_dir_all(&dir).ok();
}

/// `protoc --decode` text: the top-level messages named `name`, each as its lines.
fn messages<'a>(text: &'a str, name: &str) -> Vec<Vec<&'a str>> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<&str>> = None;
    let mut depth = 0;
    for line in text.lines() {
        let t = line.trim();
        if depth == 0 && t == format!("{name} {{") {
            cur = Some(Vec::new());
        } else if let Some(c) = cur.as_mut().filter(|_| depth > 0) {
            c.push(t);
        }
        depth += t.ends_with('{') as i32 - (t == "}") as i32;
        if depth == 0
            && let Some(c) = cur.take()
        {
            out.push(c);
        }
    }
    out
}

/// The integer values of `field: N` lines.
fn ints(lines: &[&str], field: &str) -> Vec<u64> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(&format!("{field}: ")))
        .map(|v| v.parse().unwrap())
        .collect()
}

#[test]
fn protoc_decodes_the_profile_with_upstream_profile_proto() {
    let test = "protoc_decodes_the_profile_with_upstream_profile_proto";
    if tool(test, "protoc", "protobuf-compiler").is_none() {
        return;
    }
    work();
    let r = profpoint::snapshot();
    let pb = gunzip(&r.to_pprof());
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/pprof");
    let mut child = Command::new("protoc")
        .arg("--decode=perftools.profiles.Profile")
        .arg(format!("--proto_path={}", proto.display()))
        .arg("profile.proto")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&pb).unwrap();
    let o = child.wait_with_output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // protoc fails on bytes that do not parse as the message; it prints unknown fields by
    // number, which upstream's schema would not have.
    assert!(o.status.success(), "protoc: {err}");
    assert!(err.trim().is_empty(), "protoc: {err}");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())),
        "unknown fields:\n{text}"
    );
    let strings: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("string_table: "))
        .map(|s| s.trim_matches('"').to_string())
        .collect();
    assert_eq!(strings[0], "", "string 0 is empty");
    let types: Vec<(String, String)> = messages(&text, "sample_type")
        .iter()
        .map(|m| {
            (
                strings[ints(m, "type")[0] as usize].clone(),
                strings[ints(m, "unit")[0] as usize].clone(),
            )
        })
        .collect();
    assert_eq!(
        &types[..3],
        [
            ("calls", "count"),
            ("self", "nanoseconds"),
            ("total", "nanoseconds")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // Function id -> name, location id -> function id, then each sample's values by name.
    let functions: BTreeMap<u64, String> = messages(&text, "function")
        .iter()
        .map(|m| {
            (
                ints(m, "id")[0],
                strings[ints(m, "name")[0] as usize].clone(),
            )
        })
        .collect();
    let locations: BTreeMap<u64, u64> = messages(&text, "location")
        .iter()
        .map(|m| (ints(m, "id")[0], ints(m, "function_id")[0]))
        .collect();
    let mut samples = BTreeMap::new();
    let mut labels = BTreeMap::new();
    for m in messages(&text, "sample") {
        let loc = ints(&m, "location_id");
        assert_eq!(loc.len(), 1, "one location a sample: {m:?}");
        let name = functions[&locations[&loc[0]]].clone();
        samples.insert(name.clone(), ints(&m, "value"));
        // label { key, str }, by their strings.
        let l: Vec<(String, String)> = ints(&m, "key")
            .iter()
            .zip(ints(&m, "str"))
            .map(|(&k, v)| (strings[k as usize].clone(), strings[v as usize].clone()))
            .collect();
        labels.insert(name, l);
    }
    // The async point's absent self time is said in a label; no other point has one.
    for name in OURS {
        let want: &[(&str, &str)] = if name == "consumers::fetch" {
            &[("self", "none (async point)")]
        } else {
            &[]
        };
        let got: Vec<(&str, &str)> = labels[name]
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, want, "{name}'s labels");
    }
    let points = json_points(&r.to_json());
    for name in OURS {
        let p = &points[name];
        let v = &samples[name];
        assert_eq!(v[0], p["nr"].as_u64().unwrap(), "{name}");
        assert_eq!(Some(v[1]).filter(|&s| s > 0), json_self(p), "{name}: self");
        assert_eq!(v[2], p["total_ns"].as_u64().unwrap(), "{name}");
    }
    let default = ints(&text.lines().collect::<Vec<_>>(), "default_sample_type");
    assert_eq!(strings[default[0] as usize], "self");
}

/// The child's half of the at-exit scenarios (ignored in a normal run: the parent runs it).
#[test]
#[ignore = "the child of the at-exit tests below, which start it"]
fn child_exits_with_its_reports() {
    work();
}

/// Runs [`child_exits_with_its_reports`] in a process of its own with `PROFPOINT_REPORT=spec`.
fn child_reports(spec: &str) {
    let o = common::runner::target_command(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child_exits_with_its_reports"])
        .env("PROFPOINT_REPORT", spec)
        .env("PROFPOINT_BUDGET", "off")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_exit_reports_pprof_file_is_gzipped_once_and_go_tool_pprof_reads_it() {
    let test = "the_exit_reports_pprof_file_is_gzipped_once_and_go_tool_pprof_reads_it";
    if tool(test, "go", "golang-go").is_none() {
        return;
    }
    let dir = scratch("exit-pprof");
    let (pb, json) = (dir.join("exit.pb.gz"), dir.join("exit.json"));
    child_reports(&format!("pprof:{},json:{}", pb.display(), json.display()));
    let bytes = std::fs::read(&pb).unwrap();
    assert!(is_gzip(&bytes), "the pprof file is not gzipped");
    assert!(!is_gzip(&gunzip(&bytes)), "the pprof file is gzipped twice");
    go_tool_pprof_agrees(&dir, &pb, &std::fs::read_to_string(&json).unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

/// The rows of `go tool pprof -top -cum`: function name to (flat, cum).
fn top_cum(dir: &Path, file: &Path, unit: &str) -> BTreeMap<String, (u64, u64)> {
    let out = pprof(
        dir,
        &[
            "-top",
            "-cum",
            &format!("-unit={unit}"),
            "-nodefraction=0",
            "-nodecount=100000",
        ],
        file,
    );
    let mut rows = BTreeMap::new();
    for line in out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| {
            s.trim_end_matches("ns")
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("a value {s:?} in {line:?}:\n{out}")) as u64
        };
        rows.insert(f[5..].join(" "), (num(f[0]), num(f[3])));
    }
    rows
}

/// The callers `go tool pprof -tree` lists above `name`'s own line, with their values.
fn tree_callers(dir: &Path, file: &Path, unit: &str, name: &str) -> BTreeMap<String, u64> {
    let out = pprof(
        dir,
        &[
            "-tree",
            &format!("-unit={unit}"),
            "-nodefraction=0",
            "-edgefraction=0",
            "-nodecount=100000",
        ],
        file,
    );
    // Blocks are separated by dashed lines; in a block, callers come before the node's own line
    // (the one with flat values), callees after it.
    for block in out.split("-+-") {
        let lines: Vec<&str> = block.lines().collect();
        // The node's own line: flat flat% sum% cum cum% | NAME (a caller's or callee's line
        // has two values before the bar).
        let Some(at) = lines.iter().position(|l| {
            l.split_once('|').is_some_and(|(values, n)| {
                values.split_whitespace().count() == 5 && n.trim() == name
            })
        }) else {
            continue;
        };
        return lines[..at]
            .iter()
            .filter_map(|l| {
                let (values, caller) = l.split_once('|')?;
                let v = values.split_whitespace().next()?;
                let v = v.trim_end_matches("ns").parse::<f64>().ok()? as u64;
                Some((caller.trim().to_string(), v))
            })
            .collect();
    }
    panic!("no node {name} in go tool pprof -tree:\n{out}");
}

#[test]
fn go_tool_pprof_shows_the_points_tree_as_a_call_graph() {
    let test = "go_tool_pprof_shows_the_points_tree_as_a_call_graph";
    if tool(test, "go", "golang-go").is_none() {
        return;
    }
    work();
    let r = profpoint::snapshot();
    let tree = r.tree.clone().unwrap();
    let node = |name: &str| tree.nodes.iter().find(|n| n.name == name).unwrap().clone();
    let (outer, inner) = (node("consumers::outer"), node("consumers::inner"));
    assert_eq!(
        inner.parent.map(|p| tree.nodes[p].name.as_str()),
        Some("consumers::outer")
    );
    let dir = scratch("go-tree");
    let file = dir.join("points.pb.gz");
    std::fs::write(&file, r.to_points_pprof()).unwrap();
    let rows = top_cum(&dir, &file, "ns");
    // Flat: each point's self time; cumulative: outer's includes inner's (its total).
    let (flat, cum) = rows["consumers::outer"];
    assert_eq!(flat, outer.est_self_ns(), "{rows:?}");
    assert_eq!(cum, outer.est_self_ns() + inner.est_self_ns(), "{rows:?}");
    assert!(
        cum.abs_diff(outer.total_ns) <= 2,
        "cum {cum} vs total {}",
        outer.total_ns
    );
    assert_eq!(
        rows["consumers::inner"],
        (inner.est_self_ns(), inner.est_self_ns())
    );
    // -tree: inner's one caller is outer, with inner's whole time.
    let callers = tree_callers(&dir, &file, "ns", "consumers::inner");
    assert_eq!(
        callers,
        BTreeMap::from([("consumers::outer".to_string(), inner.est_self_ns())])
    );
    std::fs::remove_dir_all(&dir).ok();
}

// The stacks' types are the heatmap's.
#[cfg(feature = "heatmap")]
#[test]
fn go_tool_pprof_shows_the_sampled_stacks_as_a_call_graph() {
    let test = "go_tool_pprof_shows_the_sampled_stacks_as_a_call_graph";
    if tool(test, "go", "golang-go").is_none() {
        return;
    }
    // Hand-made stacks (the capture is tested in the heatmap crate): two callers of one hot
    // function, 9:1, and main's own samples.
    let frame = |name: &str| {
        let mut frame = profpoint::heatmap::Frame::default();
        frame.address = 0x1000;
        frame.function = name.to_string();
        frame.location = Some(format!("src/{name}.rs:7"));
        frame
    };
    let stack = |frames: &[&str], count| {
        let mut stack = profpoint::heatmap::SampledStack::default();
        stack.frames = frames.iter().map(|n| frame(n)).collect();
        stack.count = count;
        stack
    };
    let mut stacks = profpoint::heatmap::StackReport::default();
    stacks.depth = 64;
    stacks.samples = 105;
    stacks.stacks = vec![
        stack(&["main", "caller_a", "hot"], 90),
        stack(&["main", "caller_b", "hot"], 10),
        stack(&["main"], 5),
    ];
    let mut r = profpoint::Report::from_json(&profpoint::snapshot().to_json()).unwrap();
    let json = r.to_json().replacen(
        "\"heatmap\": null",
        &format!(
            "\"heatmap\": {{\"source\": \"setitimer\", \"mode\": \"cpu\", \"by\": \"function\", \
             \"bucket_size\": 16, \"requested_hz\": 997, \"achieved_hz\": null, \
             \"achieved_hz_per_cpu_second\": null, \"user_cpu_seconds\": 1.0, \
             \"sys_cpu_seconds\": 0.0, \"wall_seconds\": 1.0, \"total_samples\": 105, \
             \"other\": 0, \"proc_samples\": 0, \"excluded\": 0, \"base\": 105, \
             \"warnings\": [], \"rows\": [], \"stacks\": {}}}",
            serde_json::to_string(&stacks).unwrap()
        ),
        1,
    );
    r = profpoint::Report::from_json(&json).unwrap();
    let dir = scratch("go-stacks");
    let file = dir.join("stacks.pb.gz");
    std::fs::write(&file, r.to_pprof_stacks()).unwrap();
    let rows = top_cum(&dir, &file, "count");
    assert_eq!(rows["main"], (5, 105), "{rows:?}");
    assert_eq!(rows["caller_a"], (0, 90), "{rows:?}");
    assert_eq!(rows["caller_b"], (0, 10), "{rows:?}");
    assert_eq!(rows["hot"], (100, 100), "{rows:?}");
    let callers = tree_callers(&dir, &file, "count", "hot");
    assert_eq!(
        callers,
        BTreeMap::from([("caller_a".to_string(), 90), ("caller_b".to_string(), 10)])
    );
    std::fs::remove_dir_all(&dir).ok();
}
