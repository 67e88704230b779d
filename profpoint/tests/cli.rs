//! The `profpoint` command on real and hand-made reports.

use std::process::Command;

fn profpoint(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_profpoint"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("profpoint-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[profpoint::profile_point]
fn measured(n: u64) -> u64 {
    std::hint::black_box((0..n).sum())
}

#[test]
fn report_reads_a_real_report() {
    for i in 0..100 {
        measured(i);
    }
    let path = dir().join("real.json");
    std::fs::write(&path, profpoint::snapshot().to_json()).unwrap();
    let (code, out, err) = profpoint(&["report", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("cli::measured"))
        .expect(&out);
    assert_eq!(
        row.split_whitespace().nth(2),
        Some("100"),
        "nr column: {row}"
    );
}

/// A minimal version-1 report with one point per (name, avg, sd, timed).
fn synthetic(points: &[(&str, u64, u64, u64)]) -> String {
    let pts: Vec<String> = points
        .iter()
        .map(|(n, avg, sd, timed)| {
            format!(
                r#"{{"name":"{n}","nr":{timed},"timed":{timed},"total_ns":{},"avg_ns":{avg},"p50_ns":{avg},"p99_ns":{avg},"stddev_ns":{sd},"estimated":false}}"#,
                avg * timed
            )
        })
        .collect();
    format!(
        r#"{{"schema":"profpoint.report","version":1,"wall_ns":1000000000,"points":[{}]}}"#,
        pts.join(",")
    )
}

#[test]
fn compare_flags_a_real_slowdown_and_not_the_noise() {
    let d = dir();
    let (a, b) = (d.join("base.json"), d.join("new.json"));
    std::fs::write(
        &a,
        synthetic(&[
            ("db::query", 1000, 40, 50_000),
            ("parse", 500, 400, 20),
            ("old", 1, 0, 5),
        ]),
    )
    .unwrap();
    std::fs::write(
        &b,
        synthetic(&[
            ("db::query", 1300, 40, 50_000),
            ("parse", 540, 400, 20),
            ("new", 1, 0, 5),
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
    assert!(
        row("db::query").contains("+30.0%") && row("db::query").ends_with("SLOWER"),
        "{out}"
    );
    assert!(row("parse").contains("within noise"), "{out}");
    assert!(row("new").ends_with("new point"), "{out}");
    assert!(row("old").ends_with("gone"), "{out}");
    let (code, _, err) = profpoint(&["compare", a, b, "--fail-on-regression"]);
    assert_eq!(code, 1);
    assert!(err.contains("1 point(s) significantly slower"), "{err}");
    // A threshold above the change: not flagged.
    let (code, out, _) = profpoint(&["compare", a, b, "--threshold", "50", "--fail-on-regression"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let d = dir();
    let junk = d.join("junk.json");
    std::fs::write(&junk, "not json").unwrap();
    let other = d.join("other.json");
    std::fs::write(
        &other,
        r#"{"schema":"x","version":1,"wall_ns":0,"points":[]}"#,
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["report", "/no/such/file.json"],
            "/no/such/file.json: cannot read it",
        ),
        (
            vec!["report", junk.to_str().unwrap()],
            "not a profpoint JSON report",
        ),
        (
            vec!["report", other.to_str().unwrap()],
            r#"schema "x", expected "profpoint.report""#,
        ),
        (
            vec!["compare", junk.to_str().unwrap()],
            "expected two JSON reports",
        ),
        (
            vec!["compare", "a", "b", "--threshold", "lots"],
            r#"--threshold "lots": expected a percentage"#,
        ),
        (
            vec!["report", "x", "--top"],
            "--top: expected a number of rows after it",
        ),
        (
            vec!["frobnicate"],
            r#"unknown command "frobnicate": expected report or compare"#,
        ),
    ];
    for (args, expected) in cases {
        let (code, _, err) = profpoint(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.starts_with("profpoint: "), "{err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn compare_repeated_runs_tests_run_to_run_noise() {
    let d = dir();
    let write = |name: &str, avg: u64| {
        let p = d.join(name);
        // Wide per-call spread, many calls: a single-run test would call +3% significant.
        std::fs::write(&p, synthetic(&[("kernel", avg, 10, 1_000_000)])).unwrap();
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
    let (_, out, _) = run(args(&slow));
    assert!(
        out.lines()
            .any(|l| l.starts_with("kernel") && l.ends_with("SLOWER")),
        "{out}"
    );
    let (code, _, err) = profpoint(&["compare", "--", &base[0]]);
    assert_eq!(code, 2);
    assert!(
        err.contains("at least one report on each side of --"),
        "{err}"
    );
}
