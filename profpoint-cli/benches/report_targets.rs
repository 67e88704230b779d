//! The targets for the report model and the command: reading, converting and writing a
//! report of 10,000 points with a 5 MB heatmap section, under 200 ms per format; `compare` of
//! two such reports under 200 ms. A plain bench (no threshold anywhere: the figures go into
//! BENCHMARKS.md), run with
//!
//! ```text
//! cargo bench -p profpoint-cli --bench report_targets
//! ```
//!
//! Each figure is the median of [`RUNS`] runs. In process: `Report::from_json` on the file's
//! text, the renderer, the file written. The command: `profpoint report BIG.json --format F
//! -o OUT` and `profpoint compare A.json B.json` as a user runs them (process start, reading,
//! rendering, writing). Baseline: serde_json reading the same text into a `serde_json::Value`
//! (parsing only, no model).

use profpoint_report::{PointReport, Report};
use profpoint_test_support::rng::Rng;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 7;
const POINTS: usize = 10_000;

/// A report of `POINTS` points (each with a 24-bucket histogram) and a heatmap section of
/// about 5 MB of JSON; `slow` makes every tenth point 1.5x slower (what compare flags).
fn big(seed: u64, slow: bool) -> Report {
    let mut rng = Rng(seed);
    let mut r = Report::empty();
    r.run.command = vec!["/opt/bench/big".into()];
    r.run.cpu_model = "bench".into();
    r.wall_ns = 10_000_000_000;
    for i in 0..POINTS {
        let base = 200 + (i as u64 * 37) % 50_000;
        let m = if slow && i % 10 == 0 {
            base * 3 / 2
        } else {
            base
        };
        let hist: Vec<[u64; 2]> = (0..24)
            .map(|k| [m * (90 + k) / 100, 1 + rng.next() % 500])
            .collect();
        let timed: u64 = hist.iter().map(|b| b[1]).sum();
        let total = hist.iter().map(|b| b[0] * b[1]).sum();
        let mut p = PointReport::default();
        p.name = format!("bench::module_{}::function_{i}", i % 97);
        p.file = format!("src/module_{}.rs", i % 97);
        p.line = i as u32;
        p.enabled = true;
        p.kind = "sync".into();
        p.nr = timed;
        p.timed = timed;
        p.total_ns = total;
        p.self_ns = Some(total / 2);
        p.avg_ns = total / timed;
        p.min_ns = hist[0][0];
        p.max_ns = hist[23][0];
        p.p50_ns = m;
        p.p90_ns = m * 110 / 100;
        p.p99_ns = m * 112 / 100;
        p.p999_ns = m * 113 / 100;
        p.stddev_ns = m / 10;
        p.wall_percent = total as f64 / 1e8;
        p.hist = hist;
        r.points.push(p);
    }
    r.points.sort_by_key(|p| std::cmp::Reverse(p.total_ns));
    let rows: Vec<heatmap::Row> = (0..20_000u64)
        .map(|i| {
            let mut row = heatmap::Row::default();
            row.address = 0x5555_0000_0000 + i * 64;
            row.function = format!(
                "<bench::module_{}::Type<T> as core::ops::Fn>::call_{i}",
                i % 97
            );
            row.library = (i % 3 == 0).then(|| "libc.so.6".to_string());
            row.nr = 20_000 - i;
            row.percent = (20_000 - i) as f64 / 2e6;
            row.location = Some(format!("src/module_{}.rs:{}", i % 97, i));
            row
        })
        .collect();
    let mut h = heatmap::Report::default();
    h.source = "perf task-clock".into();
    h.mode = "cpu".into();
    h.by = heatmap::By::Function;
    h.bucket_size = 16;
    h.requested_hz = 997;
    h.achieved_hz = Some(990.0);
    h.achieved_hz_per_cpu_second = Some(980.0);
    h.user_cpu_seconds = 10.0;
    h.sys_cpu_seconds = 0.1;
    h.wall_seconds = 10.0;
    h.total_samples = 200_010_000;
    h.base = 200_010_000;
    h.rows = rows;
    r.heatmap = Some(h);
    r
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(mut f: impl FnMut()) -> Duration {
    median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn ms(d: Duration) -> String {
    format!("{:7.1} ms", d.as_secs_f64() * 1e3)
}

fn run(args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_profpoint"))
        .args(args)
        .output()
        .expect("the command runs");
    assert!(
        o.status.success() || o.status.code() == Some(1),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs it once as a smoke test.
    let dir = std::env::temp_dir().join(format!("profpoint-report-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    let report = big(1, false);
    let text = report.to_json();
    std::fs::write(&a, &text).unwrap();
    std::fs::write(&b, big(2, true).to_json()).unwrap();
    let heat = profpoint_json::to_string_pretty(report.heatmap.as_ref().unwrap())
        .unwrap()
        .len();
    println!(
        "report: {} points, {:.1} MB of JSON ({:.1} MB of it the heatmap section); median of {RUNS} runs",
        report.points.len(),
        text.len() as f64 / 1e6,
        heat as f64 / 1e6
    );
    let baseline = time(|| {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        std::hint::black_box(v);
    });
    let read = time(|| {
        std::hint::black_box(Report::from_json(&text).unwrap());
    });
    println!(
        "read only: Report::from_json {}   (baseline: serde_json to a Value {})",
        ms(read),
        ms(baseline)
    );
    let out = |f: &str| dir.join(format!("out.{f}"));
    let write = |p: &Path, bytes: &[u8]| std::fs::write(p, bytes).unwrap();
    println!(
        "{:<8} {:>22} {:>22}",
        "format", "read+render+write", "profpoint report"
    );
    for f in ["table", "json", "csv", "pprof", "prom", "svg"] {
        let inproc = time(|| {
            let r = Report::from_json(&std::fs::read_to_string(&a).unwrap()).unwrap();
            let bytes = match f {
                "table" => r.to_table().into_bytes(),
                "json" => r.to_json().into_bytes(),
                "csv" => r.to_csv().into_bytes(),
                "pprof" => r.to_pprof(),
                "prom" => r.to_prometheus().into_bytes(),
                _ => r.to_svg().into_bytes(),
            };
            write(&out(f), &bytes);
        });
        let o = out(f);
        let cmd = time(|| {
            run(&[
                "report",
                a.to_str().unwrap(),
                "--format",
                f,
                "-o",
                o.to_str().unwrap(),
            ]);
        });
        println!("{f:<8} {:>22} {:>22}", ms(inproc), ms(cmd));
    }
    let cmp = time(|| run(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]));
    println!("profpoint compare a.json b.json: {}", ms(cmp));
    // PROFPOINT_BENCH_KEEP=1 leaves the two reports for a look by hand (their folder printed).
    if std::env::var_os("PROFPOINT_BENCH_KEEP").is_some() {
        println!("reports kept in {}", dir.display());
    } else {
        std::fs::remove_dir_all(&dir).ok();
    }
}
