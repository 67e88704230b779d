//! The counters a group can hold (the model's [`Event`]: its names, for a caller's
//! configuration and the JSON report) and how each is asked of the kernel ([`kind`]).

#[cfg(test)]
pub(super) use profpoint_report::heatmap::pmu::EVENT_NAMES;
pub use profpoint_report::heatmap::pmu::{Event, MAX_MEMBERS};

/// `(type, config)` of `perf_event_attr` for `event`; `None` for an event this sampler has no
/// encoding for (the model's `Event` is `#[non_exhaustive]`: this match cannot list them all,
/// and a test checks that every event the model names has one).
#[cfg(target_os = "linux")]
pub(crate) fn kind(event: Event) -> Option<(u32, u64)> {
    use crate::sys::*;
    let l1d_read =
        |result| hw_cache_config(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ, result);
    Some(match event {
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
        _ => return None,
    })
}
