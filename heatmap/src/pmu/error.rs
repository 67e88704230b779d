//! Why the mode cannot run ([`PmuError`]): each variant names the cause and the fix.

use std::io;

/// Why the hardware-metrics mode cannot run. Each variant says the cause and the fix.
#[derive(Debug)]
pub enum PmuError {
    /// The kernel exposes no hardware events (a VM without PMU passthrough, a container).
    /// Fix: run on bare metal or enable the virtual PMU (e.g. QEMU `-cpu host,pmu=on`).
    NoPmu(io::Error),
    /// `perf_event_paranoid` forbids user-space hardware events. Fix:
    /// `sysctl kernel.perf_event_paranoid=2` (or lower), or CAP_PERFMON.
    Paranoid(i32, io::Error),
    /// The system call is denied (seccomp, or an LSM). Fix: allow `perf_event_open`.
    Denied(io::Error),
    /// The chosen signal already has a handler. Fix: stop whatever installed it.
    SignalInUse(libc::c_int),
    /// Another sampler of this module (either mode) runs in this process.
    AlreadyRunning,
    /// A configuration value is out of range.
    Config(String),
    /// Another system error.
    Io(io::Error),
    /// The windows need Linux (`perf_event_open`, real-time signals carrying `si_fd`); this
    /// build is for another system.
    Unsupported,
}

impl std::fmt::Display for PmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PmuError::NoPmu(e) => write!(
                f,
                "no hardware performance counters here (perf_event_open of cycles: {e}): this \
                 looks like a VM or container without PMU access; run on bare metal or enable \
                 the virtual PMU"
            ),
            PmuError::Paranoid(level, e) => write!(
                f,
                "perf_event_paranoid is {level}, which forbids perf events to this process \
                 ({e}): set `sysctl kernel.perf_event_paranoid=2` (or lower) or grant CAP_PERFMON"
            ),
            PmuError::Denied(e) => write!(
                f,
                "perf_event_open is denied ({e}): a seccomp filter or security module blocks it; \
                 allow the system call"
            ),
            PmuError::SignalInUse(s) => write!(
                f,
                "signal {s} already has a handler: the hardware-metrics sampler needs it"
            ),
            PmuError::AlreadyRunning => {
                write!(
                    f,
                    "a per-function metrics sampler already runs in this process"
                )
            }
            PmuError::Config(s) => write!(f, "{s}"),
            PmuError::Io(e) => write!(f, "hardware-metrics sampler: {e}"),
            PmuError::Unsupported => write!(
                f,
                "per-function metrics are not available on this platform ({}): \
                 they need Linux",
                std::env::consts::OS
            ),
        }
    }
}

impl std::error::Error for PmuError {}
