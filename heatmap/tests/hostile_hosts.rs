//! Hostile hosts: a program that takes `SIGPROF` over while the heatmap samples.
//!
//! - It installs its own handler and arms its own `ITIMER_PROF` after `profpoint_heatmap::start`; stop
//!   leaves both as the program set them (before: `SIG_DFL` came back and the program's next
//!   timer signal killed it, "Profiling timer expired"; the setitimer source also disarmed the
//!   program's timer), and the profile says the handler was taken over.
//! - It installs its own handler only: the watcher notices within a few milliseconds and
//!   stops our sources, so our signals stop reaching the program's handler. The stray signals
//!   it got are bounded by what our rate explains over the time between the replacement and
//!   the moment the watcher recorded it (`DISPOSITION_CHECK`, 5 ms, plus scheduling delay).
//!
//! The program's handler tells its own timer's signals (`si_code == SI_KERNEL`) from ours
//! (perf overflow: `POLL_*`; tgkill: `SI_TKILL`); with the setitimer source ours are
//! `SI_KERNEL` too, so the tests of stray signals arm no timer of the program's and count every
//! signal its handler gets.
//! Every wait is on an event, with a 60 s cap and a message; no test assumes what a quiet
//! machine delivers in a fixed time.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::{Config, Source};

/// The program's timer signals (`SI_KERNEL`: an interval timer).
static TIMER_HITS: AtomicU64 = AtomicU64::new(0);
/// Every other `SIGPROF` the program's handler got (ours: perf overflow or tgkill).
static STRAY_HITS: AtomicU64 = AtomicU64::new(0);

extern "C" fn program_handler(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    let counter = if code == libc::SI_KERNEL {
        &TIMER_HITS
    } else {
        &STRAY_HITS
    };
    // Relaxed: tallies read by the test thread; nothing else is published through them.
    counter.fetch_add(1, Ordering::Relaxed);
}

fn program_handler_address() -> libc::sighandler_t {
    program_handler as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
        as libc::sighandler_t
}

fn set_disposition(handler: libc::sighandler_t, flags: libc::c_int) {
    // SAFETY: installing SIG_DFL, SIG_IGN or a valid SA_SIGINFO handler for SIGPROF.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        sa.sa_flags = flags;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut()), 0);
    }
}

/// What the program does: its own handler.
fn install_program_handler() {
    set_disposition(
        program_handler_address(),
        libc::SA_SIGINFO | libc::SA_RESTART,
    );
}

/// What the program does: its own `ITIMER_PROF`, 20 ms of process CPU. Returns the interval
/// as the kernel reports it back (sec, usec).
fn arm_program_timer() -> (libc::time_t, libc::suseconds_t) {
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 20_000,
    };
    let it = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: a valid itimerval; the old value is not wanted.
    let rc = unsafe { libc::setitimer(libc::ITIMER_PROF, &it, std::ptr::null_mut()) };
    assert_eq!(rc, 0);
    timer_interval()
}

fn timer_interval() -> (libc::time_t, libc::suseconds_t) {
    // SAFETY: an all-zero itimerval is a valid out-parameter.
    let mut now: libc::itimerval = unsafe { std::mem::zeroed() };
    // SAFETY: `now` is live for getitimer to fill.
    let rc = unsafe { libc::getitimer(libc::ITIMER_PROF, &mut now) };
    assert_eq!(rc, 0);
    (
        now.it_interval.tv_sec as i64,
        now.it_interval.tv_usec as i64,
    )
}

/// Puts the process back as the other tests expect: no timer, `SIG_DFL` (via `SIG_IGN`, which
/// discards a pending `SIGPROF`), counters at zero.
fn reset() {
    // SAFETY: an all-zero itimerval disarms the timer.
    unsafe {
        let zero: libc::itimerval = std::mem::zeroed();
        libc::setitimer(libc::ITIMER_PROF, &zero, std::ptr::null_mut());
    }
    set_disposition(libc::SIG_IGN, 0);
    set_disposition(libc::SIG_DFL, 0);
    // Relaxed: no handler of ours is installed any more.
    TIMER_HITS.store(0, Ordering::Relaxed);
    // Relaxed: as above.
    STRAY_HITS.store(0, Ordering::Relaxed);
}

/// Burns CPU on this thread until `done()`, for at most 60 s of wall time.
fn burn_until(what: &dyn Fn() -> String, done: &dyn Fn() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "after 60 s: {}",
            what()
        );
        burn_cpu_alpha(Duration::from_millis(2));
    }
}

fn timer_hits() -> u64 {
    // Relaxed: a tally.
    TIMER_HITS.load(Ordering::Relaxed)
}

fn stray_hits() -> u64 {
    // Relaxed: a tally.
    STRAY_HITS.load(Ordering::Relaxed)
}

/// Every SIGPROF the program's handler got (problem 2: the program arms no timer, so with the
/// setitimer source ours are the `SI_KERNEL` ones).
fn program_hits() -> u64 {
    timer_hits() + stray_hits()
}

fn taken_over(p: &profpoint_heatmap::Profile) -> Option<&String> {
    p.warnings()
        .iter()
        .find(|w| w.contains("SIGPROF was taken over by the program"))
}

/// Problem 1: the program installs its handler and its timer after start; stop leaves both,
/// and the program's timer signals keep reaching its handler (a `SIG_DFL` put back would kill
/// the process: reaching the end of the test is part of the proof).
fn program_keeps_its_handler_and_timer(source: Source) {
    let _g = serial();
    reset();
    let s = profpoint_heatmap::start(Config::new().hz(1000).source(source)).unwrap();
    burn_cpu_alpha(Duration::from_millis(50));
    install_program_handler();
    let armed = arm_program_timer();
    burn_until(
        &|| format!("the program's timer fired {} times, not 5", timer_hits()),
        &|| timer_hits() >= 5,
    );
    let p = s.stop();
    assert_eq!(
        sigprof_disposition(),
        program_handler_address(),
        "the program's handler is still installed after stop"
    );
    assert_eq!(
        timer_interval(),
        armed,
        "the program's ITIMER_PROF still has its own interval after stop"
    );
    let w = taken_over(&p).unwrap_or_else(|| panic!("no take-over warning: {:?}", p.warnings()));
    assert!(
        w.contains(&format!("a handler at {:#x}", program_handler_address())),
        "{w}"
    );
    let after_stop = timer_hits();
    burn_until(
        &|| {
            format!(
                "after stop the program's timer fired {} times, not 5",
                timer_hits() - after_stop
            )
        },
        &|| timer_hits() >= after_stop + 5,
    );
    reset();
}

#[test]
fn auto_source_leaves_the_programs_handler_and_timer() {
    program_keeps_its_handler_and_timer(Source::Auto);
}

#[test]
fn tgkill_source_leaves_the_programs_handler_and_timer() {
    program_keeps_its_handler_and_timer(Source::Tgkill);
}

#[test]
fn setitimer_source_leaves_the_programs_handler_and_timer() {
    program_keeps_its_handler_and_timer(Source::Setitimer);
}

/// Problem 2: the program installs its handler only. Our sources stop (no stray signal during
/// 300 ms of CPU once they went quiet), the strays are no more than our rate over the time
/// the watcher took to notice (plus 2 in flight), and the profile says what happened.
fn our_signals_stop_reaching_the_programs_handler(test: &str, source: Source) {
    let _g = serial();
    reset();
    let hz = 1000u64;
    let config = Config::new().hz(hz as u32);
    let s = if source == Source::PerfTaskClock {
        match start_perf_or_skip(test, config) {
            Some(s) => s,
            None => return,
        }
    } else {
        profpoint_heatmap::start(config.source(source)).unwrap()
    };
    let started_by = Instant::now();
    burn_until(&|| "no sample before the take-over".to_owned(), &|| {
        s.snapshot().total_samples() >= 20
    });
    install_program_handler();
    let replaced_at = started_by.elapsed();
    // Quiet: 100 ms of this thread's CPU without a stray signal (at 1 kHz a live source would
    // send ~100; the tgkill watcher checks the handler before it sends anything).
    let mut quiet_since = (thread_cpu(), program_hits());
    let t = Instant::now();
    loop {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "after 60 s our signals still reach the program's handler ({} so far)",
            program_hits()
        );
        burn_cpu_alpha(Duration::from_millis(5));
        if program_hits() != quiet_since.1 {
            quiet_since = (thread_cpu(), program_hits());
        } else if thread_cpu() - quiet_since.0 >= Duration::from_millis(100) {
            break;
        }
    }
    let quiet = program_hits();
    burn_cpu_alpha(Duration::from_millis(300));
    assert_eq!(
        program_hits(),
        quiet,
        "our signals reached the program's handler after they had stopped"
    );
    assert_eq!(sigprof_disposition(), program_handler_address());
    let p = s.stop();
    let w = taken_over(&p)
        .unwrap_or_else(|| panic!("no take-over warning: {:?}", p.warnings()))
        .clone();
    assert!(
        !p.warnings().iter().any(|w| w.contains("achieved")),
        "a low-rate warning blames something else: {:?}",
        p.warnings()
    );
    // "taken over by the program 0.123 s after start": when the watcher noticed.
    let noticed: f64 = w
        .split("taken over by the program ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time in: {w}"));
    let latency = (noticed - replaced_at.as_secs_f64()).max(0.0);
    let strays = program_hits();
    let bound = (latency * hz as f64).ceil() as u64 + 2;
    println!(
        "{test}: {strays} stray signals; the watcher noticed within {:.1} ms of the take-over \
         (an upper bound: it includes start's own time; stray bound {bound}); warning: {w}",
        latency * 1e3
    );
    assert!(
        strays <= bound,
        "{strays} of our signals reached the program's handler, more than {hz} Hz over the \
         {:.1} ms the watcher took to notice (+2)",
        latency * 1e3
    );
    assert_eq!(sigprof_disposition(), program_handler_address());
    reset();
}

#[test]
fn perf_signals_stop_reaching_a_replacing_handler() {
    our_signals_stop_reaching_the_programs_handler(
        "perf_signals_stop_reaching_a_replacing_handler",
        Source::PerfTaskClock,
    );
}

#[test]
fn tgkill_signals_stop_reaching_a_replacing_handler() {
    our_signals_stop_reaching_the_programs_handler(
        "tgkill_signals_stop_reaching_a_replacing_handler",
        Source::Tgkill,
    );
}

#[test]
fn setitimer_signals_stop_reaching_a_replacing_handler() {
    our_signals_stop_reaching_the_programs_handler(
        "setitimer_signals_stop_reaching_a_replacing_handler",
        Source::Setitimer,
    );
}

/// A snapshot taken right after the take-over says so too (before the watcher's next look).
#[test]
fn a_snapshot_reports_the_take_over() {
    let _g = serial();
    reset();
    let s = profpoint_heatmap::start(Config::new().hz(1000).source(Source::Setitimer)).unwrap();
    assert!(taken_over(&s.snapshot()).is_none());
    set_disposition(libc::SIG_IGN, 0);
    let p = s.snapshot();
    let w = taken_over(&p).unwrap_or_else(|| panic!("no take-over warning: {:?}", p.warnings()));
    assert!(w.contains("now SIG_IGN"), "{w}");
    drop(s.stop());
    assert_eq!(
        sigprof_disposition(),
        libc::SIG_IGN,
        "the program's SIG_IGN stays"
    );
    reset();
}
