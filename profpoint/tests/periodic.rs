//! Periodic reports (`PROFPOINT_REPORT_EVERY`): a series of reports, each with the
//! interval's calls beside the totals, `{seq}` paths, a fixed path replaced each time and last
//! by the exit report, the table on stderr each interval, and an unwritable destination said
//! once. The child (this test binary again) runs until the second periodic report exists, so
//! nothing depends on how fast this machine is.

mod common;

use std::time::{Duration, Instant};

#[profpoint::profile_point]
#[inline(never)]
fn tick(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).wrapping_add(1))
}

fn child(dir: &std::path::Path) {
    let second = dir.join("r-2.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut x = 0;
    let mut calls = 0u64;
    while !second.exists() {
        for _ in 0..100 {
            x = tick(x);
        }
        calls += 100;
        std::thread::sleep(Duration::from_millis(1));
        assert!(Instant::now() < deadline, "no second report in 120 s");
    }
    // A few more calls after it: they are in the exit report's interval only.
    for _ in 0..7 {
        x = tick(x);
    }
    calls += 7;
    println!("calls={calls}");
}

fn json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn tick_of(points: &serde_json::Value) -> u64 {
    points
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str().unwrap().ends_with("::tick"))
        .map_or(0, |p| p["nr"].as_u64().unwrap())
}

#[test]
fn a_series_of_reports_carries_each_intervals_calls() {
    if let Some(dir) = std::env::var_os("PROFPOINT_PERIODIC_CHILD") {
        child(std::path::Path::new(&dir));
        return;
    }
    let dir = std::env::temp_dir().join(format!("profpoint-periodic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = format!(
        "json:{0}/r-{{seq}}.json,json:{0}/latest.json,json:{0}/missing/x.json,stderr",
        dir.display()
    );
    let o = common::runner::target_command(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_series_of_reports_carries_each_intervals_calls",
            "--nocapture",
        ])
        .env("PROFPOINT_PERIODIC_CHILD", &dir)
        .env("PROFPOINT_REPORT", report)
        .env("PROFPOINT_REPORT_EVERY", "100ms")
        .env("PROFPOINT_BUDGET", "off")
        // Each periodic report symbolises the running heatmap on the report thread.
        .env("PROFPOINT_HEATMAP", "1")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    let calls: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("calls="))
        .expect(&out)
        .parse()
        .unwrap();
    // The series: r-1 ... r-N, the last one the exit report; numbers without a gap.
    let mut n = 0;
    while dir.join(format!("r-{}.json", n + 1)).exists() {
        n += 1;
    }
    assert!(n >= 3, "{n} reports");
    let mut prev_total = 0;
    let mut prev_to = 0;
    let mut sum = 0;
    for seq in 1..=n {
        let r = json(&dir.join(format!("r-{seq}.json")));
        let iv = &r["interval"];
        assert_eq!(iv["seq"], seq, "{iv}");
        assert_eq!(iv["from_ns"].as_u64().unwrap(), prev_to, "report {seq}");
        assert_eq!(iv["to_ns"], r["wall_ns"], "report {seq}");
        // The heatmap section when the sampler is built in (feature `heatmap`, which the
        // workspace's build turns on; `-p profpoint` alone does not).
        assert_eq!(
            r["heatmap"].is_object(),
            cfg!(feature = "heatmap"),
            "report {seq}"
        );
        let total = tick_of(&r["points"]);
        let in_interval = tick_of(&iv["points"]);
        // The interval's calls are the totals' difference, exactly.
        assert_eq!(in_interval, total - prev_total, "report {seq}");
        sum += in_interval;
        prev_total = total;
        prev_to = iv["to_ns"].as_u64().unwrap();
    }
    // The last is the exit report: every call, and the intervals add up to it.
    assert_eq!(prev_total, calls);
    assert_eq!(sum, calls);
    // The fixed path was replaced each time, last by the exit report.
    let latest = json(&dir.join("latest.json"));
    assert_eq!(latest["interval"]["seq"], n);
    assert_eq!(tick_of(&latest["points"]), calls);
    // The table on stderr each time, with its interval.
    for seq in 1..=n {
        assert!(err.contains(&format!("Interval {seq}: ")), "{err}");
    }
    // The missing folder: one line for the whole series, one for the exit report.
    assert_eq!(
        err.matches("could not write periodic report").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("could not write periodic report 1 to json:") && err.contains("missing"),
        "{err}"
    );
    assert_eq!(
        err.matches("profpoint: could not write the report to json:")
            .count(),
        1,
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
