//! The user's settings on span points (run-time globs and `PROFPOINT_DISABLE`, including
//! before the span's callsite is first seen), and an exhausted pool of points.
//!
//! The environment and the pool are process-wide: those tests run in a child of this binary
//! started with the variables they need (under plain `cargo test` and cargo-nextest alike).

mod common;

use common::{calls, layered, point};

/// Set in the child a test starts (see [`in_child`]).
const CHILD: &str = "PROFPOINT_TRACING_TEST_CHILD";

/// Runs the test `name` in a child of this binary with `env` set; `true` in the child (run the
/// test's body), `false` in the parent, after the child passed. Returns the child's stderr
/// through `stderr`.
fn in_child(name: &str, env: &[(&str, &str)], stderr: &mut String) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = profpoint_test_support::runner::target_command(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("could not start the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    *stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "`{name}` in a child: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    false
}

#[test]
fn run_time_globs_reach_span_points_made_before_and_after() {
    // Before the callsite is first seen: no point matches yet, the setting waits for it.
    assert_eq!(profpoint::disable("t_rt_off::*"), 0);
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..5 {
            let _s = tracing::info_span!(target: "t_rt_off", "quiet").entered();
            let _t = tracing::info_span!(target: "t_rt_on", "loud").entered();
        }
    });
    let r = profpoint::snapshot();
    let quiet = point(&r, "t_rt_off::quiet");
    assert_eq!((quiet.enabled, quiet.nr), (false, 0));
    assert_eq!(point(&r, "t_rt_on::loud").nr, 5);
    // After: a glob reaches the point as any.
    assert_eq!(profpoint::count_only("t_rt_on::loud"), 1);
    assert_eq!(profpoint::enable("t_rt_off::*"), 1);
    tracing::subscriber::with_default(layered(), || {
        let _s = tracing::info_span!(target: "t_rt_off", "quiet").entered();
    });
    assert_eq!(calls("t_rt_off::quiet"), 1);
    assert_eq!(
        point(&profpoint::snapshot(), "t_rt_on::loud").sampling,
        Some(0)
    );
}

#[test]
fn profpoint_disable_applies_to_spans() {
    let mut stderr = String::new();
    let env = [
        ("PROFPOINT_DISABLE", "t_env::off_*,t_env::never_*"),
        ("PROFPOINT_SAMPLE", "t_env::sampled=8"),
    ];
    if !in_child("profpoint_disable_applies_to_spans", &env, &mut stderr) {
        // A glob that matches no point at start-up may name spans: no warning for it then.
        assert!(!stderr.contains("matches none"), "{stderr}");
        // At exit, the one that named no span either is said, once; the others named spans.
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("by the end of the run"))
            .collect();
        assert_eq!(said.len(), 1, "{stderr}");
        assert!(
            said[0]
                .starts_with("profpoint: PROFPOINT_DISABLE=t_env::never_*: matched none of the "),
            "{stderr}"
        );
        return;
    }
    tracing::subscriber::with_default(profpoint_tracing::subscriber(), || {
        for _ in 0..10 {
            let _a = tracing::info_span!(target: "t_env", "off_a").entered();
            let _b = tracing::info_span!(target: "t_env", "on_b").entered();
            let _c = tracing::info_span!(target: "t_env", "sampled").entered();
        }
    });
    let r = profpoint::snapshot();
    let off = point(&r, "t_env::off_a");
    assert_eq!((off.enabled, off.nr), (false, 0));
    assert_eq!(point(&r, "t_env::on_b").nr, 10);
    let sampled = point(&r, "t_env::sampled");
    assert_eq!((sampled.sampling, sampled.nr), (Some(8), 10));
}

#[test]
fn an_exhausted_pool_says_one_line_and_spans_go_unprofiled() {
    let mut stderr = String::new();
    if !in_child(
        "an_exhausted_pool_says_one_line_and_spans_go_unprofiled",
        &[],
        &mut stderr,
    ) {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("points for run-time names are taken"))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(lines[0].starts_with("profpoint: all 1024 "), "{stderr}");
        return;
    }
    let before = profpoint::points().count();
    // Unclaimed spares are in no list.
    assert!(
        profpoint::snapshot()
            .points
            .iter()
            .all(|p| !p.name.is_empty()),
        "an unclaimed spare is in the report"
    );
    let mut claimed = 0;
    while profpoint::__private::claim_point("t_pool::filler", file!(), line!(), false).is_some() {
        claimed += 1;
        assert!(
            claimed <= profpoint_tracing::POOL_SIZE,
            "more points than the pool"
        );
    }
    assert_eq!(claimed, profpoint_tracing::POOL_SIZE);
    assert_eq!(profpoint::points().count(), before + claimed);
    // Spans past the pool run, unprofiled, and say nothing more.
    tracing::subscriber::with_default(layered(), || {
        for _ in 0..3 {
            let _a = tracing::info_span!(target: "t_pool", "late").entered();
            let _b = tracing::info_span!(target: "t_pool", "later").entered();
        }
    });
    tracing::subscriber::with_default(profpoint_tracing::subscriber(), || {
        let _c = tracing::info_span!(target: "t_pool", "latest").entered();
        assert_eq!(
            tracing::Span::current().metadata().map(|m| m.name()),
            Some("latest")
        );
    });
    assert!(
        !profpoint::snapshot()
            .points
            .iter()
            .any(|p| p.name.starts_with("t_pool::late"))
    );
}
