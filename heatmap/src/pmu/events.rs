//! The counters a group can hold: their names (for a caller's configuration and the JSON report)
//! and what kind of event each is.

use serde::{Deserialize, Serialize};

/// A counter of the group: a generic hardware event (`PERF_COUNT_HW_*`) or one of the two
/// software events the software clock mode uses (`PERF_COUNT_SW_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    /// CPU cycles (the leader in the hardware mode).
    Cycles,
    /// Instructions retired.
    Instructions,
    /// Cache references (on AMD and many Intel parts: last-level or L2 accesses, not L1D).
    CacheReferences,
    /// Cache misses (same level as the references).
    CacheMisses,
    /// Branch instructions retired.
    BranchInstructions,
    /// Mispredicted branches.
    BranchMisses,
    /// The thread's CPU time in nanoseconds (software; the leader in the software mode).
    TaskClock,
    /// Page faults taken in user space (software).
    PageFaults,
    /// Level-1 data cache read accesses (`PERF_TYPE_HW_CACHE`: L1D, read, access).
    L1dReads,
    /// Level-1 data cache read misses (`PERF_TYPE_HW_CACHE`: L1D, read, miss).
    L1dReadMisses,
}

/// Every event, with the name its parser (`FromStr`) and the JSON report use.
pub(super) const EVENT_NAMES: [(Event, &str); 10] = [
    (Event::Cycles, "cycles"),
    (Event::Instructions, "instructions"),
    (Event::CacheReferences, "cache-references"),
    (Event::CacheMisses, "cache-misses"),
    (Event::BranchInstructions, "branch-instructions"),
    (Event::BranchMisses, "branch-misses"),
    (Event::TaskClock, "task-clock"),
    (Event::PageFaults, "page-faults"),
    (Event::L1dReads, "l1d-reads"),
    (Event::L1dReadMisses, "l1d-read-misses"),
];

impl std::str::FromStr for Event {
    type Err = String;

    /// An event by its name (`instructions`, `l1d-read-misses`, ...; see `EVENT_NAMES`).
    fn from_str(name: &str) -> Result<Event, String> {
        EVENT_NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(e, _)| *e)
            .ok_or_else(|| {
                format!(
                    "{name:?} is not an event: expected one of {}",
                    EVENT_NAMES.map(|(_, n)| n).join(", ")
                )
            })
    }
}

impl Event {
    /// Whether the kernel counts it without a PMU.
    pub fn is_software(self) -> bool {
        // The events `kind` gives `PERF_TYPE_SOFTWARE`.
        matches!(self, Event::TaskClock | Event::PageFaults)
    }

    /// The unit of the leader's periods.
    pub(super) fn unit(self) -> &'static str {
        if self == Event::TaskClock {
            "ns"
        } else {
            "cycles"
        }
    }
}

/// Most counters in a group: the leader and up to this many members.
pub const MAX_MEMBERS: usize = 6;

#[cfg(target_os = "linux")]
impl Event {
    /// `(type, config)` of `perf_event_attr`.
    pub(crate) fn kind(self) -> (u32, u64) {
        use crate::sys::*;
        let l1d_read =
            |result| hw_cache_config(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, result);
        match self {
            Event::Cycles => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
            Event::Instructions => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
            Event::CacheReferences => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES),
            Event::CacheMisses => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES),
            Event::BranchInstructions => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS),
            Event::BranchMisses => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES),
            Event::TaskClock => (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK),
            Event::PageFaults => (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS),
            Event::L1dReads => (
                PERF_TYPE_HW_CACHE,
                l1d_read(PERF_COUNT_HW_CACHE_RESULT_ACCESS),
            ),
            Event::L1dReadMisses => (
                PERF_TYPE_HW_CACHE,
                l1d_read(PERF_COUNT_HW_CACHE_RESULT_MISS),
            ),
        }
    }
}
