//! The operating system's monotonic clock, read with one system call: what the clock falls
//! back to, and what the stall writer and the signal handler read (async-signal-safe; this
//! module imports nothing of the crate, so the lowest layers may use it).

/// `CLOCK_MONOTONIC` in nanoseconds (`clock_gettime`: async-signal-safe).
#[cfg(unix)]
#[cold]
#[inline(never)]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
