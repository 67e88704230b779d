//! A guest that never harms its host, seen from outside: report files written as a careful
//! daemon writes them (no file of anyone else overwritten through a link, no hang on a FIFO,
//! long names), and nothing profpoint prints able to fail the host (stderr full, a closed
//! pipe, a host whose panics abort). This test binary (its own `main`, via libtest-mimic)
//! re-runs itself as a child with `PROFPOINT_TEST_CHILD=<scenario>`.

mod common;

#[cfg(unix)]
mod unix {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::path::{Path, PathBuf};
    use std::process::{Output, Stdio};
    use std::time::{Duration, Instant};

    #[profpoint::profile_point]
    fn work() {
        std::hint::black_box((0..1_000u64).sum::<u64>());
    }

    /// The other user of these tests (nobody).
    const OTHER: u32 = 65534;

    /// The children: each opts in, calls `work`, and exits with status 3 (the attacker of
    /// the folder-swap race does none of it).
    pub(crate) fn child(scenario: &str) {
        if scenario == "swap_attacker" {
            swap_attacker();
        }
        profpoint::report_at_exit();
        work();
        match scenario {
            "exit3" => {}
            // An attacker who knows the process id plants links at the temporary names the
            // report would have used (`.NAME.PID.N.tmp`), to the victim's file.
            "plant_temp_links" => {
                let dest = PathBuf::from(std::env::var_os("PROFPOINT_TEST_PATH").unwrap());
                let victim = std::env::var_os("PROFPOINT_TEST_VICTIM").unwrap();
                let name = dest.file_name().unwrap().to_str().unwrap().to_string();
                for n in 0..8 {
                    let tmp =
                        dest.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()));
                    std::os::unix::fs::symlink(&victim, tmp).unwrap();
                }
            }
            // The destination becomes a FIFO after start-up.
            "fifo_after_start" => {
                let dest = std::env::var_os("PROFPOINT_TEST_PATH").unwrap();
                mkfifo(Path::new(&dest));
            }
            // Any panic aborts, as in a host built with `panic = "abort"`.
            // Its report goes to a stdout it closed: the exit says so on stderr.
            "panics_abort" => {
                std::panic::set_hook(Box::new(|_| std::process::abort()));
                // SAFETY: nothing in this process uses fd 1 afterwards but the report.
                unsafe { libc::close(1) };
            }
            // Writes its report `PROFPOINT_TEST_WRITES` times (as root), into a folder another
            // user keeps swapping for a link to a victim's folder: one line per write,
            // "ok" or why not.
            "write_many" => {
                let dest = PathBuf::from(std::env::var_os("PROFPOINT_TEST_PATH").unwrap());
                let n: u32 = std::env::var("PROFPOINT_TEST_WRITES")
                    .unwrap()
                    .parse()
                    .unwrap();
                let report =
                    <profpoint::Report as profpoint::CollectReport>::collect(&Default::default());
                let d = profpoint::Destination::Json(dest);
                let mut out = String::new();
                for _ in 0..n {
                    match profpoint::write_report(&report, &d) {
                        Ok(()) => out.push_str("ok\n"),
                        Err(e) => out.push_str(&format!("{e}\n")),
                    }
                }
                print!("{out}");
            }
            other => panic!("unknown child scenario {other:?}"),
        }
        std::process::exit(3);
    }

    /// The attacker (run as another user): its own folder `PROFPOINT_TEST_PATH` in a sticky
    /// world-writable folder, and beside it a link to the victim's folder
    /// `PROFPOINT_TEST_VICTIM`; the two swapped (`renameat2(RENAME_EXCHANGE)`, atomic) as fast
    /// as it can, until killed.
    fn swap_attacker() -> ! {
        let own = PathBuf::from(std::env::var_os("PROFPOINT_TEST_PATH").unwrap());
        let victim = std::env::var_os("PROFPOINT_TEST_VICTIM").unwrap();
        let link = own.with_extension("link");
        std::fs::create_dir(&own).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let a = std::ffi::CString::new(own.as_os_str().as_encoded_bytes()).unwrap();
        let b = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).unwrap();
        // Ready: the parent starts the writer now.
        println!("ready");
        #[cfg(target_os = "linux")]
        loop {
            // SAFETY: two NUL-terminated paths alive across the call.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        }
        // The test skips itself there: an atomic exchange is Linux's `renameat2`.
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (a, b);
            unreachable!("the folder-swap race runs on Linux only");
        }
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only reads it.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// A folder of its own for test `name`: sticky and world-writable (1777) when `shared`.
    fn folder(name: &str, shared: bool) -> PathBuf {
        let d = std::env::temp_dir().join(format!("profpoint-guest-{}-{name}", std::process::id()));
        std::fs::remove_dir_all(&d).ok();
        std::fs::create_dir_all(&d).unwrap();
        if shared {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        }
        d
    }

    /// Runs child `scenario` with `env`; `stderr` as given (piped when `None`). Killed and
    /// failed after 60 s: a hang fails the test instead of stalling the run.
    fn run(scenario: &str, env: &[(&str, &str)], stderr: Option<Stdio>) -> Output {
        let mut cmd = crate::common::runner::target_command(std::env::current_exe().unwrap());
        cmd.env("PROFPOINT_TEST_CHILD", scenario)
            .env("PROFPOINT_BUDGET", "off")
            .env_remove("PROFPOINT_REPORT")
            .stdout(Stdio::piped())
            .stderr(stderr.unwrap_or_else(Stdio::piped));
        for (k, v) in env {
            cmd.env(k, v);
        }
        // SAFETY: only signal(2) between fork and exec: SIGPIPE at its default, as a program
        // started from a shell has it before its `main`.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        let start = Instant::now();
        let out = std::thread::scope(|s| {
            let waiter = s.spawn(|| child.wait_with_output().unwrap());
            while !waiter.is_finished() {
                if start.elapsed() > Duration::from_secs(60) {
                    // SAFETY: kill of our own child, not yet waited for.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            waiter.join().unwrap()
        });
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{scenario}: did not finish in 60 s"
        );
        out
    }

    fn err(o: &Output) -> String {
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    fn lines(e: &str) -> Vec<&str> {
        e.lines().filter(|l| l.starts_with("profpoint:")).collect()
    }

    fn calls(path: &Path) -> u64 {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"].as_str().unwrap().ends_with("::work"))
            .unwrap()["nr"]
            .as_u64()
            .unwrap()
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// The victim: another user's read-only file.
    fn victim(d: &Path) -> PathBuf {
        let v = d.join("victim");
        std::fs::write(&v, "the victim's own text\n").unwrap();
        std::fs::set_permissions(&v, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::os::unix::fs::chown(&v, Some(OTHER), Some(OTHER)).unwrap();
        v
    }

    fn untouched(v: &Path) {
        assert_eq!(
            std::fs::read_to_string(v).unwrap(),
            "the victim's own text\n"
        );
    }

    /// In a sticky world-writable folder, another user's symbolic link at the destination (to
    /// a third file) and another user's file at the destination are refused: one line at
    /// start-up, the table on stderr, the files untouched, the program's exit status.
    pub(crate) fn another_users_link_or_file_in_a_shared_folder_is_refused() {
        if !is_root() {
            println!(
                "SKIPPED another_users_link_or_file_in_a_shared_folder_is_refused: making files of another user needs root"
            );
            return;
        }
        let d = folder("shared", true);
        let v = victim(&d);
        let link = d.join("link.json");
        std::os::unix::fs::symlink(&v, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(OTHER), Some(OTHER)).unwrap();
        let theirs = d.join("theirs.json");
        std::fs::write(&theirs, "their report\n").unwrap();
        std::os::unix::fs::chown(&theirs, Some(OTHER), Some(OTHER)).unwrap();
        // A report to `dest`, refused for what `refused` (another user's) is: one line, the
        // table on stderr, the program's exit status.
        let refused_for = |dest: &Path, refused: &Path, what: &str| {
            let spec = format!("json:{}", dest.display());
            let o = run("exit3", &[("PROFPOINT_REPORT", &spec)], None);
            let e = err(&o);
            assert_eq!(o.status.code(), Some(3), "{e}");
            assert_eq!(
                lines(&e),
                [format!(
                    "profpoint: PROFPOINT_REPORT={spec}: {} is {what} of another user (uid {OTHER}) in the sticky world-writable folder {}: refused; the points table goes to stderr at exit instead",
                    refused.display(),
                    d.display()
                )],
                "{e}"
            );
            assert!(e.contains("guest::unix::work"), "{e}");
        };
        for (dest, what) in [(&link, "a symbolic link"), (&theirs, "a file")] {
            refused_for(dest, dest, what);
        }
        untouched(&v);
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "their report\n");
        // Another user's link to a folder (the victim's), on the way to the destination.
        let victims = folder("victims_folder", false);
        let linked = d.join("reports");
        std::os::unix::fs::symlink(&victims, &linked).unwrap();
        std::os::unix::fs::lchown(&linked, Some(OTHER), Some(OTHER)).unwrap();
        refused_for(&linked.join("r.json"), &linked, "a symbolic link");
        assert_eq!(
            std::fs::read_dir(&victims).unwrap().count(),
            0,
            "nothing written"
        );
        std::fs::remove_dir_all(&victims).ok();
        std::fs::remove_dir_all(&d).ok();
    }

    /// How many reports the folder-swap race writes (RELIABILITY.md).
    const SWAP_WRITES: u32 = 1_000;

    /// Another user keeps swapping its own folder in a sticky world-writable folder for a
    /// link to a victim's folder while a root process writes its report into it
    /// `SWAP_WRITES` times: every write lands in the attacker's own folder or is refused
    /// with one line, none in the victim's folder, and no temporary file is left anywhere.
    pub(crate) fn a_folder_swapped_for_a_link_never_sends_the_report_elsewhere() {
        if !cfg!(target_os = "linux") {
            println!(
                "SKIPPED a_folder_swapped_for_a_link_never_sends_the_report_elsewhere: the attacker's atomic swap is Linux's renameat2(RENAME_EXCHANGE)"
            );
            return;
        }
        if !is_root() {
            println!(
                "SKIPPED a_folder_swapped_for_a_link_never_sends_the_report_elsewhere: running as another user needs root"
            );
            return;
        }
        let d = folder("swap", true);
        let victims = folder("swap_victims", false);
        let v = victims.join("r.json");
        std::fs::write(&v, "the victim's own text\n").unwrap();
        let own = d.join("reports");
        let mut attacker = crate::common::runner::target_command(std::env::current_exe().unwrap());
        attacker
            .env("PROFPOINT_TEST_CHILD", "swap_attacker")
            .env("PROFPOINT_TEST_PATH", &own)
            .env("PROFPOINT_TEST_VICTIM", &victims)
            .env_remove("PROFPOINT_REPORT")
            .uid(OTHER)
            .gid(OTHER)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut attacker = attacker.spawn().unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(attacker.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        assert_eq!(ready, "ready\n", "the attacker did not start");
        let writes = SWAP_WRITES.to_string();
        let o = run(
            "write_many",
            &[
                ("PROFPOINT_TEST_PATH", own.join("r.json").to_str().unwrap()),
                ("PROFPOINT_TEST_WRITES", &writes),
            ],
            None,
        );
        attacker.kill().unwrap();
        attacker.wait().unwrap();
        assert_eq!(o.status.code(), Some(3), "{}", err(&o));
        let names = |f: &Path| -> Vec<String> {
            let mut n: Vec<String> = std::fs::read_dir(f)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(&victims), ["r.json"], "the victim's folder");
        assert!(
            std::fs::read_to_string(&v).unwrap() == "the victim's own text\n",
            "the victim's file was replaced by the report"
        );
        let results = String::from_utf8(o.stdout).unwrap();
        let ok = results.lines().filter(|l| *l == "ok").count();
        let refused_line = format!(
            "{} is a symbolic link of another user (uid {OTHER}) in the sticky world-writable folder {}: refused",
            own.display(),
            d.display()
        );
        let refused = results.lines().filter(|l| *l == refused_line).count();
        assert_eq!(
            ok + refused,
            SWAP_WRITES as usize,
            "every write is written or refused: {results}"
        );
        println!("folder swap: {ok} written in the attacker's folder, {refused} refused");
        // The attacker's own folder, wherever the last swap left it.
        let theirs = if std::fs::symlink_metadata(&own).unwrap().is_dir() {
            own.clone()
        } else {
            own.with_extension("link")
        };
        let left = names(&theirs);
        assert!(
            left.is_empty() || left == ["r.json"],
            "no temporary file left: {left:?}"
        );
        std::fs::remove_dir_all(&victims).ok();
        std::fs::remove_dir_all(&d).ok();
    }

    /// Links planted at the temporary names a report used to take (`.NAME.PID.N.tmp`, to
    /// another user's file): the report is written at its destination, the victim untouched,
    /// the links left as they were.
    pub(crate) fn links_at_guessed_temporary_names_are_not_followed() {
        let d = folder("tmpnames", true);
        let v = d.join("victim");
        std::fs::write(&v, "the victim's own text\n").unwrap();
        let dest = d.join("r.json");
        let spec = format!("json:{}", dest.display());
        let o = run(
            "plant_temp_links",
            &[
                ("PROFPOINT_REPORT", &spec),
                ("PROFPOINT_TEST_PATH", dest.to_str().unwrap()),
                ("PROFPOINT_TEST_VICTIM", v.to_str().unwrap()),
            ],
            None,
        );
        let e = err(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert!(lines(&e).is_empty(), "{e}");
        assert_eq!(calls(&dest), 1);
        untouched(&v);
        let links = std::fs::read_dir(&d)
            .unwrap()
            .filter(|f| f.as_ref().unwrap().file_type().unwrap().is_symlink())
            .count();
        assert_eq!(links, 8);
        std::fs::remove_dir_all(&d).ok();
    }

    /// A FIFO at the destination: refused at start-up with one line; one made after start-up:
    /// refused at exit with one line. Either way the program ends at once (it waited forever
    /// before), the table on stderr, its exit status kept.
    pub(crate) fn a_fifo_destination_never_holds_the_exit() {
        let d = folder("fifo", false);
        let early = d.join("early.json");
        mkfifo(&early);
        let spec = format!("json:{}", early.display());
        let o = run("exit3", &[("PROFPOINT_REPORT", &spec)], None);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert_eq!(
            lines(&e),
            [format!(
                "profpoint: PROFPOINT_REPORT={spec}: {} is a FIFO, not a regular file: refused; the points table goes to stderr at exit instead",
                early.display()
            )],
            "{e}"
        );
        assert!(e.contains("guest::unix::work"), "{e}");
        let late = d.join("late.json");
        let spec = format!("json:{}", late.display());
        let o = run(
            "fifo_after_start",
            &[
                ("PROFPOINT_REPORT", &spec),
                ("PROFPOINT_TEST_PATH", late.to_str().unwrap()),
            ],
            None,
        );
        let e = err(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert_eq!(
            lines(&e),
            [format!(
                "profpoint: could not write the report to {spec}: {} is a FIFO, not a regular file: refused; the points table goes to stderr instead",
                late.display()
            )],
            "{e}"
        );
        assert!(e.contains("guest::unix::work"), "{e}");
        std::fs::remove_dir_all(&d).ok();
    }

    /// A destination name of 250 characters (legal: 255 is the limit) is written; its
    /// temporary name stays within the limit.
    pub(crate) fn a_250_character_file_name_is_written() {
        let d = folder("long", false);
        let dest = d.join(format!("{}.json", "r".repeat(245)));
        let spec = format!("json:{}", dest.display());
        let o = run("exit3", &[("PROFPOINT_REPORT", &spec)], None);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert!(lines(&e).is_empty(), "{e}");
        assert_eq!(calls(&dest), 1);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).ok();
    }

    /// A destination of mode 0600 replaced by the report is still 0600 (the temporary file
    /// takes the old file's mode before anything is written in it).
    pub(crate) fn a_0600_destination_keeps_its_mode() {
        let d = folder("mode", false);
        let dest = d.join("r.json");
        std::fs::write(&dest, "old\n").unwrap();
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o600)).unwrap();
        let spec = format!("json:{}", dest.display());
        let o = run("exit3", &[("PROFPOINT_REPORT", &spec)], None);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert!(lines(&e).is_empty(), "{e}");
        assert_eq!(calls(&dest), 1);
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600, "mode {mode:o}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).ok();
    }

    /// A folder on the way that its user may search but not read (0711, as a home folder):
    /// another user's program writes its report in the writable folder inside it (each step
    /// of the walk needs the right to search, as a path lookup does).
    pub(crate) fn a_search_only_folder_on_the_way_is_walked() {
        if !is_root() {
            println!(
                "SKIPPED a_search_only_folder_on_the_way_is_walked: running as another user needs root"
            );
            return;
        }
        let d = folder("search_only", false);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o711)).unwrap();
        let out = d.join("out");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::chown(&out, Some(OTHER), Some(OTHER)).unwrap();
        let dest = out.join("r.json");
        let mut cmd = crate::common::runner::target_command(std::env::current_exe().unwrap());
        cmd.env("PROFPOINT_TEST_CHILD", "exit3")
            .env("PROFPOINT_BUDGET", "off")
            .env("PROFPOINT_REPORT", format!("json:{}", dest.display()))
            .current_dir("/")
            .uid(OTHER)
            .gid(OTHER);
        let o = cmd.output().unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(3), "{e}");
        assert!(lines(&e).is_empty(), "{e}");
        assert_eq!(calls(&dest), 1);
        std::fs::remove_dir_all(&d).ok();
    }

    /// A start-up warning (a glob matching nothing) printed on stderr `/dev/full`: start-up
    /// finishes (the JSON report is written), the exit status is the program's own.
    pub(crate) fn a_full_stderr_fails_nothing() {
        let d = folder("stderr", false);
        let dest = d.join("r.json");
        let spec = format!("json:{}", dest.display());
        let env = [
            ("PROFPOINT_REPORT", spec.as_str()),
            ("PROFPOINT_DISABLE", "no_such_point*"),
        ];
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = run("exit3", &env, Some(full.into()));
        assert_eq!(o.status.code(), Some(3), "/dev/full: {:?}", o.status);
        assert_eq!(calls(&dest), 1, "/dev/full");
        std::fs::remove_dir_all(&d).ok();
    }

    /// A start-up warning printed on a pipe whose reader has gone, SIGPIPE at its default (as
    /// before `main`): the exit status is the program's own (as without the variables), not
    /// SIGPIPE's; the report is written.
    pub(crate) fn a_closed_pipe_as_stderr_kills_nothing() {
        let d = folder("pipe", false);
        let dest = d.join("r.json");
        let spec = format!("json:{}", dest.display());
        let env = [
            ("PROFPOINT_REPORT", spec.as_str()),
            ("PROFPOINT_DISABLE", "no_such_point*"),
        ];
        for vars in [&env[..], &[]] {
            let mut fds = [0; 2];
            // SAFETY: a valid array of two descriptors for pipe to fill.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            // SAFETY: fds[1] is ours, owned from here by the OwnedFd; the read end is closed
            // once, now: the child's stderr is a pipe without a reader.
            let write_end = unsafe {
                libc::close(fds[0]);
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[1])
            };
            let o = run("exit3", vars, Some(write_end.into()));
            assert_eq!(
                (o.status.code(), o.status.signal()),
                (Some(3), None),
                "closed pipe, {} variables",
                vars.len()
            );
        }
        assert_eq!(calls(&dest), 1, "closed pipe");
        std::fs::remove_dir_all(&d).ok();
    }

    /// A host whose panics abort (as with `panic = "abort"`: a panic hook that aborts stands
    /// in for it), stderr `/dev/full`, a report that cannot be written (to a stdout the
    /// program closed: its line and the table go to the failing stderr): the program ends with
    /// its own status, no SIGABRT.
    pub(crate) fn a_host_whose_panics_abort_survives_a_failing_stderr() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = run(
            "panics_abort",
            &[("PROFPOINT_REPORT", "stdout")],
            Some(full.into()),
        );
        assert_eq!(
            (o.status.code(), o.status.signal()),
            (Some(3), None),
            "{:?}",
            o.status
        );
    }
}

fn main() {
    if let Ok(scenario) = std::env::var("PROFPOINT_TEST_CHILD") {
        #[cfg(unix)]
        unix::child(&scenario);
        let _ = scenario;
        return;
    }
    let args = libtest_mimic::Arguments::from_args();
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut tests: Vec<libtest_mimic::Trial> = Vec::new();
    #[cfg(unix)]
    {
        let t = |name: &'static str, f: fn()| {
            libtest_mimic::Trial::test(name, move || {
                f();
                Ok(())
            })
        };
        tests.extend([
            t(
                "another_users_link_or_file_in_a_shared_folder_is_refused",
                unix::another_users_link_or_file_in_a_shared_folder_is_refused,
            ),
            t(
                "a_folder_swapped_for_a_link_never_sends_the_report_elsewhere",
                unix::a_folder_swapped_for_a_link_never_sends_the_report_elsewhere,
            ),
            t(
                "links_at_guessed_temporary_names_are_not_followed",
                unix::links_at_guessed_temporary_names_are_not_followed,
            ),
            t(
                "a_fifo_destination_never_holds_the_exit",
                unix::a_fifo_destination_never_holds_the_exit,
            ),
            t(
                "a_250_character_file_name_is_written",
                unix::a_250_character_file_name_is_written,
            ),
            t(
                "a_0600_destination_keeps_its_mode",
                unix::a_0600_destination_keeps_its_mode,
            ),
            t(
                "a_search_only_folder_on_the_way_is_walked",
                unix::a_search_only_folder_on_the_way_is_walked,
            ),
            t(
                "a_full_stderr_fails_nothing",
                unix::a_full_stderr_fails_nothing,
            ),
            t(
                "a_closed_pipe_as_stderr_kills_nothing",
                unix::a_closed_pipe_as_stderr_kills_nothing,
            ),
            t(
                "a_host_whose_panics_abort_survives_a_failing_stderr",
                unix::a_host_whose_panics_abort_survives_a_failing_stderr,
            ),
        ]);
    }
    libtest_mimic::run(&args, tests).exit();
}
