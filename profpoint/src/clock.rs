//! The clock: raw ticks on the hot path, nanoseconds only at report time.
//!
//! # Concept
//! A profile point reads the clock twice per call, so the clock read *is* the cost of a
//! point. We read the time-stamp counter with a bare `rdtsc` (its cost: BENCHMARKS.md,
//! "Profile points", the TSC pair) and keep raw ticks in every counter. Converting ticks
//! to nanoseconds needs a multiplication by a calibrated ratio; doing it per call would add work to
//! every call for nothing, so it happens once, when a report is made.
//!
//! # Mechanism
//! - [`now`] is `rdtsc` when the CPU advertises an invariant TSC (CPUID leaf 0x8000_0007, EDX
//!   bit 8: the counter runs at a constant rate in every power state and is synchronised across
//!   cores, so start and leave may even run on different CPUs), and `CLOCK_MONOTONIC` in
//!   nanoseconds otherwise (one tick = one ns). On other architectures it is always the
//!   monotonic clock. The choice is made once by [`init`] and read through one relaxed flag: a
//!   predictable branch.
//! - The tick rate is calibrated against `CLOCK_MONOTONIC` over the longest interval available:
//!   from process start ([`init`]) to the moment of the report. A report made within 20 ms of
//!   start waits until 20 ms have passed, which bounds the calibration error well under 0.1%.
//!
//! Why not `quanta::Clock::raw()`: it dispatches on the clock kind stored in a `Clock` value
//! (instructions on every read: BENCHMARKS.md, "Figures behind design choices") and needs a
//! `Clock` instance on the hot path. The TSC
//! read itself is the same instruction.
//!
//! - On aarch64 (Linux, macOS, Windows) the raw clock is the virtual counter `CNTVCT_EL0`
//!   (one `mrs`, readable from user space on all three; what quanta reads there too),
//!   calibrated like the TSC. Its rate is fixed by the system, not the CPU's frequency: 24 MHz
//!   on Apple silicon (42 ns ticks), 25 MHz to 1 GHz on ARM servers (1 GHz from ARMv8.6). A
//!   point's interval is therefore quantised to that tick; the sums over many calls are not.
//!   `PROFPOINT_CLOCK=monotonic` chooses the OS clock there too.
//! - Elsewhere: `CLOCK_MONOTONIC` on Unix systems, `std::time::Instant` (QueryPerformanceCounter)
//!   on Windows.
//!
//! The `source` of a report says which (`tsc`, `cntvct` or `monotonic`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether [`now`] reads the TSC. Written once by [`init`] before `main`; read relaxed on every
/// call: it never changes after start-up, so no ordering with other memory is needed.
static USE_TSC: AtomicBool =
    AtomicBool::new(cfg!(any(target_arch = "x86_64", target_arch = "aarch64")));

/// The name of the raw counter of this architecture, as reports show it.
const RAW_SOURCE: &str = if cfg!(target_arch = "aarch64") {
    "cntvct"
} else {
    "tsc"
};

/// The origin of time for this process: raw ticks and monotonic nanoseconds read together.
static ORIGIN: OnceLock<(u64, u64)> = OnceLock::new();

/// Reads the raw clock: TSC ticks, or monotonic nanoseconds where no invariant TSC exists.
#[inline(always)]
pub(crate) fn now() -> u64 {
    // Relaxed: the flag is written once, by `init`, before any reader can run.
    now_with(USE_TSC.load(Ordering::Relaxed))
}

/// Reads the raw clock given the source choice. The hot path passes a constant `true`: only
/// shards of a process that reads the TSC serve the fast path (see `shard::Shard::slot`), so
/// the choice costs nothing there.
#[inline(always)]
pub(crate) fn now_with(tsc: bool) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if tsc {
            return crate::owned::rdtsc();
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if tsc {
            return cntvct();
        }
    }
    let _ = tsc;
    monotonic_ns()
}

/// Reads the virtual counter `CNTVCT_EL0` (no `isb` before it: like `rdtsc` without `lfence`,
/// the read may move by a few instructions, which is below the counter's tick anyway).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: reading CNTVCT_EL0 has no side effect; Linux, macOS and Windows all enable its
    // user-space access (CNTKCTL_EL1.EL0VCTEN), which is what their own clocks read.
    unsafe {
        core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// Whether [`now`] reads the TSC (after [`init`]).
pub(crate) fn uses_tsc() -> bool {
    init();
    // Relaxed: see `now`.
    USE_TSC.load(Ordering::Relaxed)
}

/// `CLOCK_MONOTONIC` in nanoseconds.
#[cfg(unix)]
pub(crate) use crate::os_clock::monotonic_ns;

/// The OS monotonic clock in nanoseconds, from a base taken on first use (plus 1, so that no
/// reading is 0): `Instant` is QueryPerformanceCounter on Windows.
#[cfg(not(unix))]
#[cold]
#[inline(never)]
pub(crate) fn monotonic_ns() -> u64 {
    static BASE: OnceLock<std::time::Instant> = OnceLock::new();
    let base = *BASE.get_or_init(std::time::Instant::now);
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX) + 1
}

/// Whether `PROFPOINT_CLOCK=monotonic` asks for the OS clock instead of the raw counter.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn monotonic_asked() -> bool {
    // Escape hatch for machines whose hypervisor advertises a TSC it does not keep steady.
    if let Some(v) = crate::env::var("PROFPOINT_CLOCK") {
        match crate::env::parse_clock(&v) {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => crate::env::warn(
                &e,
                if cfg!(target_arch = "aarch64") {
                    "cntvct"
                } else {
                    "tsc where invariant"
                },
            ),
        }
    }
    false
}

/// Whether this CPU has an invariant TSC (CPUID 0x8000_0007 EDX bit 8).
#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use core::arch::x86_64::__cpuid;
    if monotonic_asked() {
        return false;
    }
    let max_ext = __cpuid(0x8000_0000).eax;
    max_ext >= 0x8000_0007 && (__cpuid(0x8000_0007).edx & (1 << 8)) != 0
}

/// Chooses the clock source and records the time origin. Runs once (before `main`, or
/// earlier if a point fires first, from another library's initialiser).
pub(crate) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_arch = "x86_64")]
        // Relaxed: `Once` publishes it to every thread that passes `call_once`.
        USE_TSC.store(invariant_tsc(), Ordering::Relaxed);
        #[cfg(target_arch = "aarch64")]
        // Relaxed: as above. The virtual counter is constant-rate and synchronised by the
        // architecture (ARMv8: the system counter), so only the user's choice matters.
        USE_TSC.store(!monotonic_asked(), Ordering::Relaxed);
        origin();
    });
}

/// The process's time origin (raw ticks, monotonic ns), set on first use.
pub(crate) fn origin() -> (u64, u64) {
    *ORIGIN.get_or_init(tight_pair)
}

/// A raw tick read and the monotonic time it was taken at: the tick read sits between two
/// monotonic reads and is matched with their midpoint. A thread preempted between the reads
/// would skew the pair by up to the preemption (a millisecond or more on a busy machine, 5%
/// of the shortest calibration): the tightest of up to 50 tries is kept, and the first whose
/// reads are within 2 us of each other is taken at once.
fn tight_pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..50 {
        let a = monotonic_ns();
        let t = now();
        let b = monotonic_ns();
        let width = b.saturating_sub(a);
        if width < best.0 {
            best = (width, t, a + width / 2);
        }
        if width <= 2_000 {
            break;
        }
    }
    (best.1, best.2)
}

/// How raw ticks relate to nanoseconds, as calibrated at report time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockInfo {
    /// `"tsc"` (x86_64), `"cntvct"` (aarch64) or `"monotonic"`.
    pub source: &'static str,
    /// Raw ticks per nanosecond (1.0 for the monotonic clock).
    pub ticks_per_ns: f64,
    /// The calibration interval in nanoseconds.
    pub calibrated_over_ns: u64,
}

impl ClockInfo {
    /// Converts raw ticks to nanoseconds.
    pub fn to_ns(&self, ticks: u64) -> u64 {
        (ticks as f64 / self.ticks_per_ns).round() as u64
    }

    /// Converts a fractional tick count to nanoseconds.
    pub fn to_ns_f(&self, ticks: f64) -> f64 {
        ticks / self.ticks_per_ns
    }

    /// Converts nanoseconds to raw ticks.
    pub fn to_ticks(&self, ns: f64) -> f64 {
        ns * self.ticks_per_ns
    }

    /// The tick frequency in GHz (ticks per ns).
    pub fn ghz(&self) -> f64 {
        self.ticks_per_ns
    }
}

/// Shortest calibration interval: 20 ms of `CLOCK_MONOTONIC` (whose resolution is 1 ns, read
/// through the vDSO in ~25 ns) bounds the ratio's error to about 1e-6 from the reads themselves.
const MIN_CALIBRATION_NS: u64 = 20_000_000;

/// Calibrates raw ticks against the monotonic clock from the process origin to now.
pub(crate) fn info() -> ClockInfo {
    let (t0, m0) = origin();
    // Relaxed: see `USE_TSC`.
    if !USE_TSC.load(Ordering::Relaxed) {
        return ClockInfo {
            source: "monotonic",
            ticks_per_ns: 1.0,
            calibrated_over_ns: 0,
        };
    }
    let mut m1 = monotonic_ns();
    while m1.saturating_sub(m0) < MIN_CALIBRATION_NS {
        std::thread::sleep(std::time::Duration::from_nanos(
            MIN_CALIBRATION_NS - m1.saturating_sub(m0),
        ));
        m1 = monotonic_ns();
    }
    let (t1, m1) = tight_pair();
    let span_ns = m1 - m0;
    ClockInfo {
        source: RAW_SOURCE,
        ticks_per_ns: t1.wrapping_sub(t0) as f64 / span_ns as f64,
        calibrated_over_ns: span_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_matches_a_sleep() {
        init();
        let c = info();
        let t0 = now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let ns = c.to_ns(now() - t0);
        assert!(ns >= 30_000_000, "30 ms sleep read as {ns} ns");
        assert!(ns < 300_000_000, "30 ms sleep read as {ns} ns");
    }
}
