//! The signal tests themselves (Unix); `tests/signals.rs` runs them.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[profpoint::profile_point]
#[inline(never)]
fn step(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).wrapping_add(7))
}

/// Allocations made by each thread (a const-initialised thread-local: reading it allocates
/// nothing, so it can count inside a signal handler's caller).
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        pub(crate) static ALLOCS: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) struct Counting;

    // SAFETY: forwards to the system allocator unchanged; only counts.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(p, l) }
        }
    }

    pub(crate) fn now() -> u64 {
        ALLOCS.try_with(|c| c.get()).unwrap_or(0)
    }
}

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// A fresh path in this run's folder (a leftover of an earlier run with the same pid is
/// removed).
fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("profpoint-signals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::remove_file(&path).ok();
    path
}

const SIGNALS: [(libc::c_int, &str); 3] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
];

/// Starts child `scenario` with `PROFPOINT_REPORT=report` (and `env`), stdout and stderr piped,
/// the three signals at their default (a test run in the background or under `nohup` would
/// pass on ignored ones), without the overhead budget (exact counts). `ignore_hup` starts it
/// with SIGHUP ignored, as `nohup` does. A watchdog kills it after 120 s, so a hang fails the
/// test instead of stalling the run.
fn spawn(scenario: &str, report: &str, env: &[(&str, &str)], ignore_hup: bool) -> Child {
    let mut cmd = crate::common::runner::target_command(std::env::current_exe().unwrap());
    cmd.env("PROFPOINT_TEST_CHILD", scenario)
        .env("PROFPOINT_REPORT", report)
        .env("PROFPOINT_BUDGET", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: between fork and exec only async-signal-safe calls: signal(2). Dispositions
    // set to SIG_IGN survive exec; SIG_DFL is what a fresh terminal gives.
    unsafe {
        cmd.pre_exec(move || {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            if ignore_hup {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        // SAFETY: kill(2); if the child was reaped and its pid reused within 120 s this could
        // hit another process of ours: the test binary's own children only live that long.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    child
}

/// Reads the child's stdout until a line starting with `want`, and returns it (fails after
/// 60 s or at end of output).
fn wait_line(out: &mut impl BufRead, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "no {want:?} line");
        if line.starts_with(want) {
            return line;
        }
        assert!(Instant::now() < deadline, "no {want:?} line in 60 s");
    }
}

fn kill(child: &Child, s: libc::c_int) {
    // SAFETY: kill(2) with the child's pid (still ours: not yet waited for).
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, s) }, 0);
}

fn finish(mut child: Child) -> (std::process::ExitStatus, String, String) {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    (child.wait().unwrap(), out, err)
}

fn json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn calls_of(v: &serde_json::Value, name: &str) -> u64 {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no point {name}"))["nr"]
        .as_u64()
        .unwrap()
}

/// The children.
fn child(scenario: &str) {
    match scenario {
        // Calls `step` until a signal ends it; two more threads allocate all the while.
        "loop" => {
            for _ in 0..2 {
                std::thread::spawn(|| {
                    loop {
                        std::hint::black_box(vec![0u8; 64]);
                    }
                });
            }
            let mut x = 0;
            for i in 0..u64::MAX {
                x = step(x);
                if i == 10_000 {
                    println!("ready");
                    if std::env::var_os("PROFPOINT_TEST_FILL_STDOUT").is_some() {
                        fill_pipe(1);
                        eprintln!("stdout filled");
                    }
                }
            }
        }
        // Its own SIGTERM handler (installed in main, after profpoint's initialiser): it
        // stands, and the program ends as it chooses: return from main, report at exit.
        "own_handler" => {
            static STOP: AtomicBool = AtomicBool::new(false);
            extern "C" fn on_term(_: libc::c_int) {
                STOP.store(true, Ordering::Relaxed);
            }
            // SAFETY: installs an async-signal-safe handler (one atomic store).
            unsafe {
                libc::signal(
                    libc::SIGTERM,
                    on_term as extern "C" fn(libc::c_int) as libc::sighandler_t,
                )
            };
            let mut x = 0;
            let mut n = 0u64;
            while !STOP.load(Ordering::Relaxed) {
                x = step(x);
                n += 1;
                if n == 10_000 {
                    println!("ready");
                }
            }
            println!("own handler ran after {n} calls");
            std::process::exit(3);
        }
        // The handler allocates nothing: a signal raised on this thread runs it before
        // `raise` returns; the allocations counted around it.
        "no_alloc" => {
            let _ = step(1);
            // The report (to /dev/stderr) waits until the test drains stderr, after it read
            // the count: the report cannot end the child first.
            fill_pipe(2);
            let before = counting::now();
            // SAFETY: raise on the calling thread.
            unsafe { libc::raise(libc::SIGTERM) };
            let after = counting::now();
            println!("allocations in the handler: {}", after - before);
            // The signals thread writes the report and ends the process.
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        // Exits normally; its exit report (to /dev/stdout) waits until the test drains stdout.
        "exit_into_full_stdout" => {
            let mut x = 0;
            for _ in 0..1_000 {
                x = step(x);
            }
            println!("exiting");
            fill_pipe(1);
            std::process::exit(0);
        }
        // A forked child of a process with the handlers: no signals thread there, so a
        // signal ends it at once (it must not hang).
        "forked" => {
            let _ = step(1);
            // SAFETY: fork; the child only sleeps in a loop (no lock, no allocation).
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                loop {
                    // SAFETY: pause(2) waits for a signal.
                    unsafe { libc::pause() };
                }
            }
            std::thread::sleep(Duration::from_millis(50));
            let start = Instant::now();
            // SAFETY: kill and waitpid on our own child.
            let status = unsafe {
                libc::kill(pid, libc::SIGTERM);
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
                status
            };
            println!(
                "forked child: signalled={} signal={} in {:?}",
                libc::WIFSIGNALED(status),
                libc::WTERMSIG(status),
                start.elapsed()
            );
        }
        // A handler installed over profpoint's that calls the one it replaced (as
        // signal-hook-registry does for tokio's ctrl_c): the program's shutdown stands.
        "chained" => {
            static STOP: AtomicBool = AtomicBool::new(false);
            static PREV: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            extern "C" fn on_term(s: libc::c_int) {
                STOP.store(true, Ordering::Relaxed);
                let prev = PREV.load(Ordering::Relaxed);
                if prev != libc::SIG_DFL && prev != libc::SIG_IGN {
                    // SAFETY: `prev` is the handler that was installed (profpoint's), a
                    // plain one-argument handler.
                    let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev) };
                    f(s);
                }
            }
            // SAFETY: sigaction with valid values; `on_term` is async-signal-safe.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_term as extern "C" fn(libc::c_int) as libc::sighandler_t;
                libc::sigemptyset(&mut act.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGTERM, &act, &mut old);
                PREV.store(old.sa_sigaction, Ordering::Relaxed);
            }
            let mut x = 0;
            let mut n = 0u64;
            while !STOP.load(Ordering::Relaxed) {
                x = step(x);
                n += 1;
                if n == 10_000 {
                    println!("ready");
                }
            }
            // Long enough for a report and a kill, had profpoint acted on the signal.
            std::thread::sleep(Duration::from_millis(300));
            println!("own shutdown after {n} calls");
            std::process::exit(4);
        }
        // A program that blocks SIGTERM and waits for it with sigwait: it gets it, not
        // profpoint's threads.
        "sigwait" => {
            // SAFETY: sigset_t initialised by sigemptyset; masks of this thread (and threads
            // it starts later); sigwait fills `got`.
            let got = unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGTERM);
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                let mut x = 0;
                for _ in 0..20_000 {
                    x = step(x);
                }
                println!("ready");
                let mut got = 0;
                libc::sigwait(&set, &mut got);
                got
            };
            println!("sigwait got {got}");
        }
        other => panic!("unknown child scenario {other:?}"),
    }
}

/// Each signal: the report is written (JSON and the table on stderr), and the process ends by
/// that signal.
fn each_signal_writes_the_report_and_ends_the_process_by_it() {
    for (s, name) in SIGNALS {
        let path = temp(&format!("{name}.json"));
        // SIGTERM with the heatmap running: the report thread symbolises it, as the main
        // thread does at exit.
        let heat: &[(&str, &str)] = if s == libc::SIGTERM {
            &[("PROFPOINT_HEATMAP", "1")]
        } else {
            &[]
        };
        let mut c = spawn(
            "loop",
            &format!("json:{},stderr", path.display()),
            heat,
            false,
        );
        let mut out = BufReader::new(c.stdout.take().unwrap());
        wait_line(&mut out, "ready");
        kill(&c, s);
        let (status, _, err) = finish(c);
        assert_eq!(status.signal(), Some(s), "{name}: {status:?}\n{err}");
        let v = json(&path);
        assert!(calls_of(&v, "::step") > 10_000, "{name}");
        // (The sampler needs the `heatmap` feature, on in the workspace's build.)
        assert_eq!(
            v["heatmap"].is_object(),
            s == libc::SIGTERM && cfg!(feature = "heatmap"),
            "{name}"
        );
        assert!(err.contains("signals::unix::step"), "{name}: {err}");
        std::fs::remove_file(&path).ok();
    }
}

/// `PROFPOINT_SIGNALS=0`: the signal ends the process as before, no report.
fn profpoint_signals_0_leaves_the_signals_alone() {
    let path = temp("off.json");
    let mut c = spawn(
        "loop",
        &format!("json:{}", path.display()),
        &[("PROFPOINT_SIGNALS", "0")],
        false,
    );
    let mut out = BufReader::new(c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    kill(&c, libc::SIGINT);
    let (status, _, err) = finish(c);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{err}");
    assert!(!path.exists(), "a report was written");
}

/// A program's own handler stands: it runs, and the program's own ending (exit 3) writes the
/// report at exit.
fn the_programs_own_handler_stands() {
    let path = temp("own.json");
    let mut c = spawn(
        "own_handler",
        &format!("json:{}", path.display()),
        &[],
        false,
    );
    let mut out = BufReader::new(c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    kill(&c, libc::SIGTERM);
    let ran = wait_line(&mut out, "own handler ran");
    let (status, _, err) = finish(c);
    assert_eq!(status.code(), Some(3), "{status:?}\n{err}");
    let calls: u64 = ran.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert_eq!(calls_of(&json(&path), "::step"), calls);
    std::fs::remove_file(&path).ok();
}

/// A signal the program was started with ignored (`nohup`) stays ignored; a later SIGTERM
/// still gets the report.
fn an_ignored_signal_stays_ignored() {
    let path = temp("nohup.json");
    let mut c = spawn("loop", &format!("json:{}", path.display()), &[], true);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    kill(&c, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        c.try_wait().unwrap().is_none(),
        "SIGHUP ended a nohup'd process"
    );
    assert!(!path.exists(), "SIGHUP wrote a report");
    kill(&c, libc::SIGTERM);
    let (status, _, err) = finish(c);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{err}");
    assert!(calls_of(&json(&path), "::step") > 10_000);
    std::fs::remove_file(&path).ok();
}

/// The handler allocates nothing (counted on the thread it ran on). The report goes to the
/// child's stderr, a pipe it filled first and the test drains only once the child has printed
/// its count, so the report cannot end the child first.
fn the_handler_allocates_nothing() {
    let mut c = spawn("no_alloc", "json:/dev/stderr", &[], false);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let line = wait_line(&mut out, "allocations in the handler: ");
    assert_eq!(line.trim_end(), "allocations in the handler: 0");
    let (status, _, err) = finish(c);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{err}");
    let v: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(calls_of(&v, "::step"), 1);
}

/// A handler installed over profpoint's that calls it (signal-hook style): profpoint does
/// nothing, the program shuts down as it chose (exit 4), and its exit writes the report.
fn a_handler_that_calls_ours_keeps_the_programs_shutdown() {
    let path = temp("chained.json");
    let mut c = spawn("chained", &format!("json:{}", path.display()), &[], false);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    kill(&c, libc::SIGTERM);
    let line = wait_line(&mut out, "own shutdown after ");
    let (status, _, err) = finish(c);
    assert_eq!(status.code(), Some(4), "{status:?}\n{err}");
    assert!(!err.contains("ending now"), "{err}");
    let calls: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(calls_of(&json(&path), "::step"), calls);
    std::fs::remove_file(&path).ok();
}

/// A program that blocks SIGTERM and `sigwait`s for it gets it (profpoint's threads block
/// every asynchronous signal), and ends normally with its report.
fn a_sigwait_program_gets_its_signal() {
    let path = temp("sigwait.json");
    let mut c = spawn("sigwait", &format!("json:{}", path.display()), &[], false);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    kill(&c, libc::SIGTERM);
    let line = wait_line(&mut out, "sigwait got ");
    let (status, _, err) = finish(c);
    assert_eq!(line.trim_end(), format!("sigwait got {}", libc::SIGTERM));
    assert!(status.success(), "{status:?}\n{err}");
    assert_eq!(calls_of(&json(&path), "::step"), 20_000);
    std::fs::remove_file(&path).ok();
}

/// The same signal twice at once (`timeout` signals the child, then its group): one report,
/// the process ends by the signal, no "another signal" line.
fn a_duplicate_signal_is_not_a_second_request() {
    let path = temp("twice.json");
    let mut c = spawn("loop", &format!("json:{}", path.display()), &[], false);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    kill(&c, libc::SIGTERM);
    kill(&c, libc::SIGTERM);
    let (status, _, err) = finish(c);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{err}");
    assert!(!err.contains("ending now"), "{err}");
    assert!(calls_of(&json(&path), "::step") > 10_000);
    std::fs::remove_file(&path).ok();
}

/// Fills the pipe on descriptor `fd` (newlines), so that the next write to it waits until
/// the reader drains it: how the tests hold a report mid-way (a destination is never opened
/// where it could block, so a FIFO no longer can). First waits (60 s at most) until the
/// reader took what was written before: a read after the filling would make room.
fn fill_pipe(fd: libc::c_int) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, live here.
        let ok = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) } == 0;
        if !ok || queued == 0 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: fcntl and write on a descriptor of this process; the buffers are live.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        let pad = [b'\n'; 4096];
        while libc::write(fd, pad.as_ptr().cast(), pad.len()) > 0 {}
        while libc::write(fd, pad.as_ptr().cast(), 1) > 0 {}
        libc::fcntl(fd, libc::F_SETFL, flags);
    }
}

/// A second signal while the first one's report is being written (here: blocked writing to
/// a full stdout nobody reads) ends the process at once, by the first signal (as without
/// profpoint, where the first would have ended it already), with one line.
fn a_second_signal_during_the_report_ends_the_process_at_once() {
    let mut c = spawn(
        "loop",
        "stderr,stdout",
        &[("PROFPOINT_TEST_FILL_STDOUT", "1")],
        false,
    );
    // Unbuffered: the test reads no byte of stdout past "ready" (it would make room).
    let mut out = BufReader::with_capacity(1, c.stdout.take().unwrap());
    wait_line(&mut out, "ready");
    let mut err = BufReader::new(c.stderr.take().unwrap());
    wait_line(&mut err, "stdout filled");
    kill(&c, libc::SIGTERM);
    // The table on stderr is written first: once it is there, the report is under way (and
    // stuck at the full stdout).
    wait_line(&mut err, "Profile Points");
    kill(&c, libc::SIGINT);
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = c.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}\n{rest}");
    assert_eq!(
        rest.matches(
            "profpoint: another signal while the report was pending: ending now, without it"
        )
        .count(),
        1,
        "{rest}"
    );
}

/// SIGINT, then SIGTERM 20 ms later (a user's Ctrl-C, then a supervisor's stop): the process
/// ends by SIGINT, as without profpoint, whether the report was still being written when the
/// SIGTERM came (it then ends at once) or not. With the heatmap, whose symbols make the report
/// take longer than 20 ms; three times.
fn sigint_then_sigterm_ends_the_process_by_sigint() {
    let heatmap: &[(&str, &str)] = if cfg!(feature = "heatmap") {
        &[("PROFPOINT_HEATMAP", "1")]
    } else {
        &[]
    };
    for run in 0..3 {
        let path = temp(&format!("int-term-{run}.json"));
        let mut c = spawn("loop", &format!("json:{}", path.display()), heatmap, false);
        let mut out = BufReader::new(c.stdout.take().unwrap());
        wait_line(&mut out, "ready");
        kill(&c, libc::SIGINT);
        std::thread::sleep(Duration::from_millis(20));
        // The child may be gone already (its report written): then there is nothing to send.
        // SAFETY: kill(2) with the child's pid, not yet waited for (a zombie still holds it).
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let (status, _, err) = finish(c);
        assert_eq!(
            status.signal(),
            Some(libc::SIGINT),
            "run {run}: {status:?}\n{err}"
        );
        std::fs::remove_file(&path).ok();
    }
}

/// A signal while the program's own exit writes the report (blocked on a full stdout): the
/// report is
/// finished, whole, then the process ends by the signal.
fn a_signal_during_the_exit_report_lets_it_finish() {
    if !cfg!(target_os = "linux") {
        println!(
            "SKIPPED a_signal_during_the_exit_report_lets_it_finish: it watches the signals thread in /proc (Linux)"
        );
        return;
    }
    let mut c = spawn("exit_into_full_stdout", "json:/dev/stdout", &[], false);
    // Unbuffered: the test reads no byte of stdout past "exiting" (it would make room).
    let mut out = BufReader::with_capacity(1, c.stdout.take().unwrap());
    wait_line(&mut out, "exiting");
    kill(&c, libc::SIGTERM);
    // The signal was handled once its report thread (`profpoint-sigreport`) exists: the
    // `profpoint-signals` thread starts it after the handler recorded the signal. Whichever of
    // the exit and that thread claimed the report first, the report waits for stdout's
    // reader, and the process ends by the signal once it is written (the exit raises the
    // recorded signal after its report; the thread raises it after its own).
    let deadline = Instant::now() + Duration::from_secs(60);
    while thread_switches(c.id(), "profpoint-sigre").is_none() {
        assert!(
            Instant::now() < deadline,
            "the signal was not handled in 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Now read the report (after the filling newlines): the writer gets on.
    let mut text = String::new();
    out.read_to_string(&mut text).unwrap();
    let (status, _, err) = finish(c);
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(calls_of(&v, "::step"), 1_000);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}\n{err}");
}

/// Voluntary context switches of the thread of process `pid` whose name (15 bytes at most,
/// as the kernel keeps it) is `comm` (`None` while there is none).
fn thread_switches(pid: u32, want: &str) -> Option<u64> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(task) = task else { continue };
        let dir = task.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != want {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        return status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .map(|n| n.trim().parse().unwrap());
    }
    None
}

/// A forked child (no signals thread) ends by SIGTERM at once, as without profpoint.
fn a_forked_child_ends_by_the_signal_at_once() {
    let path = temp("fork.json");
    let c = spawn("forked", &format!("json:{}", path.display()), &[], false);
    let (status, out, err) = finish(c);
    assert!(status.success(), "{status:?}\n{out}\n{err}");
    assert!(
        out.contains(&format!(
            "forked child: signalled=true signal={}",
            libc::SIGTERM
        )),
        "{out}"
    );
    std::fs::remove_file(&path).ok();
}

pub(crate) fn main() {
    if let Ok(scenario) = std::env::var("PROFPOINT_TEST_CHILD") {
        child(&scenario);
        return;
    }
    let args = libtest_mimic::Arguments::from_args();
    let t = |name: &'static str, f: fn()| {
        libtest_mimic::Trial::test(name, move || {
            f();
            Ok(())
        })
    };
    let tests = vec![
        t(
            "each_signal_writes_the_report_and_ends_the_process_by_it",
            each_signal_writes_the_report_and_ends_the_process_by_it,
        ),
        t(
            "profpoint_signals_0_leaves_the_signals_alone",
            profpoint_signals_0_leaves_the_signals_alone,
        ),
        t(
            "the_programs_own_handler_stands",
            the_programs_own_handler_stands,
        ),
        t(
            "an_ignored_signal_stays_ignored",
            an_ignored_signal_stays_ignored,
        ),
        t(
            "the_handler_allocates_nothing",
            the_handler_allocates_nothing,
        ),
        t(
            "a_second_signal_during_the_report_ends_the_process_at_once",
            a_second_signal_during_the_report_ends_the_process_at_once,
        ),
        t(
            "sigint_then_sigterm_ends_the_process_by_sigint",
            sigint_then_sigterm_ends_the_process_by_sigint,
        ),
        t(
            "a_signal_during_the_exit_report_lets_it_finish",
            a_signal_during_the_exit_report_lets_it_finish,
        ),
        t(
            "a_handler_that_calls_ours_keeps_the_programs_shutdown",
            a_handler_that_calls_ours_keeps_the_programs_shutdown,
        ),
        t(
            "a_sigwait_program_gets_its_signal",
            a_sigwait_program_gets_its_signal,
        ),
        t(
            "a_duplicate_signal_is_not_a_second_request",
            a_duplicate_signal_is_not_a_second_request,
        ),
        t(
            "a_forked_child_ends_by_the_signal_at_once",
            a_forked_child_ends_by_the_signal_at_once,
        ),
    ];
    libtest_mimic::run(&args, tests).exit();
}
