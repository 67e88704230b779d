//! How the mode samples ([`PmuConfig`]) and its limits (a caller builds the value; this crate
//! reads no environment variable).

use super::events::Event;

/// The kernel's floor for a software clock's period (`perf_swevent_start_hrtimer`: 10 us).
pub const MIN_SOFTWARE_WINDOW: u64 = 10_000;

/// How the mode samples.
#[derive(Debug, Clone, PartialEq)]
pub struct PmuConfig {
    /// The sampling leader, whose count the periods are in: [`Event::Cycles`] (the hardware
    /// mode, the default) or [`Event::TaskClock`] (the software mode, in nanoseconds of the
    /// thread's CPU time: it runs where no PMU is exposed, with software counters as members).
    pub clock: Event,
    /// Leader counts between windows (default 1e7 cycles: a window's signals cost a VM tens of
    /// microseconds, so shorter long periods cost too much; BENCHMARKS.md, "Figures behind
    /// design choices").
    pub long_period: u64,
    /// Leader counts in a window (default 3,000 cycles: a window of a few hundred cycles would
    /// be mostly the signal path's own fixed cost, itself about a thousand cycles).
    pub window: u64,
    /// Random jitter on both periods, as a fraction (default 0.1: +-10%).
    pub jitter: f64,
    /// Counting members beside cycles.
    pub events: Vec<Event>,
}

impl Default for PmuConfig {
    fn default() -> Self {
        PmuConfig {
            clock: Event::Cycles,
            long_period: 10_000_000,
            window: 3_000,
            jitter: 0.1,
            events: vec![
                Event::Instructions,
                Event::BranchMisses,
                Event::CacheReferences,
                Event::CacheMisses,
            ],
        }
    }
}

/// The shortest long period accepted: 1e6 cycles keeps a thread under ~2,500 windows a second
/// at 2.5 GHz, far below the kernel's default `perf_event_max_sample_rate` (100,000); 1e6 ns
/// of the software clock is 1,000 windows a second.
pub const MIN_LONG_PERIOD: u64 = 1_000_000;

impl PmuConfig {
    /// The software mode: the thread's CPU clock leads (a window every ~5 ms of CPU time,
    /// 200 us long) and page faults are counted. It needs no PMU, so it runs in VMs and
    /// containers: per-function page faults per millisecond, by the same alternating windows
    /// and the same attribution as the hardware mode.
    pub fn software() -> PmuConfig {
        PmuConfig {
            clock: Event::TaskClock,
            long_period: 5_000_000,
            window: 200_000,
            jitter: 0.1,
            events: vec![Event::PageFaults],
        }
    }
}
