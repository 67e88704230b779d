//! Where the exit report goes when the destination is difficult: a folder that does not exist
//! or cannot be written (said at start-up, the table kept on stderr), a relative path after the
//! program moved, a file read while other processes replace it.

use super::*;

/// A report folder that does not exist is said at start-up, for the path the exit report
/// uses (relative to the starting folder, `{pid}` replaced), and at exit the table still
/// reaches stderr, with the program's exit status.
pub(super) fn a_missing_report_folder_is_said_at_start_and_the_table_kept() {
    let dir = std::env::temp_dir().join(format!("profpoint-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = common::runner::target_command(std::env::current_exe().unwrap())
        .current_dir(&dir)
        .env("PROFPOINT_TEST_CHILD", "child_opted_in_then_process_exit")
        .env("PROFPOINT_REPORT", "json:out-{pid}/r.json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    let folder = dir.join(format!("out-{pid}"));
    assert_eq!(
        profpoint_lines(&e),
        [
            format!(
                "profpoint: PROFPOINT_REPORT=json:out-{{pid}}/r.json: folder {} does not exist; \
                 the points table will go to stderr at exit instead, unless that changes by then",
                folder.display()
            ),
            format!(
                "profpoint: could not write the report to json:{}: No such file or directory; \
                 the points table goes to stderr instead",
                folder.join("r.json").display()
            ),
        ],
        "{e}"
    );
    // The start-up line comes before the run's report, and the report is all there.
    let said = e.find("folder ").unwrap();
    let table = e.find("Profile Points").expect(&e);
    assert!(said < table, "{e}");
    let row = e
        .lines()
        .find(|l| l.contains("exit_report::work "))
        .expect(&e);
    assert_eq!(row.split_whitespace().nth(4), Some("2"), "{row}");
    // Nothing was made at start-up.
    assert!(!folder.exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// Two processes write the same JSON report many times (a temporary file renamed over it)
/// while this one reads it as fast as it can: every read is a whole report, never a prefix.
pub(super) fn reports_are_replaced_whole_while_being_read() {
    let dir = std::env::temp_dir().join(format!("profpoint-atomic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    // About 1 MB of command line, so that a report is far more than one write.
    let big: Vec<String> = (0..8)
        .map(|i| format!("{i}{}", "x".repeat(120_000)))
        .collect();
    let spawn = || {
        common::runner::target_command(std::env::current_exe().unwrap())
            .args(&big)
            .env("PROFPOINT_TEST_CHILD", "child_writes_reports")
            .env("PROFPOINT_TEST_PATH", &path)
            .env("PROFPOINT_REPORT", format!("json:{}", path.display()))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let whole = |bytes: &[u8]| -> Result<u32, String> {
        let v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("invalid JSON ({} bytes): {e}", bytes.len()))?;
        let cmd = v["run"]["command"].as_array().ok_or("no command")?;
        if cmd.len() != 9 || cmd[8].as_str().map(str::len) != Some(120_001) {
            return Err("the command line is not whole".into());
        }
        Ok(v["run"]["pid"].as_u64().ok_or("no pid")? as u32)
    };
    let mut children = [Some(spawn()), Some(spawn())];
    let mut reads = 0u64;
    while children.iter().any(Option::is_some) {
        match std::fs::read(&path) {
            Ok(bytes) => {
                reads += 1;
                if let Err(e) = whole(&bytes) {
                    panic!("read {reads} saw a partial report: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{e}"),
        }
        for slot in &mut children {
            if let Some(c) = slot
                && let Some(status) = c.try_wait().unwrap()
            {
                let mut err = String::new();
                use std::io::Read;
                c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                assert!(status.success(), "{err}");
                assert!(err.is_empty(), "{err}");
                // Its exit report is complete the moment it is gone (or the other's replaced it).
                whole(&std::fs::read(&path).unwrap()).unwrap();
                *slot = None;
            }
        }
    }
    // No temporary file left behind.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("r.json")],
        "after {reads} reads"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A relative report path names a file in the folder the program started in, even when the
/// program has moved elsewhere by exit.
pub(super) fn relative_report_paths_name_the_starting_folder() {
    let dir = std::env::temp_dir().join(format!("profpoint-relative-{}", std::process::id()));
    let (start, moved) = (dir.join("start"), dir.join("moved"));
    std::fs::create_dir_all(&start).unwrap();
    std::fs::create_dir_all(&moved).unwrap();
    let o = common::runner::target_command(std::env::current_exe().unwrap())
        .current_dir(&start)
        .env("PROFPOINT_TEST_CHILD", "child_moves")
        .env("PROFPOINT_TEST_PATH", &moved)
        .env("PROFPOINT_REPORT", "json:out/r.json,csv:r.csv")
        .output()
        .unwrap();
    // `out/` does not exist in the starting folder: the error names the absolute path.
    assert!(o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains(&format!("json:{}", start.join("out/r.json").display())),
        "{e}"
    );
    assert!(start.join("r.csv").is_file(), "{e}");
    assert!(!moved.join("r.csv").exists(), "{e}");
    // Created there (and in the other folder too), it is used.
    std::fs::create_dir_all(start.join("out")).unwrap();
    std::fs::create_dir_all(moved.join("out")).unwrap();
    let o = common::runner::target_command(std::env::current_exe().unwrap())
        .current_dir(&start)
        .env("PROFPOINT_TEST_CHILD", "child_moves")
        .env("PROFPOINT_TEST_PATH", &moved)
        .env("PROFPOINT_REPORT", "json:out/r.json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(start.join("out/r.json")).unwrap()).unwrap();
    assert_eq!(v["schema"], "profpoint.report");
    assert!(!moved.join("out/r.json").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(unix)]
/// A report that cannot be written: one line on stderr naming the destination and the reason
/// in words, the points table on stderr instead, and the program's own exit status.
pub(super) fn an_unwritable_report_is_one_line_and_the_table_goes_to_stderr() {
    use std::os::unix::process::CommandExt;
    let dir = std::env::temp_dir().join(format!("profpoint-unwritable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let locked = dir.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    // root writes into a 0555 folder: /sys refuses everyone.
    let unwritable = if std::fs::write(locked.join("probe"), "").is_ok() {
        std::path::PathBuf::from("/sys/r.json")
    } else {
        locked.join("r.json")
    };
    // As root, `access` calls the 0555 folder writable (and /sys too): only the write fails.
    let unwritable_at_start = (unwritable != std::path::Path::new("/sys/r.json")).then(|| {
        format!(
            "folder {} is not writable (Permission denied)",
            unwritable.parent().unwrap().display()
        )
    });
    let too_large = dir.join("big.json");
    let cases: Vec<(String, String, &str, Option<i32>)> = vec![
        (
            "stdout".into(),
            "stdout".into(),
            "standard output was closed when the program started",
            Some(1),
        ),
        ("stdout".into(), "stdout".into(), "it is closed", Some(2)),
        (
            "json:/dev/full".into(),
            "json:/dev/full".into(),
            "No space left on device",
            None,
        ),
        (
            format!("json:{}", dir.join("missing/r.json").display()),
            format!("json:{}", dir.join("missing/r.json").display()),
            "No such file or directory",
            None,
        ),
        (
            format!("csv:{}", unwritable.display()),
            format!("csv:{}", unwritable.display()),
            "Permission denied",
            None,
        ),
        (
            format!("json:{}", too_large.display()),
            format!("json:{}", too_large.display()),
            "File too large",
            Some(-1),
        ),
    ];
    for (spec, shown, why, special) in cases {
        let mut cmd = common::runner::target_command(std::env::current_exe().unwrap());
        let scenario = match special {
            Some(2) => "child_closes_stdout",
            _ => "child_opted_in_then_process_exit",
        };
        cmd.env("PROFPOINT_TEST_CHILD", scenario)
            .env("PROFPOINT_REPORT", &spec);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                match special {
                    Some(1) => {
                        libc::close(1);
                    }
                    Some(-1) => {
                        // Files stop at 1000 bytes: the write fails part-way (EFBIG).
                        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                        let lim = libc::rlimit {
                            rlim_cur: 1000,
                            rlim_max: 1000,
                        };
                        libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                    }
                    _ => {}
                }
                Ok(())
            });
        }
        let o = cmd.output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{spec}: {e}");
        let lines: Vec<&str> = e.lines().filter(|l| l.starts_with("profpoint:")).collect();
        // A missing or unwritable folder is said at start-up too, before the run.
        let at_start = match why {
            "No such file or directory" => Some(format!(
                "folder {} does not exist",
                dir.join("missing").display()
            )),
            "Permission denied" => unwritable_at_start.clone(),
            _ => None,
        };
        let mut expected: Vec<String> = at_start
            .map(|w| {
                format!(
                    "profpoint: PROFPOINT_REPORT={spec}: {w}; the points table will go to stderr at exit instead, unless that changes by then"
                )
            })
            .into_iter()
            .collect();
        expected.push(format!(
            "profpoint: could not write the report to {shown}: {why}; the points table goes to stderr instead"
        ));
        assert_eq!(lines, expected, "{spec}");
        assert!(e.contains("exit_report::work"), "{spec}: {e}");
    }
    // The failed write left nothing behind: no report, no temporary file.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("locked")]);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
