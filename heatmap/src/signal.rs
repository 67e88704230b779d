//! The `SIGPROF` handler: one relaxed increment per sample, and its safe installation.
//!
//! # Mechanism
//!
//! Whatever the sample source (a per-thread perf `task-clock` event routed to its own thread,
//! or `setitimer(ITIMER_PROF)`), a sample is a `SIGPROF` delivered to the thread that was
//! running. [`handler`] reads the interrupted instruction pointer from the `ucontext_t`
//! (`uc_mcontext.gregs[REG_RIP]` on x86_64, `uc_mcontext.pc` on aarch64) and hands it to
//! [`TableSet::hit`], which bounds-checks it against each chunk's segments and increments one
//! preallocated atomic counter.
//!
//! The table is published through the [`TABLE`] pointer. Stopping must not free it while a
//! handler on another CPU is still inside it, so every handler brackets its use with
//! [`ACTIVE`]: `ACTIVE += 1; t = TABLE; ...; ACTIVE -= 1`, and [`unpublish_and_drain`] does
//! `TABLE = null; while ACTIVE != 0 {}`. Both sides use `SeqCst`, the store-then-load pattern
//! (Dekker's) that needs it: either the handler's increment is seen by the drain, which then
//! waits for it, or the handler's load comes after the null store and sees null.
//!
//! # Async-signal safety
//!
//! The handler touches exactly:
//! - `errno` of the interrupted thread, through `__errno_location()` (glibc: a fixed
//!   initial-exec TLS slot, no lazy initialisation), saved on entry and restored on exit, even
//!   though nothing in between can change it;
//! - the `ucontext_t` the kernel passed (read only);
//! - [`ACTIVE`] and [`TABLE`] (atomics in static memory);
//! - the published [`TableSet`]: its chunk list and each chunk's slot array (read only), and
//!   one `AtomicU64` counter (a bucket or "other").
//!
//! It calls no function that allocates, locks, blocks or touches TLS that might need lazy
//! initialisation; `partition_point` is an inlined binary search. `tests/async_signal_safety.rs`
//! checks this with a counting global allocator and a stress run under 10 kHz sampling.
//!
//! # Disposition
//!
//! [`install`] swaps our handler in atomically with one `sigaction` call; if the previous
//! disposition was a handler (anything but `SIG_DFL` or `SIG_IGN`), it puts that handler back
//! and fails with [`StartError::SignalInUse`]: chaining to a foreign profiler's handler would
//! double-count or confuse both. [`restore`] puts the previous disposition back on stop, but
//! only while the disposition is still ours: a program that installed its own `SIGPROF`
//! handler (or `SIG_IGN`/`SIG_DFL`) after we started keeps it, and `restore` reports what it
//! found instead (the sampler turns that into a warning). The check is a query followed by a
//! set, not one atomic swap: a program changing the disposition between the two (a window of
//! one system call) would still be overwritten. When the previous disposition was `SIG_DFL`
//! (terminate the process), `restore` first sets `SIG_IGN`, which makes the kernel discard
//! any `SIGPROF` still pending for any thread, so a late sample can never kill the program
//! after we are gone. [`replaced`] is the same query, used by the watcher thread to notice a
//! replacement while sampling and stop sending signals to a handler that is not ours. The handler is installed with `SA_RESTART` (restartable system
//! calls such as `read` restart transparently), `SA_SIGINFO` (to get the `ucontext_t`) and
//! `SA_ONSTACK` (a thread running on its alternate signal stack, or near its guard page, is not
//! pushed over the edge by our frame), and with every other signal but the synchronous faults
//! blocked while it runs, so none nests on our frame in that small stack (`sys::handler_mask`).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::buckets::TableSet;
use crate::error::StartError;

/// The signal every source delivers.
pub(crate) const SIGNAL: libc::c_int = libc::SIGPROF;

/// The table the handler counts into; null when no sampler runs.
pub(crate) static TABLE: AtomicPtr<TableSet> = AtomicPtr::new(std::ptr::null_mut());

/// Number of handlers currently between their `TABLE` load and their last use of it.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// The interrupted instruction pointer, read from the `ucontext_t` the kernel passed.
///
/// # Safety
///
/// `uc` must be the third argument of an `SA_SIGINFO` handler (a valid `ucontext_t`).
#[inline(always)]
unsafe fn interrupted_pc(uc: *mut libc::c_void) -> u64 {
    let uc = uc as *const libc::ucontext_t;
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the caller guarantees `uc` is a valid ucontext_t; REG_RIP indexes gregs.
        unsafe { (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64 }
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: the caller guarantees `uc` is a valid ucontext_t.
        unsafe { (*uc).uc_mcontext.pc }
    }
}

/// The `SIGPROF` handler. See the module docs for what it touches.
extern "C" fn handler(_sig: libc::c_int, _info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's life.
    let errno_slot = unsafe { libc::__errno_location() };
    // SAFETY: as above; a plain read of an int.
    let saved_errno = unsafe { *errno_slot };
    // SeqCst: pairs with the SeqCst store/load in `unpublish_and_drain` (see module docs).
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    let table = TABLE.load(Ordering::SeqCst);
    if !table.is_null() && !uc.is_null() {
        // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO handler.
        let pc = unsafe { interrupted_pc(uc) };
        // SAFETY: a non-null TABLE points to a TableSet kept alive by the running Sampler until
        // `unpublish_and_drain` has seen ACTIVE reach 0, which cannot happen before our
        // decrement below.
        unsafe { &*table }.hit(pc);
    }
    // SeqCst: as above; also orders our counter increment before the drain's final reads.
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    // SAFETY: restoring the value read above into the same slot.
    unsafe { *errno_slot = saved_errno };
}

/// The disposition that was in place before [`install`].
#[derive(Clone, Copy)]
pub(crate) struct Previous(libc::sigaction);

impl std::fmt::Debug for Previous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Previous")
            .field("sa_sigaction", &self.0.sa_sigaction)
            .field("sa_flags", &self.0.sa_flags)
            .finish()
    }
}

/// Installs [`handler`] for [`SIGNAL`], or fails if another handler owns it.
pub(crate) fn install() -> Result<Previous, StartError> {
    // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, empty mask, no flags).
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = handler_address();
    new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
    new.sa_mask = crate::sys::handler_mask();
    // SAFETY: as for `new`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live sigaction values; SIGPROF is a valid signal.
    if unsafe { libc::sigaction(SIGNAL, &new, &mut old) } != 0 {
        return Err(StartError::Sigaction(std::io::Error::last_os_error()));
    }
    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
        // SAFETY: putting back exactly what was there.
        unsafe { libc::sigaction(SIGNAL, &old, std::ptr::null_mut()) };
        return Err(StartError::SignalInUse {
            handler: old.sa_sigaction,
        });
    }
    Ok(Previous(old))
}

/// Our handler, as `sigaction` reports it.
fn handler_address() -> libc::sighandler_t {
    handler as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
        as libc::sighandler_t
}

/// The current disposition of [`SIGNAL`] (`SIG_DFL`, `SIG_IGN` or a handler's address).
pub(crate) fn current() -> libc::sighandler_t {
    // SAFETY: an all-zero sigaction is a valid out-parameter; a null `act` only queries.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        libc::sigaction(SIGNAL, std::ptr::null(), &mut now);
        now.sa_sigaction
    }
}

/// `None` while [`SIGNAL`]'s disposition is our handler; otherwise the disposition found.
pub(crate) fn replaced() -> Option<libc::sighandler_t> {
    let now = current();
    (now != handler_address()).then_some(now)
}

/// `SIG_DFL`, `SIG_IGN` or "a handler at 0x...", for messages.
pub(crate) fn describe(disposition: libc::sighandler_t) -> String {
    match disposition {
        libc::SIG_DFL => "SIG_DFL".to_owned(),
        libc::SIG_IGN => "SIG_IGN".to_owned(),
        h => format!("a handler at {h:#x}"),
    }
}

/// Puts the previous disposition back, discarding pending samples first when it was `SIG_DFL`,
/// if our handler is still installed. Otherwise changes nothing and returns the disposition
/// found (the program installed its own after we started: it stays).
pub(crate) fn restore(previous: Previous) -> Result<(), libc::sighandler_t> {
    if let Some(now) = replaced() {
        return Err(now);
    }
    if previous.0.sa_sigaction == libc::SIG_DFL {
        // SAFETY: an all-zero sigaction with SIG_IGN is valid; setting SIG_IGN discards any
        // pending SIGPROF process-wide (signal(7)), so none can be delivered to SIG_DFL.
        unsafe {
            let mut ign: libc::sigaction = std::mem::zeroed();
            ign.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut ign.sa_mask);
            libc::sigaction(SIGNAL, &ign, std::ptr::null_mut());
        }
    }
    // SAFETY: `previous` is the sigaction value the kernel gave us in `install`.
    unsafe { libc::sigaction(SIGNAL, &previous.0, std::ptr::null_mut()) };
    Ok(())
}

/// Publishes `table` to the handler.
pub(crate) fn publish(table: *const TableSet) {
    // SeqCst: see the module docs; also releases the table's initialised contents.
    TABLE.store(table as *mut TableSet, Ordering::SeqCst);
}

/// Withdraws the table from the handler and waits until no handler still uses it. Afterwards
/// the caller may read the final counts and free the table.
pub(crate) fn unpublish_and_drain(forked: bool) {
    // SeqCst: see the module docs.
    TABLE.store(std::ptr::null_mut(), Ordering::SeqCst);
    if forked {
        // A forked child's copy of ACTIVE may count a handler that was running on another
        // thread at the fork: that thread was not copied, and the count would never drain.
        // No handler runs in the child before this point but its own thread's, and that one
        // is not running now (we are).
        return;
    }
    // SeqCst: see the module docs.
    while ACTIVE.load(Ordering::SeqCst) != 0 {
        // A handler runs for well under a microsecond; yield rather than burn the CPU in case
        // the interrupted thread is on our CPU.
        std::thread::yield_now();
    }
}
