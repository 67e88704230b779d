//! The alternating-window sampler's live path, run with the software clock (`TaskClock` leading,
//! `PageFaults` counted), which works where no hardware PMU is exposed. The signal routing, the
//! per-thread state machine, the calibration, the attribution by start and end function, the
//! discards, thread churn and the stop order are the same code the hardware mode runs; only the
//! events differ.
//!
//! The workload has a known character: `fault_pages` maps fresh memory and touches every page
//! (one page fault per 4 KiB), `spin` computes in registers (no faults). The report must credit
//! windows to both, give `fault_pages` a page-fault rate near the one counted around its calls,
//! and give `spin` none.
//!
//! Each test runs in its own process under nextest; the sampler is one per process, so the tests
//! here also take a lock.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

use profpoint_heatmap::pmu::{self, Counters, Event, PmuConfig};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

use profpoint_test_support::faults::workload;

mod common;
use common::thread_cpu;

/// How long a test may run the workload on the wall before it gives up waiting for the events
/// it needs (a quiet machine needs a few seconds at most).
const WALL_CAP: Duration = Duration::from_secs(90);

/// Runs the workload in short stretches until `enough()` says so; returns the ground truth
/// summed over the stretches (see `workload`), and the CPU and wall time spent. Panics naming
/// `what` if `WALL_CAP` passes first, or `cpu_cap` of this thread's CPU time (the events
/// follow the CPU time, so a loaded machine takes longer on the wall, not on the CPU clock).
fn workload_until(
    truth: Option<&Counters>,
    cpu_cap: Duration,
    what: &dyn Fn() -> String,
    enough: &dyn Fn() -> bool,
) -> (u64, u64, Duration, Duration) {
    let (cpu0, wall0) = (thread_cpu(), Instant::now());
    let (mut ns, mut faults) = (0, 0);
    let read = truth.map(|c| move || c.read());
    let read = read.as_ref().map(|r| r as &dyn Fn() -> Vec<u64>);
    while !enough() {
        let (cpu, wall) = (thread_cpu() - cpu0, wall0.elapsed());
        assert!(
            cpu < cpu_cap && wall < WALL_CAP,
            "gave up after {cpu:?} of CPU ({wall:?} on the wall): {}",
            what()
        );
        let (n, f) = workload(Duration::from_millis(50), read);
        ns += n;
        faults += f;
    }
    (ns, faults, thread_cpu() - cpu0, wall0.elapsed())
}

/// The software mode with a window every ~1.1 ms of CPU (5x the default rate): short tests
/// still see hundreds of windows.
fn fast_software_sampler() -> pmu::PmuSampler {
    pmu::start(PmuConfig {
        long_period: 1_000_000,
        window: 100_000,
        ..PmuConfig::software()
    })
    .expect("the software mode starts")
}

fn software_or_skip(test: &str) -> bool {
    match Counters::open_with(Event::TaskClock, &[Event::PageFaults]) {
        Ok(_) => true,
        Err(e) => {
            println!("SKIPPED {test}: software perf events are not available here: {e}");
            false
        }
    }
}

#[test]
fn software_windows_credit_page_faults_to_the_function_that_takes_them() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !software_or_skip("software_windows_credit_page_faults_to_the_function_that_takes_them") {
        return;
    }
    let config = PmuConfig {
        long_period: 2_000_000,
        window: 300_000,
        ..PmuConfig::software()
    };
    let sampler = pmu::start(config).expect("the software mode starts");
    // The ground truth, counted in the same run (a separate group on this thread, read around
    // every call of fault_pages): the fault rate drifts with the machine's state, so a truth
    // from another stretch of time would add that drift to the error.
    //
    // The run lasts until enough windows were recorded, not for a fixed time: windows follow
    // the thread's CPU time (minus what it spends in the kernel, where none can begin), so a
    // loaded machine needs longer on the wall. 300 recorded windows is about 4.5 s of CPU
    // here (195 came in 3 s on a quiet machine), enough for a handful in fault_pages even
    // when a loaded machine makes half of them overlong.
    const WINDOWS: usize = 300;
    let truth = Counters::open_with(Event::TaskClock, &[Event::PageFaults]).unwrap();
    let (ns, faults, cpu, wall) = workload_until(
        Some(&truth),
        Duration::from_secs(60),
        &|| format!("{} windows recorded, wanted {WINDOWS}", sampler.recorded()),
        &|| sampler.recorded() >= WINDOWS,
    );
    drop(truth);
    println!("workload: {cpu:?} of CPU, {wall:?} on the wall");
    let true_rate = 1e6 * faults as f64 / ns as f64;
    assert!(
        faults > 0,
        "the ground truth counted no faults in fault_pages"
    );
    let profile = sampler.stop();
    let report = profile.report(20);
    let mut text = Vec::new();
    report.write_table(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    println!("{text}\nground truth in fault_pages: {true_rate:.1} faults/ms");

    // Windows were recorded and credited; the calibration ran on its loop.
    assert!(report.windows >= 100, "{text}");
    assert!(report.discarded < report.windows, "{text}");
    assert!(profile.calibration.windows > 0, "{text}");
    assert!(text.contains("PF/ms"), "{text}");
    let row = |name: &str| {
        report
            .rows
            .iter()
            .find(|r| r.symbol.ends_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{text}"))
    };
    let (f, s) = (row("fault_pages"), row("spin"));
    // fault_pages gets few windows (they begin only in user space): a handful is enough for
    // the generous rate bound below.
    assert!(f.windows >= 3 && s.windows >= 5, "{text}");
    let (fr, sr) = (f.page_faults_per_ms.unwrap(), s.page_faults_per_ms.unwrap());
    // Generous bounds: the sampled rate is within a factor of three of the counted one, and
    // spin's is near zero (counters are per thread; a window in spin can still see a fault from
    // the stack or the loop's return into the next mapping, so not exactly zero).
    assert!(
        fr > true_rate / 3.0 && fr < true_rate * 3.0,
        "fault_pages: sampled {fr:.1}/ms vs counted {true_rate:.1}/ms\n{text}"
    );
    assert!(sr < fr / 20.0, "spin: {sr:.2}/ms vs {fr:.1}/ms\n{text}");
    // (No bound on the shares: windows can only begin in user space, so fault_pages, which
    // spends most of its time in the kernel's fault handler, gets a small %T; see the docs in pmu/mod.rs.)

    // The alternating-period patch's baseline from the same run: uniform sampling at the long
    // period credits each period's faults to the function where it ended, so spin is charged with
    // faults that fault_pages took (smearing), which the windows do not do.
    let uniform = profile.uniform_report_through(20, &[]);
    let mut utext = Vec::new();
    uniform.write_table(&mut utext).unwrap();
    let utext = String::from_utf8(utext).unwrap();
    println!("{utext}");
    let urow = |name: &str| {
        uniform
            .rows
            .iter()
            .find(|r| r.symbol.ends_with(name))
            .unwrap_or_else(|| panic!("no uniform row for {name}:\n{utext}"))
    };
    let (uf, us) = (urow("fault_pages"), urow("spin"));
    let (ufr, usr) = (
        uf.page_faults_per_ms.unwrap(),
        us.page_faults_per_ms.unwrap(),
    );
    println!(
        "faults/ms, truth {true_rate:.1} in fault_pages and 0 in spin: windows {fr:.1} and {sr:.2}, uniform {ufr:.1} and {usr:.1}"
    );
    assert!(
        usr > 10.0 * sr.max(0.1),
        "uniform smears faults into spin: {utext}"
    );
}

#[test]
fn software_mode_follows_threads_that_come_and_go() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !software_or_skip("software_mode_follows_threads_that_come_and_go") {
        return;
    }
    let sampler = fast_software_sampler();
    // Churn: short-lived threads doing the workload, several generations, each long enough
    // for the watcher (every 20 ms) to find it: 80 ms of its own CPU time (not of the wall,
    // which on a loaded machine would leave a thread too little CPU to be sampled).
    for _ in 0..6 {
        let hs: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(|| {
                    let end = thread_cpu() + Duration::from_millis(80);
                    while thread_cpu() < end {
                        workload(Duration::from_millis(10), None);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().expect("a worker finished");
        }
    }
    let profile = sampler.stop();
    let report = profile.report(20);
    let mut text = Vec::new();
    report.write_table(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    println!("{text}");
    // Worker threads were sampled (the main thread only slept in join).
    assert!(profile.threads > 3, "{} threads\n{text}", profile.threads);
    assert!(
        report
            .rows
            .iter()
            .any(|r| r.symbol.ends_with("fault_pages")),
        "{text}"
    );
    // After stop, the signal is back to its default and a new sampler can start.
    let again = pmu::start(PmuConfig::software()).expect("a second sampler starts after stop");
    drop(again);
}

#[test]
fn software_mode_rejects_a_window_below_the_kernel_floor() {
    let e = pmu::start(PmuConfig {
        window: 5_000,
        ..PmuConfig::software()
    })
    .unwrap_err();
    assert!(e.to_string().contains("window 5000 ns"), "{e}");
    // 10 us itself is too short once jittered: 10% asks for 9 us.
    let e = pmu::start(PmuConfig {
        window: 10_000,
        ..PmuConfig::software()
    })
    .unwrap_err();
    assert!(e.to_string().contains("down to 9000 ns"), "{e}");
}

/// A `fork`ed child that stops the sampler it inherited (as an at-exit report there would)
/// finishes at once and leaves the parent's counters running: the parent goes on recording
/// windows after the child is gone.
#[test]
fn a_forked_child_stopping_its_copy_leaves_the_parent_sampling() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !software_or_skip("a_forked_child_stopping_its_copy_leaves_the_parent_sampling") {
        return;
    }
    let sampler = fast_software_sampler();
    workload(Duration::from_millis(100), None);
    // SAFETY: the child only stops its copy of the sampler and leaves with _exit; alarm turns
    // a hang into a SIGALRM death that the parent sees.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork: {}", std::io::Error::last_os_error());
    if child == 0 {
        // SAFETY: in the child; plain calls, then _exit without the parent's atexit handlers.
        unsafe {
            libc::alarm(10);
            let p = sampler.stop();
            libc::_exit(if p.windows.is_empty() { 3 } else { 0 });
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    assert!(libc::WIFEXITED(status), "child died: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the child saw no windows");
    // The parent goes on recording: 20 more windows, which a quiet machine records in well
    // under 300 ms of CPU. A loaded machine gives the parent less CPU per second on the wall,
    // so the wait is on the count, capped by CPU time: 5 s of the parent's CPU without 20
    // windows means its counters stopped.
    let before = sampler.recorded();
    let (_, _, cpu, wall) = workload_until(
        None,
        Duration::from_secs(5),
        &|| {
            format!(
                "the parent recorded {} windows after the child stopped its copy, wanted 20",
                sampler.recorded() - before
            )
        },
        &|| sampler.recorded() >= before + 20,
    );
    let after = sampler.recorded();
    drop(sampler);
    println!(
        "the parent recorded {} windows in {cpu:?} of CPU ({wall:?} on the wall) after the child stopped its copy",
        after - before
    );
}

/// Threads that cannot be given their counters (here: too few file descriptors left) are
/// said to be unsampled, with the reason, instead of missing silently.
#[test]
fn threads_without_counters_are_reported() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !software_or_skip("threads_without_counters_are_reported") {
        return;
    }
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reading and then lowering this process's own soft descriptor limit.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) };
    let stop = std::sync::Arc::new(std::sync::Barrier::new(41));
    let threads: Vec<_> = (0..40)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                stop.wait();
            })
        })
        .collect();
    // 40 threads need 80 descriptors for their groups: with 64 the last ones cannot open.
    let low = libc::rlimit {
        rlim_cur: 64,
        rlim_max: old.rlim_max,
    };
    // SAFETY: as above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) };
    let sampler = pmu::start(PmuConfig::software());
    // SAFETY: restoring the limit read above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
    stop.wait();
    for t in threads {
        t.join().unwrap();
    }
    let profile = sampler
        .expect("the sampler starts (the main thread got its group)")
        .stop();
    println!("{:?}", profile.warnings);
    assert!(
        profile
            .warnings
            .iter()
            .any(|w| w.contains("not sampled") && w.contains("Too many open files")),
        "{:?}",
        profile.warnings
    );
}

/// The names of this process's threads now.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect()
}

/// A worker that runs the workload for 80 ms of its own CPU time.
fn worker() {
    std::thread::spawn(|| {
        let end = thread_cpu() + Duration::from_millis(80);
        while thread_cpu() < end {
            workload(Duration::from_millis(10), None);
        }
    })
    .join()
    .expect("a worker finished");
}

/// With the heatmap running too, one thread lists the threads for both samplers: the heatmap's
/// watcher hosts the windows' scans (no `pmu-watcher` thread), and a new thread still gets its
/// group; once the heatmap stops, the windows' own thread takes the scans over.
#[test]
fn with_the_heatmap_one_watcher_serves_both() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !software_or_skip("with_the_heatmap_one_watcher_serves_both") {
        return;
    }
    let heat =
        profpoint_heatmap::start(profpoint_heatmap::Config::new()).expect("the heatmap starts");
    let sampler = fast_software_sampler();
    std::thread::sleep(Duration::from_millis(60));
    let names = thread_names();
    assert!(!names.iter().any(|n| n == "pmu-watcher"), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| *n == "heatmap-watcher").count(),
        1,
        "{names:?}"
    );
    worker();
    drop(heat.stop());
    std::thread::sleep(Duration::from_millis(60));
    let names = thread_names();
    assert!(names.iter().any(|n| n == "pmu-watcher"), "{names:?}");
    worker();
    let profile = sampler.stop();
    let report = profile.report(20);
    // The workers' windows (the main thread only slept and joined): either of the workload's
    // two functions. Beside two busy loops a worker's 80 ms of CPU left fault_pages too few
    // windows for a row in 5 of 20 runs, while spin always had its ~24: the workers were
    // given groups all the same, which is what this test is about.
    assert!(
        report
            .rows
            .iter()
            .any(|r| r.symbol.ends_with("fault_pages") || r.symbol.ends_with("::spin")),
        "{} threads, {} windows, rows {:?}",
        profile.threads,
        profile.windows.len(),
        report
            .rows
            .iter()
            .map(|r| (&r.symbol, r.windows))
            .collect::<Vec<_>>()
    );
    // Both workers were given groups, one by each watcher.
    assert!(profile.threads >= 5, "{} threads", profile.threads);
}
