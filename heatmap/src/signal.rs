//! The sampler core's signal side, shared by the heatmap (`sampler/`) and the alternating
//! windows (`pmu/live/`): installing a handler (refusing a foreign one) and putting the previous
//! disposition back, the handler's entry and exit discipline, and reading what the kernel
//! passed (the interrupted pc, the `si_fd` of a perf overflow). Each consumer has one static
//! [`Published`] value and an `extern "C"` handler of a few lines that calls [`Published::enter`].
//!
//! # Publication and drain
//!
//! A consumer's state (the heatmap's bucket table, the windows' slots and records) is published
//! through [`Published`]: a pointer and a count of handlers inside it. Stopping must not free the
//! state while a handler on another CPU still uses it, so every handler brackets its use:
//! `active += 1; p = ptr; ...; active -= 1`, and [`Published::unpublish_and_drain`] does
//! `ptr = null; while active != 0 {}`. Both sides use `SeqCst`, the store-then-load pattern
//! (Dekker's) that needs it: either the handler's increment is seen by the drain, which then
//! waits for it, or the handler's load comes after the null store and sees null.
//!
//! # Async-signal safety
//!
//! [`Published::enter`] touches exactly:
//! - `errno` of the interrupted thread, through `__errno_location()` (glibc: a fixed
//!   initial-exec TLS slot, no lazy initialisation), saved on entry and restored on exit, even
//!   though nothing in between should change it (the pmu's handler makes `ioctl`s and a `read`);
//! - the `Published` value's two atomics (static memory);
//! - whatever the consumer's closure touches, which each consumer documents: the heatmap one
//!   bucket counter (`sampler/handler.rs`), the windows their thread's slot and one record
//!   (`pmu/live/handler.rs`).
//!
//! It calls no function that allocates, locks, blocks or touches TLS that might need lazy
//! initialisation; the closure is inlined into the handler. `tests/async_signal_safety.rs`
//! checks the heatmap's handler with a counting global allocator, an errno marker and a stress
//! run under 10 kHz sampling; `tests/pmu_software.rs` runs the windows' handler the same way.
//!
//! # Disposition
//!
//! [`install`] swaps a handler in atomically with one `sigaction` call; if the previous
//! disposition was a handler (anything but `SIG_DFL` or `SIG_IGN`), it puts that handler back
//! and fails with [`InstallError::InUse`]: chaining to a foreign profiler's handler would
//! double-count or confuse both. [`Installed::restore`] puts the previous disposition back on
//! stop, but only while the disposition is still ours: a program that installed its own handler
//! (or `SIG_IGN`/`SIG_DFL`) after we started keeps it, and `restore` reports what it found
//! instead (the heatmap turns that into a warning). The check is a query followed by a set, not
//! one atomic swap: a program changing the disposition between the two (a window of one system
//! call) would still be overwritten. When the previous disposition was `SIG_DFL` (terminate the
//! process), `restore` first sets `SIG_IGN`, which makes the kernel discard any instance still
//! pending for any thread, so a late sample can never kill the program after we are gone. At
//! the process's end (`Sampler::stop_for_exit`) it stays `SIG_IGN`: an emulator may keep its
//! own queue of pending signals, which `SIG_IGN` does not empty (qemu-user killed 3 of 60
//! exiting children with `SIGPROF` before this).
//! [`Installed::replaced`] is the same query, used by the heatmap's watcher to notice a
//! replacement while sampling and stop sending signals to a handler that is not ours. The
//! windows stop differently ([`Installed::ignore`], close their counters, then
//! [`Installed::put_back`]): their counters can raise the signal until closed. Handlers are
//! installed with `SA_RESTART` (restartable system calls such as `read` restart transparently),
//! `SA_SIGINFO` (to get the `ucontext_t` and `si_fd`) and `SA_ONSTACK` (a thread running on its
//! alternate signal stack, or near its guard page, is not pushed over the edge by our frame),
//! and with every other signal but the synchronous faults blocked while they run, so none
//! nests on our frame in that small stack (`sys::handler_mask`).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::sys;

/// An `SA_SIGINFO` handler.
pub(crate) type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// A consumer's state as its handler sees it: published by the sampler, withdrawn and drained
/// on stop. See the module docs.
#[derive(Debug)]
pub(crate) struct Published<T> {
    /// The state; null while no sampler of this consumer runs.
    ptr: AtomicPtr<T>,
    /// Number of handlers currently between their load of `ptr` and their last use of it.
    active: AtomicUsize,
}

impl<T> Published<T> {
    /// Nothing published.
    pub(crate) const fn new() -> Self {
        Published {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            active: AtomicUsize::new(0),
        }
    }

    /// The handler's entry and exit discipline: saves errno, marks a handler active, runs `f`
    /// on the published state (if any), unmarks, restores errno. `f` must be async-signal-safe.
    #[inline(always)]
    pub(crate) fn enter(&self, f: impl FnOnce(&T)) {
        // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's life.
        let errno_slot = unsafe { libc::__errno_location() };
        // SAFETY: as above; a plain read of an int.
        let saved_errno = unsafe { *errno_slot };
        // SeqCst: pairs with the SeqCst store/load in `unpublish_and_drain` (see module docs).
        self.active.fetch_add(1, Ordering::SeqCst);
        let p = self.ptr.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a non-null pointer is kept alive by the running sampler until
            // `unpublish_and_drain` has seen `active` reach 0, which cannot happen before our
            // decrement below.
            f(unsafe { &*p });
        }
        // SeqCst: as above; also orders the handler's writes before the drain's final reads.
        self.active.fetch_sub(1, Ordering::SeqCst);
        // SAFETY: restoring the value read above into the same slot.
        unsafe { *errno_slot = saved_errno };
    }

    /// Whether no handler is inside the bracket now. SeqCst: a handler whose SeqCst increment
    /// is not seen here has not made its (SeqCst) loads yet, so it will see every store the
    /// caller made before this call (the stack sampler's context reuse relies on it).
    pub(crate) fn idle(&self) -> bool {
        self.active.load(Ordering::SeqCst) == 0
    }

    /// Publishes `state` to the handler.
    pub(crate) fn publish(&self, state: *const T) {
        // SeqCst: see the module docs; also releases the state's initialised contents.
        self.ptr.store(state as *mut T, Ordering::SeqCst);
    }

    /// Withdraws the state from the handler and waits until no handler still uses it.
    /// Afterwards the caller may read the final contents and free the state. `forked`: in a
    /// forked child, `active` may count a handler that was running on another thread at the
    /// fork; that thread was not copied and the count would never drain, and no handler runs
    /// in the child but its own thread's (not running now: we are), so it does not wait.
    pub(crate) fn unpublish_and_drain(&self, forked: bool) {
        // SeqCst: see the module docs.
        self.ptr.store(std::ptr::null_mut(), Ordering::SeqCst);
        if forked {
            return;
        }
        // SeqCst: see the module docs.
        while self.active.load(Ordering::SeqCst) != 0 {
            // A handler runs for well under a microsecond (the windows' for a few system
            // calls); yield rather than burn the CPU in case the interrupted thread is on ours.
            std::thread::yield_now();
        }
    }
}

/// The interrupted instruction pointer, read from the `ucontext_t` the kernel passed
/// (`uc_mcontext.gregs[REG_RIP]` on x86_64, `uc_mcontext.pc` on aarch64).
///
/// # Safety
///
/// `uc` must be the third argument of an `SA_SIGINFO` handler (a valid `ucontext_t`).
#[inline(always)]
pub(crate) unsafe fn interrupted_pc(uc: *mut libc::c_void) -> u64 {
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

/// The descriptor a perf overflow signal names (`si_fd`, set by `F_SETSIG`).
///
/// # Safety
///
/// `info` must be the second argument of an `SA_SIGINFO` handler (a valid `siginfo_t`).
#[inline(always)]
pub(crate) unsafe fn overflow_fd(info: *mut libc::siginfo_t) -> libc::c_int {
    // SAFETY: the caller guarantees a valid siginfo; si_fd lies at SI_FD_OFFSET (pinned by
    // sys.rs's tests).
    unsafe { *((info as *const u8).add(sys::SI_FD_OFFSET) as *const libc::c_int) }
}

/// Why [`install`] failed.
#[derive(Debug)]
pub(crate) enum InstallError {
    /// `sigaction` itself failed.
    Sigaction(std::io::Error),
    /// Another handler owns the signal (its address); it was left in place.
    InUse(libc::sighandler_t),
}

/// Our handler for a signal, and the disposition it replaced.
#[derive(Clone, Copy)]
pub(crate) struct Installed {
    signal: libc::c_int,
    handler: libc::sighandler_t,
    previous: libc::sigaction,
}

impl std::fmt::Debug for Installed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installed")
            .field("signal", &self.signal)
            .field("previous", &self.previous.sa_sigaction)
            .field("previous_flags", &self.previous.sa_flags)
            .finish()
    }
}

/// Installs `handler` for `signal`, or fails if another handler owns it (left in place).
pub(crate) fn install(signal: libc::c_int, handler: Handler) -> Result<Installed, InstallError> {
    let address = handler as libc::sighandler_t;
    // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, empty mask, no flags).
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = address;
    new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
    new.sa_mask = sys::handler_mask();
    // SAFETY: as for `new`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live sigaction values; the caller names a valid signal.
    if unsafe { libc::sigaction(signal, &new, &mut old) } != 0 {
        return Err(InstallError::Sigaction(std::io::Error::last_os_error()));
    }
    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
        // SAFETY: putting back exactly what was there.
        unsafe { libc::sigaction(signal, &old, std::ptr::null_mut()) };
        return Err(InstallError::InUse(old.sa_sigaction));
    }
    Ok(Installed {
        signal,
        handler: address,
        previous: old,
    })
}

/// The current disposition of `signal` (`SIG_DFL`, `SIG_IGN` or a handler's address).
pub(crate) fn current(signal: libc::c_int) -> libc::sighandler_t {
    // SAFETY: an all-zero sigaction is a valid out-parameter; a null `act` only queries.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut now);
        now.sa_sigaction
    }
}

/// `SIG_DFL`, `SIG_IGN` or "a handler at 0x...", for messages.
pub(crate) fn describe(disposition: libc::sighandler_t) -> String {
    match disposition {
        libc::SIG_DFL => "SIG_DFL".to_owned(),
        libc::SIG_IGN => "SIG_IGN".to_owned(),
        h => format!("a handler at {h:#x}"),
    }
}

impl Installed {
    /// `None` while the signal's disposition is our handler; otherwise the disposition found.
    pub(crate) fn replaced(&self) -> Option<libc::sighandler_t> {
        let now = current(self.signal);
        (now != self.handler).then_some(now)
    }

    /// Sets `SIG_IGN`, which discards every pending instance of the signal process-wide
    /// (signal(7)).
    pub(crate) fn ignore(&self) {
        // SAFETY: an all-zero sigaction with SIG_IGN and an empty mask is valid.
        unsafe {
            let mut ign: libc::sigaction = std::mem::zeroed();
            ign.sa_sigaction = libc::SIG_IGN;
            libc::sigemptyset(&mut ign.sa_mask);
            libc::sigaction(self.signal, &ign, std::ptr::null_mut());
        }
    }

    /// Puts the previous disposition back, whatever is installed now.
    pub(crate) fn put_back(self) {
        // SAFETY: `previous` is the sigaction value the kernel gave us in `install`.
        unsafe { libc::sigaction(self.signal, &self.previous, std::ptr::null_mut()) };
    }

    /// Puts the previous disposition back, discarding pending instances first when it was
    /// `SIG_DFL`, if our handler is still installed. Otherwise changes nothing and returns the
    /// disposition found (the program installed its own after we started: it stays).
    /// `exiting`: the process is ending, and a previous `SIG_DFL` stays `SIG_IGN` (see
    /// [`crate::Sampler::stop_for_exit`]).
    pub(crate) fn restore(self, exiting: bool) -> Result<(), libc::sighandler_t> {
        if let Some(now) = self.replaced() {
            return Err(now);
        }
        if self.previous.sa_sigaction == libc::SIG_DFL {
            self.ignore();
            if exiting {
                return Ok(());
            }
        }
        self.put_back();
        Ok(())
    }
}
