//! The handler is async-signal-safe, shown three ways:
//!
//! 1. A counting global allocator: a thread that allocates nothing itself takes thousands of
//!    samples while its allocation count stays exactly 0 (so the handler allocated nothing).
//! 2. errno: a thread sets errno to a marker, takes thousands of samples, and still reads the
//!    marker (the handler saves and restores it).
//!    The same holds for the windows' handler (`profpoint_heatmap::pmu`, software mode), which enters
//!    through the same sampler core (`signal.rs`).
//!    Both hold with call stacks on (depth 64: framehop's unwind, the stack table).
//! 3. A stress run: allocation- and lock-heavy threads, plus thread churn, under 10 kHz
//!    sampling for several seconds; every thread finishes (no deadlock, checked by a deadline)
//!    with its exact expected checksum, and the sample total is accounted for exactly
//!    (buckets + other).

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::Config;

/// Counts allocations made by threads that opted in (`WATCHED`), everything else passes
/// through to the system allocator.
struct Counting;

thread_local! {
    // `const` initialisation: no lazy TLS set-up, safe to touch from inside the allocator.
    static WATCHED: Cell<bool> = const { Cell::new(false) };
}
static WATCHED_ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to `System` unchanged; the extra work is a TLS read and an
// atomic increment, which neither allocate nor unwind.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHED.with(Cell::get) {
            // Relaxed: a tally read by the same thread.
            WATCHED_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if WATCHED.with(Cell::get) {
            // Relaxed: as above.
            WATCHED_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs in its own thread: opts in to counting, spins, reports (allocs, errno kept?).
#[inline(never)]
fn watched_spinner(cpu: Duration) -> (u64, bool) {
    WATCHED.set(true);
    const MARKER: i32 = 0x5eed;
    // SAFETY: writing this thread's errno slot.
    unsafe { *libc::__errno_location() = MARKER };
    // Spin without allocating: the CPU clock is read through clock_gettime, which does not
    // allocate and, on success, leaves errno alone.
    let end = thread_cpu() + cpu;
    while thread_cpu() < end {
        spin(100_000);
    }
    // SAFETY: reading this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    // Relaxed: only this thread increments while WATCHED.
    let allocs = WATCHED_ALLOCS.load(Ordering::Relaxed);
    WATCHED.set(false);
    (allocs, errno == MARKER)
}

#[test]
fn the_handler_neither_allocates_nor_changes_errno() {
    no_alloc_errno(
        "the_handler_neither_allocates_nor_changes_errno",
        Config::new().hz(10_000),
    );
}

/// The same with call stacks (depth 64): the handler then also unwinds with framehop on the
/// thread's unwind stack and inserts into the stack table, still without one allocation, and
/// the samples really carry stacks (the spinner's frame below the leaf).
#[test]
fn the_stack_handler_neither_allocates_nor_changes_errno() {
    if !profpoint_heatmap::stacks::AVAILABLE {
        println!(
            "SKIPPED the_stack_handler_neither_allocates_nor_changes_errno: stacks are not \
             available on this platform"
        );
        return;
    }
    let Some(p) = no_alloc_errno(
        "the_stack_handler_neither_allocates_nor_changes_errno",
        Config::new().hz(10_000).stacks(64),
    ) else {
        return;
    };
    let st = full_report(&p).stacks.expect("stacks were on");
    let unwound: u64 = st
        .stacks
        .iter()
        .filter(|s| {
            s.frames.len() >= 3
                && s.frames[..s.frames.len() - 1]
                    .iter()
                    .any(|f| f.function.ends_with("watched_spinner"))
        })
        .map(|s| s.count)
        .sum();
    println!(
        "stack no-alloc test: {unwound} unwound stacks through watched_spinner, cuts {:?}",
        st.cuts
    );
    assert!(
        unwound >= 2000,
        "{unwound} unwound samples: the check would prove nothing"
    );
}

/// Runs `watched_spinner` for 500 ms of CPU under `config`: no allocation on that thread,
/// errno kept. The profile, or None when perf is not available (SKIPPED printed).
fn no_alloc_errno(test: &str, config: Config) -> Option<profpoint_heatmap::Profile> {
    let _g = serial();
    let s = start_perf_or_skip(test, config)?;
    // The thread exists before it opts in; give the watcher a scan to pick it up.
    let threads_before = s.snapshot().threads();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        watched_spinner(Duration::from_millis(500))
    });
    // Wait until the watcher has given the thread its event (not a fixed sleep: a loaded
    // machine can delay the watcher's scan).
    let picked_up = Instant::now();
    while s.snapshot().threads() < threads_before + 1 {
        assert!(
            picked_up.elapsed() < Duration::from_secs(60),
            "the watcher did not pick up the spinner thread in 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    go_tx.send(()).unwrap();
    let (allocs, errno_kept) = h.join().unwrap();
    let p = s.stop();
    let samples = samples_in(&full_report(&p), "watched_spinner");
    println!(
        "no-alloc test: {samples} samples in watched_spinner, {allocs} allocations, errno kept {errno_kept}"
    );
    // 500 ms at 10 kHz = ~5000; the handler ran thousands of times on that thread.
    assert!(
        samples >= 2000,
        "{samples} samples: the check would prove nothing"
    );
    assert_eq!(
        allocs, 0,
        "allocations on a thread that only spun and took samples"
    );
    assert!(errno_kept, "errno changed under the handler");
    Some(p)
}

/// The same for the windows' handler (`profpoint_heatmap::pmu`, software mode: no PMU needed), which
/// enters through the same sampler core and makes system calls (`read`, `ioctl`) that could
/// set errno: a thread that only spins takes hundreds of windows without one allocation, and
/// keeps its errno.
#[test]
fn the_windows_handler_neither_allocates_nor_changes_errno() {
    use profpoint_heatmap::pmu::{self, Counters, Event, PmuConfig};
    let _g = serial();
    if let Err(e) = Counters::open_with(Event::TaskClock, &[Event::PageFaults]) {
        println!(
            "SKIPPED the_windows_handler_neither_allocates_nor_changes_errno: software perf \
             events are not available here: {e}"
        );
        return;
    }
    let mut s = pmu::start(PmuConfig {
        long_period: 1_000_000,
        window: 100_000,
        ..PmuConfig::software()
    })
    .expect("the software mode starts");
    s.calibrated();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        // 100 ms of its own CPU first, unwatched: the scans (every 20 ms) give the thread its
        // group meanwhile.
        let end = thread_cpu() + Duration::from_millis(100);
        while thread_cpu() < end {
            spin(100_000);
        }
        ready_tx.send(()).unwrap();
        watched_spinner(Duration::from_millis(500))
    });
    ready_rx.recv().unwrap();
    let before = s.recorded();
    let (allocs, errno_kept) = h.join().unwrap();
    let windows = s.recorded() - before;
    drop(s.stop());
    println!(
        "windows' no-alloc test: {windows} windows, {allocs} allocations, errno kept {errno_kept}"
    );
    // ~1.1 ms of CPU per window: ~450 in 500 ms, each two handler runs.
    assert!(
        windows >= 100,
        "{windows} windows: the check would prove nothing"
    );
    assert_eq!(
        allocs, 0,
        "allocations on a thread that only spun and took windows"
    );
    assert!(errno_kept, "errno changed under the windows' handler");
}

/// Allocation-heavy, lock-heavy threads and thread churn under 10 kHz, until the workers have
/// burned `WORKER_CPU` of CPU between them (on a quiet 2-CPU machine about 3 s of wall time; on
/// a loaded one longer: the samples follow the CPU time, not the clock on the wall).
#[test]
fn stress_allocating_threads_under_10khz() {
    stress(
        "stress_allocating_threads_under_10khz",
        Config::new().hz(10_000),
    );
}

/// The same with call stacks: the churn also exercises the contexts' creation, retirement
/// and reuse by the watcher.
#[test]
fn stress_allocating_threads_under_10khz_with_stacks() {
    stress(
        "stress_allocating_threads_under_10khz_with_stacks",
        Config::new().hz(10_000).stacks(64),
    );
}

fn stress(test: &str, config: Config) {
    /// The workers' CPU time, together, before they are stopped.
    const WORKER_CPU: Duration = Duration::from_millis(2500);
    /// How long the run may take on the wall before no progress is called a deadlock.
    const CAP: Duration = Duration::from_secs(90);
    let _g = serial();
    let Some(s) = start_perf_or_skip(test, config) else {
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(Mutex::new(Vec::<u64>::new()));
    // Per worker, published after every round: rounds made and the thread's CPU time in ns.
    let progress: Arc<[[AtomicU64; 2]; 3]> = Arc::new(Default::default());
    let mut workers = Vec::new();
    for t in 0..3u64 {
        let stop = Arc::clone(&stop);
        let shared = Arc::clone(&shared);
        let progress = Arc::clone(&progress);
        workers.push(std::thread::spawn(move || {
            let mut rounds = 0u64;
            let mut sum = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Allocate and free in many sizes; format (allocates); take a lock.
                let v: Vec<Box<[u8]>> = (1..64)
                    .map(|i| vec![t as u8; i * 17].into_boxed_slice())
                    .collect();
                let s = format!("{t}-{rounds}-{}", v.len());
                sum = sum
                    .wrapping_add(v.iter().map(|b| b.len() as u64).sum::<u64>() + s.len() as u64);
                shared.lock().unwrap().push(rounds);
                if rounds.is_multiple_of(64) {
                    shared.lock().unwrap().clear();
                    // Thread churn: a short-lived thread that allocates too.
                    std::thread::spawn(move || vec![0u8; 4096].len())
                        .join()
                        .unwrap();
                }
                rounds += 1;
                // Relaxed: progress tallies, read by the main thread to decide when to stop.
                progress[t as usize][0].store(rounds, Ordering::Relaxed);
                progress[t as usize][1].store(thread_cpu().as_nanos() as u64, Ordering::Relaxed);
            }
            (rounds, sum)
        }));
    }
    let t0 = Instant::now();
    // Run until the workers have done the work (CPU time, and more than 100 rounds each); a
    // run that stops progressing (a deadlock in or around the handler) hits the cap.
    let (cpu, rounds) = loop {
        // Relaxed: as above.
        let cpu = Duration::from_nanos(progress.iter().map(|p| p[1].load(Ordering::Relaxed)).sum());
        let rounds: [u64; 3] = std::array::from_fn(|t| progress[t][0].load(Ordering::Relaxed));
        if cpu >= WORKER_CPU && rounds.iter().all(|&r| r > 100) {
            break (cpu, rounds);
        }
        assert!(
            t0.elapsed() < CAP,
            "after {CAP:?} the workers had burned {cpu:?} of CPU (wanted {WORKER_CPU:?}) and made \
             {rounds:?} rounds (wanted more than 100 each): deadlock?"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    stop.store(true, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(20);
    for (t, w) in workers.into_iter().enumerate() {
        while !w.is_finished() {
            assert!(
                Instant::now() < deadline,
                "worker {t} did not finish: deadlock?"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let (rounds, sum) = w.join().unwrap();
        // Ground truth for each round: sum of i*17 for i in 1..64, plus the formatted length.
        let expect: u64 = (0..rounds)
            .map(|r| (1..64u64).map(|i| i * 17).sum::<u64>() + format!("{t}-{r}-63").len() as u64)
            .fold(0u64, u64::wrapping_add);
        assert_eq!(
            sum, expect,
            "worker {t} computed a wrong checksum over {rounds} rounds"
        );
        assert!(rounds > 100, "worker {t} made only {rounds} rounds");
    }
    let p = s.stop();
    let in_buckets: u64 = p.buckets().map(|(_, _, n)| n).sum();
    println!(
        "{test}: {} samples ({} in buckets, {} other) for {cpu:?} of worker CPU ({rounds:?} rounds) in {:?}, achieved {:?} Hz, {} threads, warnings {:?}",
        p.total_samples(),
        in_buckets,
        p.other(),
        t0.elapsed(),
        p.achieved_hz(),
        p.threads(),
        p.warnings()
    );
    assert_eq!(in_buckets + p.other(), p.total_samples());
    if p.has_stacks() {
        let st = full_report(&p).stacks.unwrap();
        println!(
            "{test}: {} stack samples, dropped {}, truncated {}, cuts {:?}",
            st.samples, st.dropped, st.truncated, st.cuts
        );
        // Every signal sample stored a stack (possibly the pc alone) or was counted dropped.
        assert_eq!(st.samples + st.dropped, p.total_samples());
    }
    // 2.5 s of worker CPU, of which about three quarters in user space (the rest is the
    // allocator's and the churn's system calls, where user-only samples are not taken): some
    // 18,000 samples at 10 kHz. 10,000 leaves room for rate error and still fails a handler
    // that loses samples (or the watcher that loses threads) under allocation and lock
    // pressure.
    assert!(
        p.total_samples() >= 10_000,
        "{} samples for {cpu:?} of worker CPU at 10 kHz",
        p.total_samples()
    );
}
