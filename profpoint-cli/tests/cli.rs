//! The `profpoint` command on real and hand-made reports.

mod common;
#[path = "cli/input.rs"]
mod input;

use common::{dir, profpoint};

#[profpoint::profile_point]
fn measured(n: u64) -> u64 {
    std::hint::black_box((0..n).sum())
}

/// The point whose calls `report_reads_a_real_report` counts: its own (the tests of this file
/// run side by side in one process under `cargo test`, and others call `measured`).
#[profpoint::profile_point]
fn read_back(n: u64) -> u64 {
    std::hint::black_box((0..n).sum())
}

#[test]
fn report_reads_a_real_report() {
    for i in 0..100 {
        read_back(i);
    }
    let path = dir().join("real.json");
    std::fs::write(&path, profpoint::snapshot().to_json()).unwrap();
    let (code, out, err) = profpoint(&["report", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // The exit report's table: status, name, total, self, nr, ...
    let row = out
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("cli::read_back"))
        .expect(&out);
    assert!(out.contains("self(s)"), "the self-time column: {out}");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[4], "100", "nr column: {row}");
    assert!(cols[3].parse::<f64>().is_ok(), "self column: {row}");
    common::clean();
}

#[profpoint::profile_point]
#[inline(never)]
fn spread(n: u64) -> u64 {
    std::hint::black_box((0..n).fold(1u64, |x, i| x.wrapping_mul(31).wrapping_add(i)))
}

/// A real report holds each point's histogram as compare reads it: `[value_ns, calls]` pairs,
/// ascending, adding up to the timed calls, their median where the report's p50 is.
#[test]
fn a_real_report_holds_the_latency_histogram() {
    #[derive(serde::Deserialize)]
    struct Report {
        points: Vec<Point>,
    }
    #[derive(serde::Deserialize)]
    struct Point {
        name: String,
        timed: u64,
        p50_ns: u64,
        hist: Vec<[u64; 2]>,
    }
    // Calls of three lengths, 1 to 100 in 100 rounds: a spread-out distribution.
    for round in 0..300u64 {
        spread(10 + (round % 3) * 2_000);
    }
    let json = profpoint::snapshot().to_json();
    let report: Report = profpoint_json::from_slice(json.as_bytes()).unwrap();
    let p = report
        .points
        .iter()
        .find(|p| p.name == "cli::spread")
        .expect("the point is in the report");
    assert!(p.hist.windows(2).all(|w| w[0][0] < w[1][0]), "{:?}", p.hist);
    assert_eq!(p.hist.iter().map(|b| b[1]).sum::<u64>(), p.timed);
    assert!(p.hist.len() >= 3, "three lengths of call: {:?}", p.hist);
    let mut seen = 0;
    let median = p
        .hist
        .iter()
        .find(|b| {
            seen += b[1];
            2 * seen >= p.timed
        })
        .unwrap()[0];
    assert_eq!(median, p.p50_ns, "{:?}", p.hist);
}

// The heatmap test's workload (the heatmap runs on Linux only).
#[cfg(target_os = "linux")]
profpoint::tracepoint!(fn cli_event(n: u64));

#[cfg(target_os = "linux")]
#[profpoint::profile_point]
#[inline(never)]
fn busy_cli(mut x: u64) -> u64 {
    for i in 0..20_000u64 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// `report` shows every section the JSON has: tracepoints and, when the sampler ran, the
/// heatmap (Linux only).
#[cfg(target_os = "linux")]
#[test]
fn report_shows_tracepoints_and_the_heatmap() {
    profpoint::trace_count("cli::cli_event");
    profpoint::start_heatmap(heatmap::Config::new().hz(1000)).expect("the heatmap starts");
    let t = std::time::Instant::now();
    let mut n = 0;
    let mut x = 0;
    while t.elapsed() < std::time::Duration::from_millis(300) {
        x = busy_cli(x);
        trace_cli_event(n);
        n += 1;
    }
    let path = dir().join("sections.json");
    std::fs::write(&path, profpoint::snapshot().to_json()).unwrap();
    let (code, out, err) = profpoint(&["report", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let tp = out
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("cli::cli_event"))
        .unwrap_or_else(|| panic!("no tracepoint row:\n{out}"));
    assert_eq!(
        tp.split_whitespace().last(),
        Some(n.to_string().as_str()),
        "{tp}"
    );
    assert!(out.contains("\nHeatmap (top #"), "{out}");
    // A heatmap row: address, function, samples, percent, ...
    assert!(
        out.lines().any(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            c.len() > 3 && c[1] == "cli::busy_cli" && c[2].parse::<u64>().is_ok()
        }),
        "the busy function has a heatmap row:\n{out}"
    );
    common::clean();
}

/// `compare` lists tracepoint hits beside the points: the same program firing a tracepoint
/// twice as often shows +100%.
#[test]
fn compare_lists_tracepoint_hits() {
    let d = dir();
    let run = |hits: u64| {
        format!(
            r#"{{"schema":"profpoint.report","version":1,"wall_ns":1,"points":[],"tracepoints":[{{"name":"net::rx","enabled":true,"probes":1,"counting":false,"hits":{hits},"error":null,"file":"x.rs","line":1}}]}}"#
        )
    };
    let (a, b) = (d.join("tp-a.json"), d.join("tp-b.json"));
    std::fs::write(&a, run(500)).unwrap();
    std::fs::write(&b, run(1000)).unwrap();
    let (code, out, err) = profpoint(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("net::rx"))
        .unwrap_or_else(|| panic!("no tracepoint row:\n{out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols, ["net::rx", "500", "1000", "+100.0%"], "{out}");
    common::clean();
}

/// A version-1 report with one point per (name, median ns, log spread, calls), the calls drawn
/// from a log-normal distribution (a fixed seed per point).
fn synthetic(points: &[(&str, u64, f64, usize)]) -> String {
    let pts: Vec<(&str, Vec<u64>)> = points
        .iter()
        .enumerate()
        .map(|(i, &(n, median, sigma, calls))| {
            let mut rng = common::seed(100, i as u64 + median);
            (n, rng.calls(calls, median as f64, sigma))
        })
        .collect();
    common::report("bench", &pts)
}

#[test]
fn compare_flags_a_real_slowdown_and_not_the_noise() {
    let d = dir();
    let (a, b) = (d.join("base.json"), d.join("new.json"));
    std::fs::write(
        &a,
        synthetic(&[
            ("db::query", 1000, 0.04, 50_000),
            ("parse", 500, 0.8, 20),
            ("old", 1, 0.0, 5),
        ]),
    )
    .unwrap();
    std::fs::write(
        &b,
        synthetic(&[
            ("db::query", 1300, 0.04, 50_000),
            ("parse", 540, 0.8, 20),
            ("new", 1, 0.0, 5),
        ]),
    )
    .unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, out, _) = profpoint(&["compare", a, b]);
    assert_eq!(code, 0);
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .expect(&out)
            .to_string()
    };
    let change: f64 = row("db::query")
        .split_whitespace()
        .nth(3)
        .and_then(|c| c.trim_end_matches('%').parse().ok())
        .expect(&out);
    assert!((28.0..32.0).contains(&change), "{out}");
    assert!(row("db::query").ends_with("SLOWER"), "{out}");
    assert!(row("parse").contains("within noise"), "{out}");
    assert!(row("new").ends_with("only in new"), "{out}");
    assert!(row("old").ends_with("only in base"), "{out}");
    let (code, _, err) = profpoint(&["compare", a, b, "--fail-on-regression"]);
    assert_eq!(code, 1);
    assert!(err.contains("1 point(s) significantly slower"), "{err}");
    // A threshold above the change: not flagged.
    let (code, out, _) = profpoint(&["compare", a, b, "--threshold", "50", "--fail-on-regression"]);
    assert_eq!(code, 0, "{out}");
    assert!(row("db::query").contains("SLOWER"));
    common::clean();
}

/// A report of the first version 1 (before reports held histograms, the budget, the
/// tracepoints...): it still reads; compare rebuilds the distributions from the percentiles,
/// says so, and still sees a large change.
#[test]
fn compare_reads_reports_without_histograms() {
    let old = |avg: u64| {
        format!(
            r#"{{"schema":"profpoint.report","version":1,"run":{{"command":["bench"],"pid":1,"start_unix_ns":0,"cpu_model":"x","kernel":"6","shards":1}},"clock":{{"source":"tsc","ghz":2.5,"calibrated_over_ns":1}},"overhead":null,"overhead_subtracted":false,"wall_ns":1,"points":[{{"name":"f","file":"src/f.rs","line":1,"enabled":true,"kind":"sync","sampling":null,"estimated":false,"nr":5000,"timed":5000,"nested":0,"total_ns":{},"self_ns":1,"avg_ns":{avg},"min_ns":{},"max_ns":{},"p50_ns":{avg},"p90_ns":{},"p99_ns":{},"p999_ns":{},"wall_percent":1.0}}]}}"#,
            avg * 5000,
            avg * 8 / 10,
            avg * 5,
            avg * 12 / 10,
            avg * 2,
            avg * 3
        )
    };
    let d = dir();
    let (a, b) = (d.join("old-a.json"), d.join("old-b.json"));
    std::fs::write(&a, old(1000)).unwrap();
    std::fs::write(&b, old(2000)).unwrap();
    let (code, out, err) = profpoint(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("has no latency histograms"), "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with('f') && l.ends_with("SLOWER")),
        "{out}"
    );
    common::clean();
}

#[test]
fn compare_repeated_runs_tests_run_to_run_noise() {
    let d = dir();
    let write = |name: &str, median: u64| {
        let p = d.join(name);
        // Narrow per-call spread, many calls: a single-run test would call +3% significant.
        std::fs::write(&p, synthetic(&[("kernel", median, 0.01, 100_000)])).unwrap();
        p.to_str().unwrap().to_string()
    };
    let base: Vec<String> = [1000, 1040, 960, 1020]
        .iter()
        .enumerate()
        .map(|(i, a)| write(&format!("b{i}.json"), *a))
        .collect();
    let same: Vec<String> = [1030, 990, 1050, 970]
        .iter()
        .enumerate()
        .map(|(i, a)| write(&format!("s{i}.json"), *a))
        .collect();
    let slow: Vec<String> = [1300, 1320, 1290, 1310]
        .iter()
        .enumerate()
        .map(|(i, a)| write(&format!("w{i}.json"), *a))
        .collect();
    let args = |new: &[String]| {
        let mut v: Vec<String> = vec!["compare".into()];
        v.extend(base.iter().cloned());
        v.push("--".into());
        v.extend(new.iter().cloned());
        v
    };
    let run = |a: Vec<String>| profpoint(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, out, _) = run(args(&same));
    assert_eq!(code, 0);
    assert!(out.contains("4 base and 4 new runs"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("kernel") && l.contains("within noise")),
        "{out}"
    );
    // The same +3% in a single pair of runs: the rank test finds it significant, the threshold
    // keeps it unflagged.
    let (_, out, _) = profpoint(&["compare", &base[0], &same[0]]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("kernel") && l.contains("under the threshold")),
        "{out}"
    );
    let (_, out, _) = run(args(&slow));
    assert!(
        out.lines()
            .any(|l| l.starts_with("kernel") && l.ends_with("SLOWER")),
        "{out}"
    );
    let (code, _, err) = profpoint(&["compare", "--", &base[0]]);
    assert_eq!(code, 2);
    assert!(
        err.contains("the following required arguments were not provided: <BASE.json>"),
        "{err}"
    );
    common::clean();
}

// === profpoint heatmap DUMP (the heatmap crate's command, folded in) ===

#[cfg(target_os = "linux")]
use profpoint_test_support::cpu::thread_cpu;

/// A CPU burner whose name the heatmap rows show: `cpu` of this thread's CPU time (a loaded
/// machine stretches the wall time, not the samples), in a loop that calls nothing (this test
/// is built unoptimised: a call would take the samples elsewhere).
#[cfg(target_os = "linux")]
#[inline(never)]
fn burn_cpu_alpha(cpu: std::time::Duration) -> u64 {
    let end = thread_cpu() + cpu;
    let mut x = 1u64;
    while thread_cpu() < end {
        let mut i = 0u64;
        while i < 200_000 {
            x ^= x >> 3;
            x ^= i;
            i += 1;
        }
    }
    x
}

/// A small real profile (setitimer: works without perf), written as a dump.
#[cfg(target_os = "linux")]
fn dump_file() -> (std::path::PathBuf, heatmap::Profile) {
    let s = heatmap::start(
        heatmap::Config::new()
            .hz(250)
            .source(heatmap::Source::Setitimer),
    )
    .expect("the sampler starts");
    burn_cpu_alpha(std::time::Duration::from_millis(300));
    let p = s.stop();
    let path = dir().join("run.hm");
    std::fs::write(&path, p.to_dump_bytes()).unwrap();
    (path, p)
}

#[cfg(target_os = "linux")]
#[test]
fn heatmap_reports_a_dump_as_table_and_json() {
    let (path, profile) = dump_file();
    let path = path.to_str().unwrap();
    let (code, out, err) = profpoint(&["heatmap", path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Heatmap (top #"), "{out}");
    assert!(out.contains("source setitimer"), "{out}");
    assert!(out.contains("cli::burn_cpu_alpha"), "{out}");

    // `--top=3` and `--top 3` are one option.
    let (code, out, _) = profpoint(&["heatmap", "--top", "3", path]);
    let (code2, out2, _) = profpoint(&["heatmap", "--top=3", path]);
    assert_eq!((code, code2), (0, 0));
    assert_eq!(out, out2);

    let (code, out, _) = profpoint(&["heatmap", "--json", "--by", "bucket", path]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["by"], "bucket");
    assert_eq!(v["total_samples"], profile.total_samples());

    let (code, out, _) = profpoint(&["heatmap", "--json", "--exclude=*burn_cpu_alpha", path]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["excluded"].as_u64().unwrap() > 0);
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["function"].as_str().unwrap().contains("burn_cpu_alpha"))
    );

    // A cut dump: one line naming the file and the damage.
    let bytes = profile.to_dump_bytes();
    let cut = dir().join("cut.hm");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (code, _, err) = profpoint(&["heatmap", cut.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("corrupt heatmap dump") || err.contains("truncated heatmap dump"),
        "{err}"
    );
    assert!(err.contains("cut.hm"), "{err}");
    common::clean();
}

/// `--help` for the command and every subcommand, `--version`; `--top=5` and `--top 5` alike in
/// `report`.
#[test]
fn help_version_and_both_option_spellings() {
    let (code, out, _) = profpoint(&["--help"]);
    assert_eq!(code, 0);
    for sub in ["report", "compare", "heatmap"] {
        assert!(out.contains(sub), "{out}");
        let (code, help, err) = profpoint(&[sub, "--help"]);
        assert_eq!(code, 0, "{sub}: {err}");
        assert!(help.contains(&format!("Usage: profpoint {sub}")), "{help}");
    }
    let (code, out, _) = profpoint(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        format!("profpoint {}", env!("CARGO_PKG_VERSION"))
    );

    for i in 0..20 {
        measured(i);
    }
    let d = dir();
    let path = d.join("top.json");
    std::fs::write(&path, profpoint::snapshot().to_json()).unwrap();
    let p = path.to_str().unwrap();
    let (c1, a, _) = profpoint(&["report", p, "--top=1"]);
    let (c2, b, _) = profpoint(&["report", "--top", "1", p]);
    assert_eq!((c1, c2), (0, 0));
    assert_eq!(a, b);
    common::clean();
}

/// Every format, to a file (`-o`) and to stdout, the same bytes as the library writes.
#[test]
fn report_writes_every_format() {
    for i in 0..30 {
        measured(i);
    }
    let d = dir();
    let path = d.join("formats.json");
    let json = profpoint::snapshot().to_json();
    std::fs::write(&path, &json).unwrap();
    let r = profpoint::Report::from_json(&json).unwrap();
    let p = path.to_str().unwrap();
    for (format, want) in [
        ("table", r.to_table().into_bytes()),
        ("json", format!("{json}\n").into_bytes()),
        ("csv", r.to_csv().into_bytes()),
        ("pprof", r.to_pprof()),
        ("prom", r.to_prometheus().into_bytes()),
        ("svg", r.to_svg().into_bytes()),
        ("folded", r.folded().into_bytes()),
        ("flame", r.flame_svg().into_bytes()),
        ("points-folded", r.points_folded().into_bytes()),
        ("points-flame", r.points_flame_svg().into_bytes()),
        ("pprof-stacks", r.to_pprof_stacks()),
        ("points-pprof", r.to_points_pprof()),
    ] {
        let out = d.join(format!("out.{format}"));
        let (code, _, err) =
            profpoint(&["report", p, "--format", format, "-o", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{format}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), want, "{format}");
    }
    // The points tree: `measured` outermost, its self time in ns.
    let (code, out, _) = profpoint(&["report", p, "--format", "points-folded"]);
    assert_eq!(code, 0);
    let line = out
        .lines()
        .find(|l| l.starts_with("cli::measured "))
        .expect(&out);
    assert!(
        line["cli::measured ".len()..].parse::<u64>().unwrap() > 0,
        "{line}"
    );
    let (code, out, _) = profpoint(&["report", p, "--format=csv"]);
    assert_eq!(code, 0);
    assert!(
        out.lines().any(|l| l.starts_with("cli::measured,")),
        "{out}"
    );
    common::clean();
}

/// A version-3 report whose points tree is one chain of `n` nodes (`c0 -> c1 -> ...`), each
/// one call and 1 ns of self time.
#[cfg(unix)]
fn chain_report(n: usize) -> String {
    let mut nodes = String::with_capacity(n * 100);
    for i in 0..n {
        if i > 0 {
            nodes.push(',');
        }
        let parent = i
            .checked_sub(1)
            .map_or("null".to_string(), |p| p.to_string());
        nodes.push_str(&format!(
            r#"{{"parent":{parent},"name":"c{i}","file":"f.rs","line":1,"calls":1,"timed":1,"total_ns":{},"self_ns":1}}"#,
            n - i
        ));
    }
    format!(
        r#"{{"schema":"profpoint.report","version":3,"run":{{"command":["/opt/chain"],"pid":1,"start_unix_ns":0,"cpu_model":"x","kernel":"6","shards":1}},"wall_ns":1000000000,"points":[],"tracepoints":[],"tree":{{"nodes":[{nodes}]}}}}"#
    )
}

/// A points tree of one chain of 200,000 nodes, rendered as folded stacks, a flame graph and
/// pprof stacks under a 1 GiB address-space limit: each ends with status 0, its paths cut at
/// 1,000 points (one line on stderr says how many nodes are past it), the folded output 1,001
/// lines. Every path whole, this was quadratic in the nodes: the limit ended it by SIGABRT. The 60 s
/// bound (a debug build takes seconds, mostly reading the JSON) only catches work that grows
/// as the nodes squared; a release build's figure for 1,000,000 nodes is in RELIABILITY.md.
#[cfg(unix)]
#[test]
fn a_long_chain_renders_in_bounded_time_and_memory() {
    let d = dir();
    let path = d.join("chain.json");
    std::fs::write(&path, chain_report(200_000)).unwrap();
    let bin = env!("CARGO_BIN_EXE_profpoint");
    for format in [
        "points-folded",
        "folded",
        "points-flame",
        "flame",
        "points-pprof",
    ] {
        let out = d.join(format!("chain.{format}"));
        let t = std::time::Instant::now();
        let o = std::process::Command::new("sh")
            .args([
                "-c",
                r#"ulimit -v 1048576 && exec "$0" report "$1" --format "$2" -o "$3""#,
                bin,
                path.to_str().unwrap(),
                format,
                out.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let took = t.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        println!(
            "{format}: {took:?}, {} bytes",
            std::fs::metadata(&out).map_or(0, |m| m.len())
        );
        assert_eq!(o.status.code(), Some(0), "{format}: {:?} {err}", o.status);
        assert!(
            took < std::time::Duration::from_secs(60),
            "{format}: {took:?}"
        );
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{format}: {err}");
        assert!(
            lines[0].starts_with(
                "profpoint: 199000 nodes of the points tree are deeper than 1000 points"
            ),
            "{format}: {err}"
        );
        if format.ends_with("folded") {
            let text = std::fs::read_to_string(&out).unwrap();
            assert_eq!(text.lines().count(), 1001, "{format}");
            assert!(text.contains(";c999;... 199000\n"), "{format}");
        }
    }
    common::clean();
}
