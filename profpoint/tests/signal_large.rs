//! A signal while a large report is written: a program of 20,000 points, each called, gets
//! SIGTERM with its report going to a JSON file and a table file. Both are written whole
//! within the signal's deadline, the process ends by the signal, and no temporary file is left
//! (the table used to be missing after "did not finish in 10 s", an 11-12 MB temporary JSON
//! file left behind).
//!
//! The program runs in a child: this test binary again, its tests filtered to none, with
//! `PROFPOINT_TEST_CHILD` set.

mod common;

/// Ten digits of a point's number, as modules `d0`..`d9` around the next level.
macro_rules! digits {
    ($next:ident; $($p:literal)*) => {
        mod d0 { $next!($($p)* "0"); }
        mod d1 { $next!($($p)* "1"); }
        mod d2 { $next!($($p)* "2"); }
        mod d3 { $next!($($p)* "3"); }
        mod d4 { $next!($($p)* "4"); }
        mod d5 { $next!($($p)* "5"); }
        mod d6 { $next!($($p)* "6"); }
        mod d7 { $next!($($p)* "7"); }
        mod d8 { $next!($($p)* "8"); }
        mod d9 { $next!($($p)* "9"); }
    };
}

/// Point `big::a::pNNNN` (and `big::b::pNNNN`): names as long as a real program's.
macro_rules! point {
    ($($p:literal)*) => {
        profpoint::define_profile_point!(A, concat!("big::module_a::handler_", $($p),*));
        profpoint::define_profile_point!(B, concat!("big::module_b::handler_", $($p),*));
    };
}
macro_rules! hundreds {
    ($($p:literal)*) => { digits!(point; $($p)*); };
}
macro_rules! tens {
    ($($p:literal)*) => { digits!(hundreds; $($p)*); };
}
macro_rules! thousands {
    ($($p:literal)*) => { digits!(tens; $($p)*); };
}

/// The 20,000 points.
#[allow(dead_code)]
mod points {
    digits!(thousands;);
}

/// How many points the program has.
#[cfg(unix)]
const POINTS: usize = 20_000;

/// The child: every point called 3 times, then "ready", then it waits to be signalled.
fn child() -> ! {
    for p in profpoint::points() {
        for _ in 0..3 {
            let t = p.start();
            p.leave(t);
        }
    }
    println!("ready");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

#[cfg(unix)]
fn a_signal_during_a_large_report_writes_whole_files_only() {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(profpoint::points().count(), POINTS);
    let dir = std::env::temp_dir().join(format!("profpoint-signal-large-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let (json, table) = (dir.join("r.json"), dir.join("r.txt"));
    let mut cmd = common::runner::target_command(std::env::current_exe().unwrap());
    cmd.args(["--exact", "no test has this name"])
        .env("PROFPOINT_TEST_CHILD", "1")
        .env(
            "PROFPOINT_REPORT",
            format!("json:{},table:{}", json.display(), table.display()),
        )
        .env("PROFPOINT_BUDGET", "off")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut c = cmd.spawn().unwrap();
    let mut out = std::io::BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let t = std::time::Instant::now();
    // SAFETY: kill of our own child, not yet waited for.
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
    let o = c.wait_with_output().unwrap();
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    println!("report of {POINTS} points on SIGTERM: {took:?}");
    assert_eq!(
        o.status.signal(),
        Some(libc::SIGTERM),
        "{:?}\n{err}",
        o.status
    );
    assert!(!err.contains("ending now"), "{err}");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["r.json", "r.txt"],
        "whole files only, no temporary file"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), POINTS);
    assert!(points.iter().all(|p| p["nr"] == 3), "every point's 3 calls");
    let text = std::fs::read_to_string(&table).unwrap();
    let rows = text.lines().filter(|l| l.contains("big::module_")).count();
    assert_eq!(rows, POINTS, "every point has its row in the table");
    std::fs::remove_dir_all(&dir).ok();
}

fn main() {
    if std::env::var_os("PROFPOINT_TEST_CHILD").is_some() {
        child();
    }
    let args = libtest_mimic::Arguments::from_args();
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut tests: Vec<libtest_mimic::Trial> = Vec::new();
    #[cfg(unix)]
    tests.push(libtest_mimic::Trial::test(
        "a_signal_during_a_large_report_writes_whole_files_only",
        || {
            a_signal_during_a_large_report_writes_whole_files_only();
            Ok(())
        },
    ));
    libtest_mimic::run(&args, tests).exit();
}
