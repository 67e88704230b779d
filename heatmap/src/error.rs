//! Errors, one enum per operation: starting, reading a dump.
//!
//! Each variant's doc says what caused it and what to do; each message names the bad value
//! and what was expected, so it can be printed to a user as it is.

use std::fmt;

/// [`start`](crate::start) could not start a sampler.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// Another sampler is running in this process. Fix: stop it (or drop its guard) first;
    /// one sampler per process, because there is one `SIGPROF` disposition per process.
    AlreadyRunning,
    /// The requested rate is out of range. Fix: ask for 1 to 100000 Hz.
    InvalidHz(u32),
    /// The requested stack depth is out of range. Fix: ask for 1 to 128 frames.
    InvalidStackDepth(u32),
    /// The requested stack table size is out of range. Fix: ask for 64 to 1048576 slots.
    InvalidStackSlots(u32),
    /// The requested bucket shift is out of range. Fix: ask for 0 to 24 (1 byte to 16 MiB).
    InvalidShift(u32),
    /// Something in the process (another profiler, a runtime) already handles `SIGPROF`.
    /// Fix: stop that profiler, or do not start both; we never overwrite a foreign handler.
    SignalInUse {
        /// The address of the installed handler.
        handler: libc::sighandler_t,
    },
    /// `sigaction(SIGPROF)` failed (should not happen on Linux).
    Sigaction(std::io::Error),
    /// `dl_iterate_phdr` reported no executable segment: nothing to count into.
    NoExecutableSegments,
    /// The perf `task-clock` source was required (not `Auto`) and `perf_event_open` failed.
    /// Fix: lower `/proc/sys/kernel/perf_event_paranoid` to 2 or less, allow the system call in
    /// the seccomp profile of the container, or use `Source::Auto`/`Source::Setitimer`.
    PerfUnavailable(std::io::Error),
    /// `setitimer(ITIMER_PROF)` failed.
    Setitimer(std::io::Error),
    /// The watcher thread could not be spawned (resource limits).
    Spawn(std::io::Error),
    /// The sampler needs Linux (per-thread perf clocks and `SIGPROF`, `dl_iterate_phdr`,
    /// `/proc`); this build is for another system. Reports and dumps made on Linux can still be
    /// read here ([`Profile::read_dump`](crate::Profile::read_dump)).
    Unsupported,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => write!(
                f,
                "a heatmap sampler is already running in this process: stop it before starting another"
            ),
            StartError::InvalidHz(hz) => {
                write!(
                    f,
                    "hz={hz}: expected a sampling rate in Hz between 1 and 100000"
                )
            }
            StartError::InvalidShift(s) => {
                write!(
                    f,
                    "shift={s}: expected a bucket shift between 0 and 24 (bucket = 1 << shift bytes)"
                )
            }
            StartError::InvalidStackDepth(d) => write!(
                f,
                "stack depth {d}: expected 1 to {} frames per stack",
                crate::stacks::MAX_DEPTH
            ),
            StartError::InvalidStackSlots(n) => write!(
                f,
                "stack table slots {n}: expected {} to {} (rounded up to a power of two)",
                crate::stacks::MIN_SLOTS,
                crate::stacks::MAX_SLOTS
            ),
            StartError::SignalInUse { handler } => write!(
                f,
                "SIGPROF already has a handler (at {handler:#x}): another profiler is running; \
                 expected SIGPROF to be SIG_DFL or SIG_IGN"
            ),
            StartError::Sigaction(e) => write!(f, "sigaction(SIGPROF) failed: {e}"),
            StartError::NoExecutableSegments => write!(
                f,
                "dl_iterate_phdr found no executable PT_LOAD segment: nothing to sample into"
            ),
            StartError::PerfUnavailable(e) => write!(
                f,
                "perf_event_open(task-clock) failed: {e}; expected perf_event_paranoid <= 2 and \
                 the system call allowed (or use Source::Auto to fall back to setitimer)"
            ),
            StartError::Setitimer(e) => write!(f, "setitimer(ITIMER_PROF) failed: {e}"),
            StartError::Spawn(e) => write!(f, "could not spawn the heatmap watcher thread: {e}"),
            StartError::Unsupported => write!(
                f,
                "the heatmap is not available on this platform ({}): it needs Linux",
                std::env::consts::OS
            ),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Sigaction(e)
            | StartError::PerfUnavailable(e)
            | StartError::Setitimer(e)
            | StartError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// [`Profile::read_dump`](crate::Profile::read_dump) rejected its input.
///
/// Every variant is about the bytes given, never a panic; fix: pass a file written by
/// [`Profile::write_dump`](crate::Profile::write_dump) of a compatible version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DumpError {
    /// The input does not start with the magic `HEATMAP\0`: not a heatmap dump.
    BadMagic {
        /// The first bytes found (up to 8).
        found: Vec<u8>,
    },
    /// The dump was written by a format version this reader does not know.
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The version this reader reads.
        expected: u32,
    },
    /// The input ends before the structure it announces (a truncated file).
    Truncated {
        /// What was being read.
        what: &'static str,
        /// The byte offset where it should have been.
        offset: usize,
        /// The total input length.
        len: usize,
    },
    /// The trailing checksum does not match the content (a corrupt file).
    Checksum {
        /// The checksum stored in the file.
        stored: u64,
        /// The checksum of the content as read.
        computed: u64,
    },
    /// A field holds a value that cannot be right (a corrupt or hand-edited file).
    Invalid {
        /// The field.
        what: &'static str,
        /// Its value, as text.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
}

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DumpError::BadMagic { found } => write!(
                f,
                "not a heatmap dump: starts with {found:02x?}, expected the magic \"HEATMAP\\0\""
            ),
            DumpError::UnsupportedVersion { found, expected } => write!(
                f,
                "heatmap dump format version {found}: this reader reads versions 1 to {expected}"
            ),
            DumpError::Truncated { what, offset, len } => write!(
                f,
                "truncated heatmap dump: {what} expected at byte {offset}, but the input has only {len} bytes"
            ),
            DumpError::Checksum { stored, computed } => write!(
                f,
                "corrupt heatmap dump: stored checksum {stored:#018x}, content checksums to {computed:#018x}"
            ),
            DumpError::Invalid {
                what,
                value,
                expected,
            } => write!(
                f,
                "corrupt heatmap dump: {what} = {value}: expected {expected}"
            ),
        }
    }
}

impl std::error::Error for DumpError {}
