//! Tracepoints: typed probes registered and removed at run time while sites fire.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the tracepoints carry.
#[derive(Debug)]
pub struct Task {
    /// Identifies the task.
    pub id: u32,
    /// Its priority.
    pub prio: i32,
}

// The tests of this file run side by side in one process under `cargo test`: each registers
// probes on tracepoints of its own and counts their hits exactly.
profpoint::tracepoint!(pub fn sched_switch(prev: &Task, next: &Task));
profpoint::tracepoint!(pub fn switch_storm(prev: &Task, next: &Task));
profpoint::tracepoint!(fn wakeup(task: &Task) if task.prio > 0);
profpoint::tracepoint!(fn tick(n: u64));
profpoint::tracepoint!(fn lazy_tick(n: u64));
profpoint::tracepoint!(fn self_dropping_tick(n: u64));
profpoint::tracepoint!(fn slow_tick(n: u64));

fn info(name: &str) -> profpoint::tracepoint::TracepointInfo {
    profpoint::tracepoints()
        .into_iter()
        .find(|t| t.name == format!("tracepoints::{name}"))
        .unwrap_or_else(|| panic!("no tracepoint {name}"))
}

#[test]
fn probes_run_in_registration_order_until_their_handle_drops() {
    let log = Arc::new(Mutex::new(Vec::new()));
    assert!(!trace_sched_switch_enabled());
    trace_sched_switch(&Task { id: 0, prio: 0 }, &Task { id: 0, prio: 0 }); // no probe: nothing
    let (l1, l2) = (log.clone(), log.clone());
    let h1 =
        register_trace_sched_switch(move |p, n| l1.lock().unwrap().push(("first", p.id, n.id)))
            .unwrap();
    let h2 =
        register_trace_sched_switch(move |p, n| l2.lock().unwrap().push(("second", p.id, n.id)))
            .unwrap();
    assert!(trace_sched_switch_enabled());
    trace_sched_switch(&Task { id: 1, prio: 0 }, &Task { id: 2, prio: 0 });
    drop(h1);
    trace_sched_switch(&Task { id: 3, prio: 0 }, &Task { id: 4, prio: 0 });
    h2.unregister();
    assert!(!trace_sched_switch_enabled());
    trace_sched_switch(&Task { id: 5, prio: 0 }, &Task { id: 6, prio: 0 });
    assert_eq!(
        *log.lock().unwrap(),
        vec![("first", 1, 2), ("second", 1, 2), ("second", 3, 4)]
    );
    let i = info("sched_switch");
    assert_eq!((i.enabled, i.probes, i.hits), (false, 0, 2));
}

#[test]
fn the_condition_is_checked_only_when_enabled_and_gates_the_probes() {
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    let h = register_trace_wakeup(move |t| {
        s.fetch_add(t.id as u64, Ordering::Relaxed);
    })
    .unwrap();
    trace_wakeup(&Task { id: 10, prio: 1 });
    trace_wakeup(&Task { id: 100, prio: 0 }); // condition false: no probe, no hit
    drop(h);
    assert_eq!(seen.load(Ordering::Relaxed), 10);
    assert_eq!(info("wakeup").hits, 1);
}

#[test]
fn the_macro_call_site_evaluates_arguments_only_when_enabled() {
    let evaluated = AtomicU64::new(0);
    let expensive = || {
        evaluated.fetch_add(1, Ordering::Relaxed);
        7u64
    };
    profpoint::trace!(lazy_tick(expensive()));
    assert_eq!(
        evaluated.load(Ordering::Relaxed),
        0,
        "disabled: argument not computed"
    );
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    let h = register_trace_lazy_tick(move |n| {
        g.store(n, Ordering::Relaxed);
    })
    .unwrap();
    profpoint::trace!(lazy_tick(expensive()));
    assert_eq!(evaluated.load(Ordering::Relaxed), 1);
    assert_eq!(got.load(Ordering::Relaxed), 7);
    drop(h);
}

#[test]
fn the_counting_probe_counts_hits_by_glob() {
    assert_eq!(profpoint::trace_count("tracepoints::ti*"), 1);
    for i in 0..1000 {
        trace_tick(i);
    }
    let i = info("tick");
    assert_eq!(
        (i.enabled, i.counting, i.probes, i.hits),
        (true, true, 0, 1000)
    );
    assert_eq!(profpoint::trace_uncount("tracepoints::tick"), 1);
    trace_tick(0);
    assert_eq!(info("tick").hits, 1000);
    assert!(!trace_tick_enabled());
    // Listed even when never fired.
    assert!(
        profpoint::tracepoints()
            .iter()
            .any(|t| t.name == "tracepoints::wakeup")
    );
}

#[test]
fn a_probe_may_drop_its_own_handle_without_deadlock() {
    let slot: Arc<Mutex<Option<profpoint::tracepoint::ProbeHandle>>> = Arc::new(Mutex::new(None));
    let calls = Arc::new(AtomicU64::new(0));
    let (s, c) = (slot.clone(), calls.clone());
    let h = register_trace_self_dropping_tick(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
        // Unregisters itself from inside its own call.
        let handle = s.lock().unwrap().take();
        drop(handle);
    })
    .unwrap();
    *slot.lock().unwrap() = Some(h);
    trace_self_dropping_tick(1);
    trace_self_dropping_tick(2);
    assert_eq!(
        calls.load(Ordering::Relaxed),
        1,
        "gone after its first call"
    );
    assert!(!trace_self_dropping_tick_enabled());
    profpoint::tracepoint::synchronize_unregister();
}

/// Sets a flag when dropped: the probe's captured data.
struct DropFlag(Arc<AtomicBool>, Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        // A call still running while its closure is freed would be a use after free.
        assert!(
            !self.1.load(Ordering::SeqCst),
            "captured data freed during a call"
        );
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn captured_data_is_freed_only_when_no_call_can_be_running() {
    let dropped = Arc::new(AtomicBool::new(false));
    let in_call = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(dropped.clone(), in_call.clone());
    let ic = in_call.clone();
    let h = register_trace_slow_tick(move |_| {
        let _keep = &flag;
        ic.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        ic.store(false, Ordering::SeqCst);
    })
    .unwrap();
    let firing = std::thread::spawn(|| trace_slow_tick(1));
    while !in_call.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    // Unregister while the call runs on the other thread: returns after the grace period.
    h.unregister();
    assert!(
        dropped.load(Ordering::SeqCst),
        "freed once the grace period ended"
    );
    assert!(!in_call.load(Ordering::SeqCst));
    firing.join().unwrap();
}

#[test]
fn probes_come_and_go_thousands_of_times_while_threads_fire() {
    const ROUNDS: usize = 2_000;
    let stop = Arc::new(AtomicBool::new(false));
    let fired = Arc::new(AtomicU64::new(0));
    // A probe that stays for the whole run: it must see every firing while it is registered.
    let total = Arc::new(AtomicU64::new(0));
    let t = total.clone();
    let keeper = register_trace_switch_storm(move |_, _| {
        t.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    let violations = Arc::new(AtomicU64::new(0));
    let firers: Vec<_> = (0..2)
        .map(|_| {
            let (stop, fired) = (stop.clone(), fired.clone());
            std::thread::spawn(move || {
                let (a, b) = (Task { id: 1, prio: 0 }, Task { id: 2, prio: 0 });
                let mut n = 0u64;
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    trace_switch_storm(&a, &b);
                    n += 1;
                }
                fired.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    for _ in 0..ROUNDS {
        let gone = Arc::new(AtomicBool::new(false));
        let (g, v) = (gone.clone(), violations.clone());
        let h = register_trace_switch_storm(move |_, _| {
            if g.load(Ordering::SeqCst) {
                v.fetch_add(1, Ordering::Relaxed);
            }
        })
        .unwrap();
        std::thread::yield_now();
        h.unregister();
        // From here on, no new call of that probe may start.
        gone.store(true, Ordering::SeqCst);
    }
    stop.store(true, Ordering::Relaxed);
    for f in firers {
        f.join().unwrap();
    }
    drop(keeper);
    profpoint::tracepoint::synchronize_unregister();
    assert_eq!(
        violations.load(Ordering::Relaxed),
        0,
        "a removed probe ran after unregister returned"
    );
    let fired = fired.load(Ordering::Relaxed);
    assert!(fired > 0);
    assert_eq!(
        total.load(Ordering::Relaxed),
        fired,
        "the long-lived probe saw every firing"
    );
    assert_eq!(info("switch_storm").hits, fired);
}

profpoint::tracepoint!(fn self_removing(n: u64));

#[test]
fn probes_on_two_threads_dropping_their_own_handles_at_once_do_not_deadlock() {
    for _round in 0..50 {
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let handles: Vec<Arc<Mutex<Option<profpoint::tracepoint::ProbeHandle>>>> =
            (0..2).map(|_| Arc::new(Mutex::new(None))).collect();
        for (i, slot) in handles.iter().enumerate() {
            let (s, b) = (slot.clone(), barrier.clone());
            let h = register_trace_self_removing(move |n| {
                if n == i as u64 {
                    // Both threads get here together, then both unregister from inside.
                    b.wait();
                    drop(s.lock().unwrap().take());
                }
            })
            .unwrap();
            *slot.lock().unwrap() = Some(h);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..2u64 {
            let tx = tx.clone();
            std::thread::spawn(move || {
                trace_self_removing(i);
                tx.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("a probe unregistering itself deadlocked");
        }
        assert!(!trace_self_removing_enabled());
    }
    profpoint::tracepoint::synchronize_unregister();
}

profpoint::tracepoint!(fn across_fork(n: u64));

/// A `fork` taken while another thread is inside a tracepoint's hook (its read section open)
/// leaves the child a copy of that open section, from a thread the child does not have. The
/// child must still be able to change probes (which waits for a grace period) and to exit
/// (dropping handles does the same): no child may hang.
#[cfg(unix)]
#[test]
fn forked_children_change_probes_while_the_parent_fires() {
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    let permanent = register_trace_across_fork(move |_| {
        s.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let firer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            // Relaxed: a stop flag.
            while !stop.load(Ordering::Relaxed) {
                trace_across_fork(n);
                n += 1;
            }
            n
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    let mut hung = 0;
    for _ in 0..40 {
        // SAFETY: the child uses only the tracepoint API and exits with _exit; alarm turns a
        // hang into a SIGALRM death that the parent counts.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            // SAFETY: plain calls in the child.
            unsafe { libc::alarm(5) };
            let mine = Arc::new(AtomicU64::new(0));
            let m = mine.clone();
            let h = register_trace_across_fork(move |_| {
                m.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
            trace_across_fork(7);
            h.unregister();
            trace_across_fork(8);
            let code = if mine.load(Ordering::Relaxed) == 1 {
                0
            } else {
                3
            };
            // SAFETY: leaving the child without running the parent's at-exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(child, &mut status, 0) };
        if libc::WIFSIGNALED(status) {
            hung += 1;
        } else {
            assert_eq!(libc::WEXITSTATUS(status), 0, "the child's probe ran once");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let fired = firer.join().unwrap();
    drop(permanent);
    assert_eq!(
        hung, 0,
        "{hung} of 40 children hung changing probes after the fork"
    );
    assert!(fired > 0 && seen.load(Ordering::Relaxed) == fired);
}

profpoint::tracepoint!(fn fork_race(n: u64));

/// The lock order of the fork handlers: a fork taken while a grace period (thread B) waits for
/// a probe (thread C) that is about to register a probe itself. The fork must wait for the
/// grace period before taking the writers' lock, or C (waiting for that lock) never lets B
/// finish and all three hang. Run in a child process with an alarm, so a hang is a failure.
#[cfg(unix)]
#[test]
fn a_fork_during_a_grace_period_that_waits_for_a_registering_probe_completes() {
    // The scenario's locks must be the only ones in play when it forks: not those of the other
    // tests of this file, which `cargo test` runs beside it as threads of one process.
    if !common::runner::in_own_process(
        "a_fork_during_a_grace_period_that_waits_for_a_registering_probe_completes",
    ) {
        return;
    }
    // SAFETY: the child runs the scenario and leaves with _exit; the alarm turns a deadlock
    // into a SIGALRM death.
    let scenario = unsafe { libc::fork() };
    assert!(scenario >= 0);
    if scenario == 0 {
        // SAFETY: plain calls in the child.
        unsafe { libc::alarm(10) };
        let inside = Arc::new(std::sync::Barrier::new(2));
        let go = Arc::new(AtomicBool::new(false));
        let (i, g) = (inside.clone(), go.clone());
        let probe = register_trace_fork_race(move |n| {
            if n == 1 {
                i.wait();
                // Relaxed: a flag polled in a loop.
                while !g.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                // Takes the writers' lock from inside the read section.
                drop(register_trace_fork_race(|_| {}));
            }
        })
        .unwrap();
        let other = register_trace_fork_race(|_| {}).unwrap();
        let c = std::thread::spawn(|| trace_fork_race(1));
        inside.wait();
        // B: a grace period that waits for C's read section.
        let b = std::thread::spawn(move || other.unregister());
        std::thread::sleep(Duration::from_millis(50));
        let g = go.clone();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            // Relaxed: see above.
            g.store(true, Ordering::Relaxed);
        });
        // A: fork now, while B holds the grace-period lock.
        // SAFETY: the grandchild only exits.
        let grandchild = unsafe { libc::fork() };
        if grandchild == 0 {
            // SAFETY: leaving at once.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(grandchild, &mut status, 0) };
        c.join().unwrap();
        b.join().unwrap();
        releaser.join().unwrap();
        drop(probe);
        // SAFETY: leaving the scenario process.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(scenario, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the scenario hung or failed: status {status:#x}"
    );
}
