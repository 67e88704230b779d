//! The calling thread's CPU time, the clock the tests' CPU burners and budgets run on: a loaded
//! machine stretches their wall time, not the CPU they use.

use std::time::Duration;

/// CPU time of the calling thread (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`) on Unix;
/// elsewhere the monotonic time since the first call stands in.
pub fn thread_cpu() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a live, writable timespec for clock_gettime to fill.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
    #[cfg(not(unix))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed()
    }
}
