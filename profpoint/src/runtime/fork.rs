//! `fork` safety: a child gets a copy of the process's memory but only the forking thread.
//!
//! Two things in that copy would hang the child:
//! - a lock another thread held at the fork (the tracepoint writers' lock, the grace-period
//!   lock, the shard registry) stays locked forever in the child;
//! - a tracepoint read section another thread had open at the fork stays open forever in the
//!   child's copy of that thread's shard, so the child's first grace period (changing probes,
//!   or dropping a probe handle at exit) would wait for it forever. `tests/tracepoints.rs`
//!   saw 29 of 40 children hang this way.
//!
//! So, with `pthread_atfork` (registered once, before `main`): the *prepare* handler takes the
//! three locks in an order no other code can invert (grace period, writers, registry: a
//! grace period waits for read sections, whose probes may take the writers' lock, so the
//! grace-period lock must come first), so no other thread holds one at the fork; the
//! *parent* handler releases them (and the overhead budget's lock, taken between the second and
//! the third: its controller reads the registry while holding it); the *child* handler closes every read section but the
//! forking thread's own (their threads do not exist here) and then releases them. A thread
//! that forks from inside a probe (inside a read section) only tries the grace-period lock
//! (its holder may be waiting for that very section); if another thread held it, the child
//! releases it anyway, since that thread was not copied. The handlers cannot panic: their
//! thread-locals are reached with `try_with`.

#[cfg(unix)]
use crate::shard;
#[cfg(unix)]
use crate::tracepoint;

/// Windows has no `fork`: nothing to register.
#[cfg(not(unix))]
pub(crate) fn init() {}

/// Registers the handlers (once, from the initialiser before `main`).
#[cfg(unix)]
pub(crate) fn init() {
    // SAFETY: three `extern "C" fn()` that live for the whole program; pthread_atfork only
    // records them.
    let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    if r != 0 {
        crate::diag::warn_line!(
            "profpoint: pthread_atfork failed ({}): a forked child may hang changing tracepoint probes",
            std::io::Error::from_raw_os_error(r)
        );
    }
}

#[cfg(unix)]
extern "C" fn prepare() {
    tracepoint::fork_hold(tracepoint::in_read_section());
    crate::budget::fork_hold();
    shard::fork_hold();
}

#[cfg(unix)]
extern "C" fn parent() {
    shard::fork_release(false);
    crate::budget::fork_release(false);
    tracepoint::fork_release(false);
}

#[cfg(unix)]
extern "C" fn child() {
    shard::fork_release(true);
    crate::budget::fork_release(true);
    tracepoint::fork_release(true);
}
