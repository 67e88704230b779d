//! SIGTERM, SIGHUP, SIGINT and SIGQUIT while `top` draws: each ends it as `q` does (the
//! terminal restored: raw mode off, the alternate screen left, the cursor shown), and then by
//! the signal itself, so that whoever sent it sees the process ended by it. Their default
//! action ended the process at once and left the terminal raw, on the alternate screen.
//! (In raw mode the terminal sends no SIGINT for Ctrl-C: that arrives as a key.)

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal caught, 0 for none.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

#[cfg(unix)]
const SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// The handler: one store to an atomic (async-signal-safe: no lock, no allocation, no call).
#[cfg(unix)]
extern "C" fn on_signal(sig: libc::c_int) {
    // Relaxed: a flag the drawing loop reads at its next turn (at most 100 ms later).
    CAUGHT.store(sig, Ordering::Relaxed);
}

/// Catches the signals (before the terminal is set up).
pub(super) fn catch() {
    #[cfg(unix)]
    for sig in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid value to fill; the handler only stores to an
        // atomic, which is async-signal-safe; both pointers are live for the call.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal caught since [`catch`], if any.
pub(super) fn caught() -> Option<i32> {
    // Relaxed: see `on_signal`.
    Some(CAUGHT.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// Ends the process by the signal caught, with its default action (after the terminal was
/// restored); returns when none was caught.
pub(super) fn end_by_the_signal_caught() {
    #[cfg(unix)]
    if let Some(sig) = caught() {
        // SAFETY: restoring a signal's default action and raising it have no preconditions.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A signal sent to the process is caught and named, and the process goes on (it would
    /// have ended at once by SIGTERM's default action).
    #[test]
    fn a_signal_is_caught_and_named() {
        catch();
        assert_eq!(caught(), None);
        // SAFETY: raising a signal whose handler was installed above.
        unsafe { libc::raise(libc::SIGHUP) };
        assert_eq!(caught(), Some(libc::SIGHUP));
        CAUGHT.store(0, Ordering::Relaxed);
    }
}
