//! The variables profpoint reads at start-up, seen from a child: a bad value, a value that is
//! not UTF-8 or a glob that matches nothing is one clear line and the program runs; a good
//! configuration prints nothing; globs set the points' status before `main`.

use super::{profpoint_lines, run_child, stderr};

pub(super) fn a_bad_heatmap_variable_is_one_line_and_the_program_runs() {
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_HEATMAP", "1"),
            ("PROFPOINT_HZ", "fast"),
            ("PROFPOINT_REPORT", "stderr"),
        ],
    );
    assert!(o.status.success());
    let e = stderr(&o);
    if cfg!(feature = "heatmap") {
        assert!(e.contains("PROFPOINT_HZ=\"fast\": expected"), "{e}");
    }
    assert!(e.contains("exit_report::work"), "{e}");
}

/// `PROFPOINT_HZ=100000`, the largest accepted rate: one line names the value asked and the
/// rate used, and the program runs and reports as usual.
pub(super) fn a_rate_above_what_the_sampler_serves_is_one_line_and_clamped() {
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_HEATMAP", "1"),
            ("PROFPOINT_HZ", "100000"),
            ("PROFPOINT_REPORT", "stderr"),
        ],
    );
    assert!(o.status.success());
    let e = stderr(&o);
    if cfg!(feature = "heatmap") {
        let lines: Vec<&str> = e
            .lines()
            .filter(|l| l.starts_with("profpoint: PROFPOINT_HZ="))
            .collect();
        assert_eq!(lines.len(), 1, "{e}");
        assert!(
            lines[0].starts_with("profpoint: PROFPOINT_HZ=100000: sampling at 10000 Hz"),
            "{e}"
        );
    }
    assert!(e.contains("exit_report::work"), "{e}");
}

pub(super) fn bad_environment_values_get_one_clear_line_and_the_default() {
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_REPORT", "xml:/tmp/x"),
            ("PROFPOINT_SAMPLE", "often"),
            ("PROFPOINT_SUBTRACT_OVERHEAD", "maybe"),
            ("PROFPOINT_BUDGET", "lots"),
            ("PROFPOINT_SIGNALS", "yes please"),
            ("PROFPOINT_REPORT_EVERY", "5"),
        ],
    );
    assert!(o.status.success());
    let e = stderr(&o);
    let line = e
        .lines()
        .find(|l| l.contains("PROFPOINT_REPORT="))
        .expect(&e);
    // Every destination the parser takes, named.
    assert_eq!(
        line,
        "profpoint: PROFPOINT_REPORT=\"xml:/tmp/x\": expected a comma-separated list of \
         stderr, stdout, json:PATH, csv:PATH, table:PATH, prom:PATH, svg:PATH, pprof:PATH, \
         folded:PATH, flame:PATH, points-folded:PATH, points-flame:PATH, pprof-stacks:PATH or \
         points-pprof:PATH, or off alone; using stderr"
    );
    assert!(e.contains("PROFPOINT_SAMPLE=\"often\": expected"), "{e}");
    assert!(
        e.contains("PROFPOINT_SUBTRACT_OVERHEAD=\"maybe\": expected 0 or 1"),
        "{e}"
    );
    assert!(
        e.lines().any(|l| l
            == "profpoint: PROFPOINT_BUDGET=\"lots\": expected a percentage of CPU time above 0 and at most 100 (e.g. 2%), or off, optionally followed by `,bursts` (e.g. 2%,bursts); using 2%"),
        "{e}"
    );
    assert!(
        e.lines().any(|l| l
            == "profpoint: PROFPOINT_SIGNALS=\"yes please\": expected 0 or 1; using 1 (a report on SIGINT, SIGTERM and SIGHUP)"),
        "{e}"
    );
    assert!(
        e.lines().any(|l| l
            == "profpoint: PROFPOINT_REPORT_EVERY=\"5\": expected a duration with its unit from 10ms to 30 days (e.g. 500ms, 10s, 5m, 1h); using a report at exit only"),
        "{e}"
    );
    // The default for a bad PROFPOINT_REPORT is stderr: the table is there.
    assert!(e.contains("exit_report::work"), "{e}");
}

#[cfg(unix)]
/// A value that is not UTF-8, in any variable profpoint reads: one line naming it, and the
/// program runs (a variable read only when another turns its feature on gets that one set).
pub(super) fn non_utf8_environment_values_get_one_clear_line() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    for (var, with) in [
        ("PROFPOINT_REPORT", None),
        ("PROFPOINT_ENABLE", None),
        ("PROFPOINT_DISABLE", None),
        ("PROFPOINT_SAMPLE", None),
        ("PROFPOINT_SUBTRACT_OVERHEAD", None),
        ("PROFPOINT_BUDGET", None),
        ("PROFPOINT_CLOCK", None),
        ("PROFPOINT_TRACE", None),
        ("PROFPOINT_HEATMAP", None),
        ("PROFPOINT_HZ", Some(("PROFPOINT_HEATMAP", "1"))),
        ("PROFPOINT_SHIFT", Some(("PROFPOINT_HEATMAP", "1"))),
        ("PROFPOINT_HEATMAP_TOP", Some(("PROFPOINT_HEATMAP", "1"))),
        ("PROFPOINT_HEATMAP_SOURCE", Some(("PROFPOINT_HEATMAP", "1"))),
        (
            "PROFPOINT_HEATMAP_EXCLUDE",
            Some(("PROFPOINT_HEATMAP", "1")),
        ),
        ("PROFPOINT_PMU", None),
        ("PROFPOINT_PMU_LONG", Some(("PROFPOINT_PMU", "software"))),
        ("PROFPOINT_PMU_WINDOW", Some(("PROFPOINT_PMU", "software"))),
        ("PROFPOINT_PMU_EVENTS", Some(("PROFPOINT_PMU", "software"))),
    ] {
        // Without the sampler its variables are not read (asking for it is one line of its
        // own: `a_sampler_asked_for_without_its_feature_is_one_line`).
        let sampler = |v: &str| v.contains("HEATMAP") || v.contains("PMU");
        if cfg!(not(feature = "heatmap")) && (sampler(var) || with.is_some_and(|(k, _)| sampler(k)))
        {
            continue;
        }
        let mut cmd = super::common::runner::target_command(std::env::current_exe().unwrap());
        cmd.env("PROFPOINT_TEST_CHILD", "child_silent")
            .env_remove("PROFPOINT_REPORT")
            .env(var, bad);
        if let Some((k, v)) = with {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        let e = stderr(&o);
        assert!(o.status.success(), "{var}: {}: {e}", o.status);
        let expected = format!("profpoint: {var}=\"\\xFF\\xFE\": expected UTF-8 text; ignoring it");
        assert_eq!(
            e.lines()
                .filter(|l| l.contains(var) && l.contains("UTF-8"))
                .count(),
            1,
            "{var}: {e}"
        );
        assert!(e.lines().any(|l| l == expected), "{var}: {expected}\n{e}");
    }
}

pub(super) fn environment_globs_set_the_status_at_start() {
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_REPORT", "stderr"),
            ("PROFPOINT_DISABLE", "*"),
            ("PROFPOINT_ENABLE", "exit_report::wo*"),
        ],
    );
    let e = stderr(&o);
    let row = e
        .lines()
        .find(|l| l.contains("exit_report::work"))
        .expect(&e);
    assert!(row.trim_start().starts_with("on"), "{row}");
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_REPORT", "stderr"),
            ("PROFPOINT_DISABLE", "exit_report::*"),
        ],
    );
    let e = stderr(&o);
    let row = e
        .lines()
        .find(|l| l.contains("exit_report::work"))
        .expect(&e);
    let f: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((f[0], f[4]), ("off", "0"), "{row}");
}

/// The name this test binary's copy of profpoint calls itself by in warnings: its file name
/// where copies find themselves through their ELF note (x86_64 Linux, `copies.rs`), else
/// "the program" (seen under qemu-aarch64 in CI).
fn this_object() -> String {
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        let exe = std::env::current_exe().unwrap();
        exe.file_name().unwrap().to_string_lossy().into_owned()
    } else {
        "the program".to_owned()
    }
}

/// A glob that matches nothing, in any variable that takes globs: one line each, naming the
/// variable, the glob and a name that looks like it; the program runs as before.
pub(super) fn globs_that_match_nothing_get_one_line_each() {
    let o = run_child(
        "child_opted_in_then_process_exit",
        &[
            ("PROFPOINT_DISABLE", "nosuch::*,["),
            ("PROFPOINT_ENABLE", "exit_report::*, exit_report::work_fats"),
            ("PROFPOINT_SAMPLE", "exit_report::work=2,nosuch=count"),
            ("PROFPOINT_TRACE", "nosuch::*"),
        ],
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    let points = profpoint::points().count();
    let in_here = format!("{points} points in {}", this_object());
    let like = |name: &str| format!("(names look like {name})");
    let traces = if cfg!(target_os = "linux") {
        format!(
            "matches none of the 1 tracepoints in {} (names look like {})",
            this_object(),
            profpoint::tracepoints()[0].name
        )
    } else {
        format!(
            "matches nothing: there are no tracepoints in {}",
            this_object()
        )
    };
    assert_eq!(
        profpoint_lines(&e),
        [
            format!(
                "profpoint: PROFPOINT_DISABLE=nosuch::*: matches none of the {in_here} {}",
                like(profpoint::points().next().unwrap().name())
            ),
            format!(
                "profpoint: PROFPOINT_DISABLE=[: matches none of the {in_here} {}; only * and ? \
                 are wildcards, [ matches itself",
                like(profpoint::points().next().unwrap().name())
            ),
            format!(
                "profpoint: PROFPOINT_ENABLE=exit_report::work_fats: matches none of the \
                 {in_here} {}",
                like("exit_report::work_fast")
            ),
            format!(
                "profpoint: PROFPOINT_SAMPLE=nosuch: matches none of the {in_here} {}",
                like(profpoint::points().next().unwrap().name())
            ),
            format!("profpoint: PROFPOINT_TRACE=nosuch::*: {traces}"),
        ],
        "{e}"
    );
    // The globs that matched did their work: the report is there, work timed one call in 2.
    let row = e
        .lines()
        .find(|l| l.contains("exit_report::work "))
        .expect(&e);
    assert!(row.trim_start().starts_with("1/2 "), "{row}");
}

/// Every variable set to something that works: not one line from profpoint.
pub(super) fn a_good_configuration_prints_nothing() {
    let dir = std::env::temp_dir().join(format!("profpoint-good-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = format!(
        "json:{},csv:{}",
        dir.join("r-{pid}.json").display(),
        dir.join("r.csv").display()
    );
    let mut env = vec![
        ("PROFPOINT_REPORT", spec.as_str()),
        ("PROFPOINT_DISABLE", "exit_report::work_fast"),
        ("PROFPOINT_ENABLE", "exit_report::w*, exit_report::?ork"),
        ("PROFPOINT_SAMPLE", "exit_report::work=2"),
    ];
    if cfg!(target_os = "linux") {
        env.push(("PROFPOINT_TRACE", "*::refused"));
    }
    let o = run_child("child_silent", &env);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert_eq!(e, "");
    assert!(dir.join("r.csv").is_file());
    std::fs::remove_dir_all(&dir).ok();
}

/// A sampler asked for in a build without it (`--no-default-features`): one line naming the
/// variable and the feature, and the rest of the report as asked.
#[cfg(not(feature = "heatmap"))]
pub(super) fn a_sampler_asked_for_without_its_feature_is_one_line() {
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_HEATMAP", "1"),
            ("PROFPOINT_PMU", "software"),
            ("PROFPOINT_REPORT", "stderr"),
        ],
    );
    assert!(o.status.success());
    let e = stderr(&o);
    for var in ["PROFPOINT_HEATMAP", "PROFPOINT_PMU"] {
        let said = format!(
            "profpoint: {var} is set, but this program was built without profpoint's `heatmap` feature"
        );
        assert_eq!(e.matches(&said).count(), 1, "{e}");
    }
    assert!(e.contains("exit_report::work"), "{e}");
}
