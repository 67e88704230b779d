//! Model checking of the key toggling (`RUSTFLAGS="--cfg loom"`, docs/loom.md), with the
//! portable key (`key.rs`'s atomic backend: the static-key backend patches code, which loom
//! cannot run).
//!
//! Real code: `__register`, `ProbeHandle::drop` (`unregister`), `set_counting`, `update`,
//! `refresh_key`, `Key::set` and `Key::is_enabled`, `reclaim` and the grace period, on loom's
//! atomics and the writers' lock as a loom `Mutex`. Stand-ins: the tracepoint is made by
//! `Tracepoint::new` on the heap (not a linker-gathered static: nothing here needs its index);
//! no thread is in a read section, so the grace period waits for no shard.

use super::*;
use std::collections::BTreeSet;

fn probe() -> Box<dyn Any + Send + Sync> {
    Box::new(|_: u64| {}) as Box<dyn Any + Send + Sync>
}

/// Three threads switch one tracepoint's key at once: the main thread registers a probe,
/// a second registers one and drops it, a third turns counting on and off. Whatever the
/// order, the key ends on (one probe is left: enabled twice, disabled once, stays
/// enabled), with one probe and counting off; dropping the last probe turns it off.
#[test]
fn loom_key_enabled_twice_disabled_once_stays_enabled() {
    // Probes the second thread's tracepoint had right after its registration, over every
    // execution: 1 and 2 (it ran both before and after the main thread's registration).
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let seen_in = seen.clone();
    crate::sync::model("key toggling", move || {
        let tp: &'static Tracepoint =
            Box::leak(Box::new(Tracepoint::new("loom::toggled", file!(), line!())));
        let seen = seen_in.clone();
        let other = loom::thread::spawn(move || {
            let h = tp.__register(probe());
            assert!(
                tp.is_enabled(),
                "off right after this thread's registration"
            );
            // Relaxed: a count for the coverage check, read by the registering thread.
            seen.lock()
                .unwrap()
                .insert(tp.nprobes.load(Ordering::Relaxed));
            drop(h);
        });
        let counter = loom::thread::spawn(move || {
            tp.set_counting(true);
            assert!(tp.is_enabled(), "off right after counting was turned on");
            tp.set_counting(false);
        });
        let mine = tp.__register(probe());
        other.join().unwrap();
        counter.join().unwrap();
        assert!(tp.is_enabled(), "a probe is left but the key is off");
        // Relaxed: every writer has been joined.
        assert_eq!(tp.nprobes.load(Ordering::Relaxed), 1);
        assert!(!tp.counting.load(Ordering::Relaxed));
        drop(mine);
        assert!(
            !tp.is_enabled(),
            "no probe and no counting, but the key is on"
        );
    });
    let seen = seen.lock().unwrap();
    assert_eq!(*seen, BTreeSet::from([1, 2]), "schedules explored");
}
