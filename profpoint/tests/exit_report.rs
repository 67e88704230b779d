//! The at-exit report, seen from outside: this test binary (its own `main`, via libtest-mimic)
//! re-runs itself as a child process with `PROFPOINT_TEST_CHILD=<scenario>`, so
//! process-global behaviour is tested in a process of its own.

mod common;
#[path = "exit_report/environment.rs"]
mod environment;
#[path = "exit_report/writing.rs"]
mod writing;

use environment::*;
use writing::*;

use std::process::Output;
use std::time::Duration;

#[profpoint::profile_point]
fn work() {
    std::thread::sleep(Duration::from_millis(20));
}

#[profpoint::profile_point]
fn work_fast() {}

/// Runs the child test `name` with extra environment variables.
fn run_child(name: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = common::runner::target_command(std::env::current_exe().unwrap());
    cmd.env("PROFPOINT_TEST_CHILD", name)
        .env_remove("PROFPOINT_REPORT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[cfg(unix)]
#[profpoint::profile_point]
#[inline(never)]
fn spin(mut x: u64) -> u64 {
    for i in 0..10_000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    x
}

#[cfg(unix)]
use profpoint_test_support::cpu::thread_cpu;

#[cfg(all(feature = "heatmap", target_os = "linux"))]
fn heatmap_joins_the_exit_report() {
    let dir = std::env::temp_dir().join(format!("profpoint-heatmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let pb = dir.join("r.pb");
    let spec = format!("stderr,json:{},pprof:{}", json.display(), pb.display());
    let o = run_child(
        "child_busy",
        &[
            ("PROFPOINT_HEATMAP", "1"),
            ("PROFPOINT_HZ", "1000"),
            ("PROFPOINT_REPORT", &spec),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("Heatmap (top #"), "{e}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let h = &v["heatmap"];
    // 300 ms of CPU at 1 kHz (or 250 Hz with the setitimer fallback): well over 20 samples.
    assert!(h["total_samples"].as_u64().unwrap() >= 20, "{h}");
    let rows = h["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    // The busy loop is where the time goes, in the annotated function itself.
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "exit_report::spin", "{names:?}");
    // The pprof profile carries the heatmap as a fourth sample type, one sample per row.
    use common::pb::{packed_varints, pb_fields};
    let top = pb_fields(&common::pb::gunzip(&std::fs::read(&pb).unwrap()));
    let strings: Vec<String> = top
        .iter()
        .filter(|f| f.0 == 6)
        .map(|f| String::from_utf8(f.3.clone()).unwrap())
        .collect();
    let types: Vec<&str> = top
        .iter()
        .filter(|f| f.0 == 1)
        .map(|f| strings[pb_fields(&f.3)[0].2 as usize].as_str())
        .collect();
    assert_eq!(types, ["calls", "self", "total", "samples"]);
    let functions: Vec<String> = top
        .iter()
        .filter(|f| f.0 == 5)
        .map(|f| strings[pb_fields(&f.3)[1].2 as usize].clone())
        .collect();
    let samples: Vec<Vec<u64>> = top
        .iter()
        .filter(|f| f.0 == 2)
        .map(|f| packed_varints(&pb_fields(&f.3)[1].3))
        .collect();
    let points = v["points"].as_array().unwrap().len();
    assert_eq!(samples.len(), points + rows.len());
    // Sample i is function i+1; the heatmap's follow the points'.
    let spin_row = rows[0]["nr"].as_u64().unwrap();
    assert_eq!(functions[points], "exit_report::spin");
    assert_eq!(samples[points], [0, 0, 0, spin_row]);
    assert!(samples[..points].iter().all(|s| s[3] == 0));
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(target_os = "linux")]
profpoint::tracepoint!(fn refused(x: u64));

#[cfg(target_os = "linux")]
/// Where W^X is enforced, enabling a static-key tracepoint fails with a clear error.
fn a_w_xor_x_policy_refuses_patching_with_a_clear_error() {
    if !profpoint::tracepoint::key::STATIC_KEYS {
        println!("SKIPPED: this build uses the atomic tracepoint backend (nothing to patch)");
        return;
    }
    let o = run_child("child_mdwe", &[]);
    if o.status.code() == Some(77) {
        println!("SKIPPED: prctl(PR_SET_MDWE) is not supported by this kernel (needs 6.3+)");
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("enabled=false"), "{out}");
    let e = stderr(&o);
    assert!(
        e.contains("tracepoint exit_report::refused cannot be enabled"),
        "{e}"
    );
    assert!(e.contains("MemoryDenyWriteExecute"), "{e}");
    assert!(e.contains("`tracepoint-atomic` feature"), "{e}");
}

/// PROFPOINT_PMU=1: the hardware-metrics section where a PMU exists; elsewhere one clear line
/// naming the cause, and the program and its report go on.
#[cfg(all(feature = "heatmap", target_os = "linux"))]
fn hardware_metrics_or_a_clear_reason_why_not() {
    let o = run_child("child_busy", &[("PROFPOINT_PMU", "1")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("exit_report::spin"),
        "the points table is there: {e}"
    );
    match heatmap::pmu::available() {
        Ok(()) => {
            assert!(e.contains("Hardware metrics per function"), "{e}");
            assert!(e.contains("CPI"), "{e}");
        }
        Err(why) => {
            let line = e.lines().find(|l| l.contains("PROFPOINT_PMU")).expect(&e);
            // Without a PMU the line also points to the software mode, which needs none.
            let hint = if matches!(why, heatmap::pmu::PmuError::NoPmu(_)) {
                "; or try PROFPOINT_PMU=software (the same windows on the CPU clock, no PMU needed)"
            } else {
                ""
            };
            assert_eq!(line, format!("profpoint: PROFPOINT_PMU: {why}{hint}"));
            println!("SKIPPED the hardware-metrics section (checked the error instead): {why}");
        }
    }
}

/// PROFPOINT_PMU=software: the same alternating windows on the CPU clock, no PMU needed; the
/// section is in the table and in the JSON, and the busy function leads it.
#[cfg(all(feature = "heatmap", target_os = "linux"))]
fn software_clock_metrics_join_the_exit_report() {
    let dir = std::env::temp_dir().join(format!("profpoint-pmu-sw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let spec = format!("stderr,json:{}", json.display());
    // A window every ~1 ms of CPU (the default is 5 ms): the child spins for 300 ms of CPU.
    let o = run_child(
        "child_busy",
        &[
            ("PROFPOINT_PMU", "software"),
            ("PROFPOINT_PMU_LONG", "1000000"),
            ("PROFPOINT_REPORT", &spec),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    if e.contains("profpoint: PROFPOINT_PMU:") {
        println!("SKIPPED software_clock_metrics_join_the_exit_report: {e}");
        return;
    }
    assert!(e.contains("Software-clock metrics per function"), "{e}");
    assert!(e.contains("PF/ms"), "{e}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let p = &v["pmu"];
    assert_eq!(
        p["events"],
        serde_json::json!(["task-clock", "page-faults"]),
        "{p}"
    );
    // 300 ms of CPU with a window every ~1.2 ms: well over 20 windows.
    assert!(p["windows"].as_u64().unwrap() >= 20, "{p}");
    // The loop runs in the annotated function itself; the section credits it by name.
    let top = &p["rows"][0];
    assert_eq!(
        top["symbol"], "exit_report::spin",
        "the busy loop leads: {p}"
    );
    assert!(top["clock_percent"].as_f64().unwrap() > 50.0, "{p}");
}

/// Stands in for `main` (the attribute works on any function; `main` is the one to mark).
#[profpoint::main]
fn entry() {
    work();
}

fn the_main_attribute_opts_in() {
    let o = run_child("child_main_attribute", &[]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("exit_report::work"), "{}", stderr(&o));
}

/// The child scenarios, run instead of the tests when `PROFPOINT_TEST_CHILD` names one.
fn child(scenario: &str) {
    match scenario {
        "child_opted_in_then_process_exit" => {
            profpoint::report_at_exit();
            work();
            work();
            std::process::exit(3);
        }
        "child_silent" => work(),
        #[cfg(unix)]
        "child_forks" => {
            work();
            // SAFETY: the child calls profiled code and exits through `exit` (running the
            // at-exit report, as a forked worker that returns normally would).
            let child = unsafe { libc::fork() };
            assert!(child >= 0);
            if child == 0 {
                work();
                std::process::exit(0);
            }
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(child, &mut status, 0) };
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            println!("child {child}");
        }
        "child_main_attribute" => entry(),
        #[cfg(target_os = "linux")]
        "child_mdwe" => {
            // PR_SET_MDWE = 65, PR_MDWE_REFUSE_EXEC_GAIN = 1 (include/uapi/linux/prctl.h).
            // SAFETY: prctl with integer arguments only.
            if unsafe { libc::prctl(65, 1, 0, 0, 0) } != 0 {
                std::process::exit(77);
            }
            assert_eq!(profpoint::trace_count("*::refused"), 1);
            let info = profpoint::tracepoints()
                .into_iter()
                .find(|t| t.name.ends_with("::refused"))
                .unwrap();
            println!("enabled={} error={:?}", info.enabled, info.error);
            for i in 0..10 {
                trace_refused(i); // the program keeps running; the site stays off
            }
        }
        #[cfg(unix)]
        "child_busy" => {
            // 300 ms of this thread's CPU time, however long a loaded machine takes to give
            // it (samplers count CPU time, so their tests need CPU time, not wall time).
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while thread_cpu() < Duration::from_millis(300)
                && t.elapsed() < Duration::from_secs(120)
            {
                x = spin(x);
            }
            std::hint::black_box(x);
        }
        "child_writes_reports" => {
            // Writes the JSON report to PROFPOINT_TEST_PATH again and again (and once more at
            // exit, through PROFPOINT_REPORT); its command line makes the report large.
            let path = std::env::var_os("PROFPOINT_TEST_PATH").unwrap();
            let to = profpoint::Destination::Json(path.into());
            for _ in 0..40 {
                work_fast();
                profpoint::write_report(&profpoint::snapshot(), &to).unwrap();
            }
        }
        "child_closes_stdout" => {
            work();
            // SAFETY: nothing in this process uses fd 1 afterwards but the report.
            unsafe { libc::close(1) };
            std::process::exit(3);
        }
        #[cfg(unix)]
        "child_fills_stderr" => {
            profpoint::report_at_exit();
            work();
            // Fills stderr's pipe, which the parent does not read until this process ends
            // (a parent that collects its child's output at the end): the report at exit
            // then finds no room.
            // SAFETY: fcntl on fd 2, its flags put back below.
            let flags = unsafe { libc::fcntl(2, libc::F_GETFL) };
            // SAFETY: as above.
            unsafe { libc::fcntl(2, libc::F_SETFL, flags | libc::O_NONBLOCK) };
            let filler = [b'.'; 4096];
            // SAFETY: writes from a live buffer of its length to fd 2 until it is full.
            while unsafe { libc::write(2, filler.as_ptr().cast(), filler.len()) } > 0 {}
            // SAFETY: as above.
            unsafe { libc::fcntl(2, libc::F_SETFL, flags) };
        }
        "child_moves" => {
            work();
            std::env::set_current_dir(std::env::var_os("PROFPOINT_TEST_PATH").unwrap()).unwrap();
        }
        other => panic!("unknown child scenario {other:?}"),
    }
}

fn an_opted_in_program_prints_the_table_even_through_process_exit() {
    let o = run_child("child_opted_in_then_process_exit", &[]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("Profile Points"), "{e}");
    let row = e
        .lines()
        .find(|l| l.contains("exit_report::work"))
        .expect(&e);
    let f: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(f[0], "on");
    assert_eq!(f[4], "2", "nr column: {row}");
}

fn a_program_that_did_not_opt_in_stays_silent_unless_asked() {
    let o = run_child("child_silent", &[]);
    assert!(o.status.success());
    assert!(!stderr(&o).contains("Profile Points"));
    let o = run_child("child_silent", &[("PROFPOINT_REPORT", "stderr")]);
    assert!(stderr(&o).contains("exit_report::work"), "{}", stderr(&o));
}

fn report_off_silences_an_opted_in_program() {
    let o = run_child(
        "child_opted_in_then_process_exit",
        &[("PROFPOINT_REPORT", "off")],
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(!stderr(&o).contains("Profile Points"));
}

fn json_and_csv_reports_are_written_and_parse_back() {
    let dir = std::env::temp_dir().join(format!("profpoint-exit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let csv = dir.join("r.csv");
    let spec = format!("json:{},csv:{}", json.display(), csv.display());
    let o = run_child("child_silent", &[("PROFPOINT_REPORT", &spec)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "profpoint.report");
    assert_eq!(v["version"], 3);
    assert!(v["tree"]["nodes"].is_array(), "the points tree");
    let run = &v["run"];
    assert!(run["pid"].as_u64().unwrap() > 0);
    assert!(run["command"][0].as_str().unwrap().contains("exit_report"));
    for k in ["cpu_model", "kernel"] {
        assert!(!run[k].as_str().unwrap().is_empty(), "{k}");
    }
    assert!(run["start_unix_ns"].as_u64().unwrap() > 1_600_000_000_000_000_000);
    assert!(v["clock"]["ghz"].as_f64().unwrap() > 0.0);
    let p = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "exit_report::work")
        .expect("work point");
    assert_eq!(p["nr"], 1);
    assert_eq!(p["enabled"], true);
    let total = p["total_ns"].as_u64().unwrap();
    assert!((20_000_000..200_000_000).contains(&total), "{total}");
    for k in ["self_ns", "avg_ns", "min_ns", "max_ns", "p50_ns", "p99_ns"] {
        let x = p[k].as_u64().unwrap_or_else(|| panic!("{k} missing"));
        assert!(x >= 19_000_000 && x <= total, "{k} = {x}");
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row = lines
        .find(|l| l.starts_with("exit_report::work,"))
        .expect(&text);
    let cells: Vec<&str> = row.split(',').collect();
    assert_eq!(header.len(), cells.len());
    let col = |name: &str| cells[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("nr"), "1");
    assert_eq!(col("total_ns").parse::<u64>().unwrap(), total);
    // No sampler ran: the sampler's self time is empty (null in the JSON).
    assert_eq!(p["sampled_self"], serde_json::Value::Null);
    assert_eq!(col("sampled_self"), "");
    std::fs::remove_dir_all(&dir).ok();
}

/// The stack destinations: without sampled stacks, `folded` and `flame` write the points tree,
/// as `points-folded` and `points-flame` always do.
fn folded_and_flame_reports_are_written() {
    let dir = std::env::temp_dir().join(format!("profpoint-exit-flame-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |n: &str| dir.join(n).display().to_string();
    let spec = format!(
        "folded:{},flame:{},points-folded:{},points-flame:{}",
        path("a.folded"),
        path("a.svg"),
        path("p.folded"),
        path("p.svg")
    );
    let o = run_child("child_silent", &[("PROFPOINT_REPORT", &spec)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let folded = std::fs::read_to_string(path("a.folded")).unwrap();
    assert_eq!(folded, std::fs::read_to_string(path("p.folded")).unwrap());
    // `work` sleeps 20 ms: one outermost path, its self time in ns.
    let line = folded
        .lines()
        .find(|l| l.starts_with("exit_report::work "))
        .expect(&folded);
    let ns: u64 = line["exit_report::work ".len()..].parse().unwrap();
    assert!(ns >= 20_000_000, "{line}");
    for svg in ["a.svg", "p.svg"] {
        if cfg!(not(feature = "flame")) {
            // Built without flame graphs: each flame destination is one line naming the
            // feature, and the others are written.
            let e = stderr(&o);
            assert_eq!(
                e.matches("flame graphs need profpoint's `flame` feature")
                    .count(),
                2,
                "{e}"
            );
            assert!(!std::path::Path::new(&path(svg)).exists());
            continue;
        }
        let text = std::fs::read_to_string(path(svg)).unwrap();
        assert!(
            text.contains("<svg") && text.contains("exit_report::work ("),
            "{svg}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
/// A forked child that exits normally writes its own report, beside its parent's: `.PID`
/// appended to a file path, or `{pid}` in the path replaced in both.
fn a_forked_child_does_not_overwrite_the_parents_report() {
    let dir = std::env::temp_dir().join(format!("profpoint-fork-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("r.json");
    let templ = dir.join("t-{pid}.json");
    let spec = format!("json:{},json:{}", plain.display(), templ.display());
    let o = run_child("child_forks", &[("PROFPOINT_REPORT", &spec)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let child: u32 = out
        .lines()
        .find_map(|l| l.strip_prefix("child "))
        .expect(&out)
        .parse()
        .unwrap();
    let nr = |path: &std::path::Path| -> u64 {
        let v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}")),
        )
        .unwrap();
        let pid = v["run"]["pid"].as_u64().unwrap();
        let work = v["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "exit_report::work")
            .unwrap()["nr"]
            .as_u64()
            .unwrap();
        pid * 10 + work
    };
    // The parent called work() once; the child inherited that call and made one more.
    let parent_report = nr(&plain);
    assert_eq!(parent_report % 10, 1, "the parent's own report");
    assert_eq!(
        nr(&dir.join(format!("r.json.{child}"))),
        u64::from(child) * 10 + 2
    );
    assert_eq!(
        nr(&dir.join(format!("t-{child}.json"))),
        u64::from(child) * 10 + 2
    );
    let parent_pid = parent_report / 10;
    assert_eq!(nr(&dir.join(format!("t-{parent_pid}.json"))), parent_report);
    std::fs::remove_dir_all(&dir).ok();
}

/// The `profpoint:` lines of a child's stderr.
/// A report at exit to a stderr whose reader takes nothing (its pipe full, the parent waiting
/// for the child's end to read it) holds the exit for `diag::STALL` (10 s), not for ever;
/// the program's exit status stands.
#[cfg(unix)]
fn a_full_stderr_holds_the_exit_for_ten_seconds_not_for_ever() {
    use std::process::Stdio;
    let mut cmd = common::runner::target_command(std::env::current_exe().unwrap());
    cmd.env("PROFPOINT_TEST_CHILD", "child_fills_stderr")
        .env_remove("PROFPOINT_REPORT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let t = std::time::Instant::now();
    let mut child = cmd.spawn().unwrap();
    // The pipe is kept open and unread until the child has ended.
    let pipe = child.stderr.take().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = t.elapsed();
    drop(pipe);
    let status = status.unwrap_or_else(|| panic!("still running after {took:?}: the exit hung"));
    println!("a full stderr: the child ended in {took:?}");
    assert!(status.success(), "{status:?}");
    assert!(
        took >= Duration::from_secs(9),
        "the report did not wait: {took:?}"
    );
}

fn profpoint_lines(e: &str) -> Vec<&str> {
    e.lines().filter(|l| l.starts_with("profpoint")).collect()
}

fn subtracting_the_overhead_is_said_in_the_header() {
    let o = run_child(
        "child_silent",
        &[
            ("PROFPOINT_REPORT", "stderr"),
            ("PROFPOINT_SUBTRACT_OVERHEAD", "1"),
        ],
    );
    let e = stderr(&o);
    // A clock whose tick is longer than the in-interval cost (aarch64's 16-62 ns counter
    // ticks) measures that cost as 0: nothing is subtracted, and the header says so.
    assert!(
        e.contains("ns inside the timed interval, subtracted)")
            || e.contains("(0.0 ns inside the timed interval, not subtracted)"),
        "{e}"
    );
}

fn main() {
    if let Ok(scenario) = std::env::var("PROFPOINT_TEST_CHILD") {
        child(&scenario);
        return;
    }
    let args = libtest_mimic::Arguments::from_args();
    /// A test function as a trial of its own name.
    macro_rules! trial {
        ($f:ident) => {
            libtest_mimic::Trial::test(stringify!($f), || {
                $f();
                Ok(())
            })
        };
    }
    #[cfg_attr(not(unix), allow(unused_mut))] // every push below is Unix-only
    let mut tests = vec![
        trial!(reports_are_replaced_whole_while_being_read),
        trial!(relative_report_paths_name_the_starting_folder),
        trial!(a_bad_heatmap_variable_is_one_line_and_the_program_runs),
        trial!(a_rate_above_what_the_sampler_serves_is_one_line_and_clamped),
        trial!(the_main_attribute_opts_in),
        trial!(an_opted_in_program_prints_the_table_even_through_process_exit),
        trial!(a_program_that_did_not_opt_in_stays_silent_unless_asked),
        trial!(report_off_silences_an_opted_in_program),
        trial!(folded_and_flame_reports_are_written),
        trial!(json_and_csv_reports_are_written_and_parse_back),
        trial!(bad_environment_values_get_one_clear_line_and_the_default),
        trial!(environment_globs_set_the_status_at_start),
        trial!(globs_that_match_nothing_get_one_line_each),
        trial!(a_good_configuration_prints_nothing),
        trial!(a_missing_report_folder_is_said_at_start_and_the_table_kept),
        trial!(subtracting_the_overhead_is_said_in_the_header),
    ];
    #[cfg(not(feature = "heatmap"))]
    tests.push(trial!(a_sampler_asked_for_without_its_feature_is_one_line));
    #[cfg(all(feature = "heatmap", target_os = "linux"))]
    tests.push(trial!(hardware_metrics_or_a_clear_reason_why_not));
    #[cfg(all(feature = "heatmap", target_os = "linux"))]
    tests.push(trial!(software_clock_metrics_join_the_exit_report));
    #[cfg(all(feature = "heatmap", target_os = "linux"))]
    tests.push(trial!(heatmap_joins_the_exit_report));
    #[cfg(target_os = "linux")]
    tests.push(trial!(a_w_xor_x_policy_refuses_patching_with_a_clear_error));
    #[cfg(unix)]
    tests.push(trial!(
        an_unwritable_report_is_one_line_and_the_table_goes_to_stderr
    ));
    #[cfg(unix)]
    tests.push(trial!(a_forked_child_does_not_overwrite_the_parents_report));
    #[cfg(unix)]
    tests.push(trial!(
        a_full_stderr_holds_the_exit_for_ten_seconds_not_for_ever
    ));
    #[cfg(unix)]
    tests.push(trial!(non_utf8_environment_values_get_one_clear_line));
    libtest_mimic::run(&args, tests).exit();
}
