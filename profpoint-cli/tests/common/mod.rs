//! Helpers of the command's tests: running it, and synthetic reports drawn from known
//! distributions with a deterministic generator (a failure names a case that replays).

#![allow(dead_code, unreachable_pub, unused_imports)]

/// Starting binaries through the target's runner (qemu under scripts/test-aarch64).
pub use profpoint_test_support::runner;

/// Runs the command: (exit status, stdout, stderr).
pub fn profpoint(args: &[&str]) -> (i32, String, String) {
    let o = runner::target_command(env!("CARGO_BIN_EXE_profpoint"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A folder of this test's own: the process id and the thread's name, which is the test's
/// (`cargo test` runs a file's tests as threads of one process, each cleaning up its own).
pub fn dir() -> std::path::PathBuf {
    let thread = std::thread::current();
    let name: String = thread
        .name()
        .unwrap_or("test")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let d = std::env::temp_dir().join(format!("profpoint-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes [`dir`] (at the end of a test that passed: a failed one leaves its files to look at).
pub fn clean() {
    std::fs::remove_dir_all(dir()).ok();
}

/// Writes `text` to `name` in [`dir`]; returns its path.
pub fn write(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A deterministic xorshift stream (test-support's, shared with the bench).
pub use profpoint_test_support::rng::Rng;

/// A seed for case `i` of a test (never 0, which xorshift cannot leave).
pub fn seed(test: u64, i: u64) -> Rng {
    Rng((test << 32) ^ (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
}

/// The bucket midpoint the library's histogram would report for `v` ns: exact below 64, then
/// 32 buckets an octave (docs/report-schema.md, `hist`).
fn midpoint(v: u64) -> u64 {
    if v < 64 {
        return v;
    }
    let shift = 63 - v.leading_zeros() - 5;
    let top = v >> shift;
    ((top << shift) + ((top + 1) << shift)) / 2
}

/// One point's JSON object, from its call times.
pub fn point_json(name: &str, calls: &[u64]) -> String {
    let mut s = calls.to_vec();
    s.sort_unstable();
    let n = s.len() as u64;
    let total: u64 = s.iter().sum();
    let q = |x: f64| {
        if s.is_empty() {
            0
        } else {
            s[((x * n as f64).ceil() as usize).clamp(1, s.len()) - 1]
        }
    };
    let mean = total as f64 / n.max(1) as f64;
    let sd =
        (s.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n.max(2) - 1) as f64).sqrt();
    let mut hist: Vec<(u64, u64)> = Vec::new();
    for &v in &s {
        let m = midpoint(v);
        match hist.last_mut() {
            Some(last) if last.0 == m => last.1 += 1,
            _ => hist.push((m, 1)),
        }
    }
    let hist: Vec<String> = hist.iter().map(|(v, c)| format!("[{v},{c}]")).collect();
    format!(
        r#"{{"name":"{name}","file":"src/x.rs","line":1,"enabled":true,"kind":"sync","sampling":null,"estimated":false,"nr":{n},"timed":{n},"nested":0,"total_ns":{total},"self_ns":{total},"avg_ns":{},"min_ns":{},"max_ns":{},"p50_ns":{},"p90_ns":{},"p99_ns":{},"p999_ns":{},"stddev_ns":{},"wall_percent":1.0,"total_ci95_ns":0,"hist":[{}]}}"#,
        total / n.max(1),
        s.first().copied().unwrap_or(0),
        s.last().copied().unwrap_or(0),
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        sd.round() as u64,
        hist.join(",")
    )
}

/// A version-1 report of `program` with one point per `(name, call times)`.
pub fn report(program: &str, points: &[(&str, Vec<u64>)]) -> String {
    let pts: Vec<String> = points.iter().map(|(n, c)| point_json(n, c)).collect();
    format!(
        r#"{{"schema":"profpoint.report","version":1,"run":{{"command":["/opt/bench/{program}","--quick"],"pid":1,"start_unix_ns":0,"cpu_model":"x","kernel":"6","shards":1}},"wall_ns":1000000000,"points":[{}],"tracepoints":[]}}"#,
        pts.join(",")
    )
}

/// The verdict column of `name`'s row in compare's output, or a panic showing the output.
pub fn verdict(out: &str, name: &str) -> String {
    // The rows follow the column headings.
    let row = out
        .lines()
        .skip_while(|l| !l.starts_with("name "))
        .skip(1)
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row for {name}:\n{out}"));
    // The verdict is the text after the p column; rows without a test have no p.
    let cols: Vec<&str> = row.split_whitespace().collect();
    match cols.iter().position(|c| {
        c.starts_with("SLOWER")
            || c.starts_with("faster")
            || c.starts_with('~')
            || c.starts_with('?')
            || *c == "only"
    }) {
        Some(i) => cols[i..].join(" "),
        None => panic!("no verdict in {row:?}"),
    }
}

/// Whether compare's output flags any point (SLOWER or faster).
pub fn flags_any(out: &str) -> bool {
    out.lines()
        .any(|l| l.ends_with("  SLOWER") || l.ends_with("  faster"))
}
