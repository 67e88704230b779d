//! Wall-clock mode: blocked threads are sampled (their pcs, read from `/proc`, land in libc's
//! system-call wrappers) and never see `EINTR` from the profiler in `nanosleep`, `poll` or
//! `epoll_wait`, none of which `SA_RESTART` restarts. A control at the end sends one `SIGPROF`
//! by hand to the sleeping thread and sees its `EINTR`, so the counters can see one.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::{Config, Mode};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Samples in libc functions whose name contains `name`.
fn in_libc(r: &profpoint_heatmap::Report, name: &str) -> u64 {
    r.rows
        .iter()
        .filter(|row| {
            row.function.contains(name)
                && row
                    .library
                    .as_deref()
                    .is_some_and(|l| l.starts_with("libc"))
        })
        .map(|row| row.nr)
        .sum::<u64>()
}

fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

#[test]
fn blocked_threads_are_sampled_without_eintr() {
    let _g = serial();
    let Some(s) = start_perf_or_skip(
        "blocked_threads_are_sampled_without_eintr",
        Config::new().hz(1000).mode(Mode::Wall),
    ) else {
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let eintr: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let calls: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let mut threads = Vec::new();

    // 0: nanosleep 1 ms at a time.
    {
        let (stop, eintr, calls, tid_tx) =
            (stop.clone(), eintr.clone(), calls.clone(), tid_tx.clone());
        threads.push(std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: `ts` is a live timespec; no remainder wanted.
                let r = unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
                if r != 0 && errno() == libc::EINTR {
                    eintr[0].fetch_add(1, Ordering::Relaxed);
                }
                calls[0].fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // 1: poll on a pipe that never becomes readable, 5 ms timeout.
    {
        let (stop, eintr, calls) = (stop.clone(), eintr.clone(), calls.clone());
        threads.push(std::thread::spawn(move || {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for two descriptors.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            let mut pfd = libc::pollfd {
                fd: fds[0],
                events: libc::POLLIN,
                revents: 0,
            };
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: one live pollfd.
                let r = unsafe { libc::poll(&mut pfd, 1, 5) };
                if r < 0 && errno() == libc::EINTR {
                    eintr[1].fetch_add(1, Ordering::Relaxed);
                }
                calls[1].fetch_add(1, Ordering::Relaxed);
            }
            // SAFETY: closing the pipe we opened.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
        }));
    }
    // 2: epoll_wait on an empty epoll set, 5 ms timeout.
    {
        let (stop, eintr, calls) = (stop.clone(), eintr.clone(), calls.clone());
        threads.push(std::thread::spawn(move || {
            // SAFETY: plain flags.
            let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            assert!(ep >= 0);
            let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 4];
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: `ev` has room for 4 events.
                let r = unsafe { libc::epoll_wait(ep, ev.as_mut_ptr(), 4, 5) };
                if r < 0 && errno() == libc::EINTR {
                    eintr[2].fetch_add(1, Ordering::Relaxed);
                }
                calls[2].fetch_add(1, Ordering::Relaxed);
            }
            // SAFETY: closing the epoll descriptor we opened.
            unsafe { libc::close(ep) };
        }));
    }
    // And a CPU burner, so task-clock signals are flying the whole time.
    let burner = std::thread::spawn(|| burn_cpu_alpha(Duration::from_millis(1200)));
    let sleeper_tid = tid_rx.recv().unwrap();
    // Sample for 1.5 s at least, and on until each blocked loop has its samples: 1.5 s at
    // 1 kHz is ~1500 per loop on a quiet machine, but the watcher reads /proc for them and a
    // loaded machine gives it fewer looks per second. The checks below are on what was
    // sampled, not on how fast; a watcher that never samples a blocked thread hits the cap.
    let t0 = Instant::now();
    let enough = |p: &profpoint_heatmap::Profile| {
        let r = full_report(p);
        p.proc_samples() >= 1500
            && ["nanosleep", "poll", "epoll_wait"]
                .iter()
                .all(|f| in_libc(&r, f) >= 300)
    };
    let p = loop {
        std::thread::sleep(Duration::from_millis(100));
        if t0.elapsed() < Duration::from_millis(1500) || !burner.is_finished() {
            continue;
        }
        let p = s.snapshot();
        if enough(&p) {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "after 90 s: {} /proc samples (wanted 1500), nanosleep {}, poll {}, epoll_wait {} \
             (wanted 300 each)",
            p.proc_samples(),
            in_libc(&full_report(&p), "nanosleep"),
            in_libc(&full_report(&p), "poll"),
            in_libc(&full_report(&p), "epoll_wait"),
        );
    };
    burner.join().unwrap();
    println!("sampled for {:?}", t0.elapsed());

    let during: Vec<u64> = eintr.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let made: Vec<u64> = calls.iter().map(|a| a.load(Ordering::Relaxed)).collect();

    // Control: one SIGPROF sent by hand to the sleeping thread surfaces as EINTR.
    for _ in 0..20 {
        // SAFETY: SIGPROF (our handler is installed) to a thread of this process.
        unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), sleeper_tid, libc::SIGPROF) };
        std::thread::sleep(Duration::from_millis(5));
    }
    let control = eintr[0].load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    drop(s.stop());

    let r = full_report(&p);
    let mut table = Vec::new();
    p.report(&profpoint_heatmap::ReportOptions {
        top: 8,
        ..Default::default()
    })
    .write_table(&mut table)
    .unwrap();
    println!("{}", String::from_utf8_lossy(&table));
    println!("calls {made:?}, EINTR during sampling {during:?}, control EINTR {control}");
    assert!(
        made.iter().all(|&n| n > 50),
        "every blocking loop ran: {made:?}"
    );
    assert_eq!(
        during,
        vec![0, 0, 0],
        "EINTR leaked into the program while sampling"
    );
    assert!(
        control >= 1,
        "the control shows EINTR is observable: {control}"
    );

    // 3 blocked threads (and the main thread) at 1000 Hz: ~6000 /proc samples in 1.5 s on a
    // quiet machine; the loop above ran until these were there.
    assert!(
        p.proc_samples() >= 1500,
        "{} /proc samples",
        p.proc_samples()
    );
    let in_libc = |name: &str| in_libc(&r, name);
    assert!(
        in_libc("nanosleep") >= 300,
        "nanosleep: {}",
        in_libc("nanosleep")
    );
    assert!(in_libc("poll") >= 300, "poll: {}", in_libc("poll"));
    assert!(
        in_libc("epoll_wait") >= 300,
        "epoll_wait: {}",
        in_libc("epoll_wait")
    );
    assert!(
        samples_in(&r, "burn_cpu_alpha") >= 600,
        "the running thread is sampled too"
    );
}
