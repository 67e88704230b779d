//! How the mode samples ([`PmuConfig`]), its limits, and its parsing from the environment.

use super::events::{Event, MAX_MEMBERS};

/// The kernel's floor for a software clock's period (`perf_swevent_start_hrtimer`: 10 us).
pub const MIN_SOFTWARE_WINDOW: u64 = 10_000;

/// How the mode samples.
#[derive(Debug, Clone, PartialEq)]
pub struct PmuConfig {
    /// The sampling leader, whose count the periods are in: [`Event::Cycles`] (the hardware
    /// mode, the default) or [`Event::TaskClock`] (the software mode, in nanoseconds of the
    /// thread's CPU time: it runs where no PMU is exposed, with software counters as members).
    pub clock: Event,
    /// Leader counts between windows (default 1e7 cycles: a window costs ~140 us in a VM, so
    /// shorter long periods cost too much).
    pub long_period: u64,
    /// Leader counts in a window (default 3,000 cycles: a ~300-cycle window is mostly the
    /// signal path's own fixed cost, ~1,100 cycles).
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

    /// Reads `PROFPOINT_PMU` (`1` or `hardware` for the hardware mode, `software` for the
    /// software clock, `0`/unset off), `PROFPOINT_PMU_LONG` and `PROFPOINT_PMU_WINDOW` (in the
    /// leader's unit: cycles, or nanoseconds in the software mode) and `PROFPOINT_PMU_EVENTS`
    /// (comma-separated event names) through `get`. `Ok(None)` when not requested.
    pub fn from_env_vars(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<PmuConfig>, crate::EnvError> {
        let mut c = match get("PROFPOINT_PMU").as_deref().map(str::trim) {
            None | Some("") | Some("0") => return Ok(None),
            Some("1") | Some("hardware") => PmuConfig::default(),
            Some("software") => PmuConfig::software(),
            Some(other) => {
                return Err(crate::EnvError {
                    variable: "PROFPOINT_PMU",
                    value: other.to_owned(),
                    expected: "1 or hardware (per-function hardware metrics), software (the CPU clock and page faults, no PMU needed), or 0",
                });
            }
        };
        let num = |var: &'static str,
                   lo: u64,
                   hi: u64,
                   what: &'static str|
         -> Result<Option<u64>, crate::EnvError> {
            match get(var) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
                    _ => Err(crate::EnvError {
                        variable: var,
                        value: v,
                        expected: what,
                    }),
                },
            }
        };
        if let Some(n) = num(
            "PROFPOINT_PMU_LONG",
            MIN_LONG_PERIOD,
            1 << 40,
            "a long period between 1000000 and 2^40 (cycles, or ns with PROFPOINT_PMU=software)",
        )? {
            c.long_period = n;
        }
        let (lo, what) = if c.clock == Event::TaskClock {
            (
                12_000,
                "a window between 12000 and 1000000 ns (the kernel's software clock cannot fire sooner than 10 us, and windows are jittered by 10%)",
            )
        } else {
            (100, "a window in cycles between 100 and 1000000")
        };
        if let Some(n) = num("PROFPOINT_PMU_WINDOW", lo, 1_000_000, what)? {
            c.window = n;
        }
        if let Some(v) = get("PROFPOINT_PMU_EVENTS") {
            let bad = || crate::EnvError {
                variable: "PROFPOINT_PMU_EVENTS",
                value: v.clone(),
                expected: "up to 6 comma-separated events other than the leader, from: cycles, instructions, cache-references, cache-misses, branch-instructions, branch-misses, task-clock, page-faults, l1d-reads, l1d-read-misses",
            };
            let events: Vec<Event> = v
                .split(',')
                .map(|e| e.trim().parse::<Event>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            if events.is_empty() || events.len() > MAX_MEMBERS || events.contains(&c.clock) {
                return Err(bad());
            }
            c.events = events;
        }
        Ok(Some(c))
    }
}
