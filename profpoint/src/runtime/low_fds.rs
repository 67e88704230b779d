//! Descriptors 0, 1 and 2 are the host's: nothing profpoint keeps open may sit on one.
//!
//! # The rule, and why this one
//! The initialiser runs from `.init_array`, before the Rust runtime's own start-up (std's
//! `lang_start`, called from `main`), which on Linux polls 0, 1 and 2 and opens `/dev/null` on
//! each that is closed, expecting the lowest free descriptor to be that one. A descriptor
//! profpoint opened before it (the `PROFPOINT_SERVE` listener, the signal thread's pipe) would
//! take the free slot: std then finds it open and leaves it, and the program's `println!`
//! writes into profpoint's socket and panics.
//!
//! Two ways out: fill the free slots with `/dev/null` in the initialiser, as std would a moment
//! later, or never keep a descriptor below 3. The first changes a host std does not start (a C
//! program that loads a Rust library, or a program that closes its own stdout during `main`
//! and gets `EBADF` from it): its free slot would be taken. The second changes nothing the
//! host can see, so it is the rule: every descriptor profpoint keeps (the listener, its
//! connections, the pipe, the report's folder and temporary file) goes through
//! [`above_stdio`], which moves one that landed on 0, 1 or 2 to the lowest free number from 3
//! (`F_DUPFD_CLOEXEC`) and closes the low one, leaving the slot free as the host left it. A
//! descriptor opened and closed within one call (reading `/dev/urandom`) holds a slot for that
//! call only, on the calling thread.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The lowest descriptor profpoint keeps.
const LOWEST: libc::c_int = 3;

/// `fd` itself when it is 3 or above; otherwise a close-on-exec copy of it at 3 or above, and
/// the low one closed. When no copy can be made (out of descriptors), `fd` is kept: the
/// report or the server still works, and the slot was free for the host to take anyway.
pub(crate) fn above_stdio(fd: OwnedFd) -> OwnedFd {
    let raw = fd.as_raw_fd();
    if raw >= LOWEST {
        return fd;
    }
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor owned by `fd`, open for the call.
    let high = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, LOWEST) };
    if high < 0 {
        return fd;
    }
    // Closed by dropping it: the slot is free again.
    drop(fd);
    // SAFETY: `high` was just returned by fcntl: open and owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(high) }
}

/// [`above_stdio`] for a value that owns a descriptor (a listener, a stream): taken apart
/// and rebuilt around the descriptor it ends with.
pub(crate) fn above_stdio_as<T: Into<OwnedFd> + From<OwnedFd>>(v: T) -> T {
    T::from(above_stdio(v.into()))
}
