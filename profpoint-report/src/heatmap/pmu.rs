//! Per-function hardware metrics: the rows ([`PmuRow`]), how they were credited ([`Method`]),
//! the counters ([`Event`]) and the calibration they carry, and the alternating-period patch's
//! table ([`PmuReport::write_table`]). The sampler (`profpoint_heatmap::pmu`) fills them.

use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// A counter of the group: a generic hardware event (`PERF_COUNT_HW_*`) or one of the two
/// software events the software clock mode uses (`PERF_COUNT_SW_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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
#[doc(hidden)]
pub const EVENT_NAMES: [(Event, &str); 10] = [
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

    /// The unit of a leader's periods: `ns` for the CPU clock, else `cycles`.
    pub fn unit(self) -> &'static str {
        if self == Event::TaskClock {
            "ns"
        } else {
            "cycles"
        }
    }
}

/// Most counters in a group: the leader and up to this many members.
pub const MAX_MEMBERS: usize = 6;

/// The fixed cost every window carries, measured at start on a known loop (its own thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Calibration {
    /// Windows measured on the calibration loop.
    pub windows: u64,
    /// Extra counts per window (group order: cycles first), subtracted from every window.
    pub fixed: [f64; MAX_MEMBERS + 1],
}

/// One function's metrics.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PmuRow {
    /// Demangled function name.
    pub symbol: String,
    /// Windows credited to it.
    pub windows: u64,
    /// Cycles per instruction.
    pub cpi: Option<f64>,
    /// Branch misses per 1,000 instructions.
    pub bm_per_ki: Option<f64>,
    /// Cache misses per 1,000 instructions.
    pub cm_per_ki: Option<f64>,
    /// Cache misses per cache reference, percent.
    pub cm_percent: Option<f64>,
    /// Share of all credited leader counts, percent: cycles in the hardware mode, CPU time in
    /// the software mode.
    pub clock_percent: f64,
    /// Share of all credited instructions, percent.
    pub instructions_percent: Option<f64>,
    /// Share of all credited branch misses, percent.
    pub branch_misses_percent: Option<f64>,
    /// Page faults per millisecond of CPU time (the software mode).
    pub page_faults_per_ms: Option<f64>,
    /// Share of all credited L1D read accesses, percent (`l1d-reads` counted).
    pub l1d_reads_percent: Option<f64>,
    /// Share of all credited L1D read misses, percent (`l1d-read-misses` counted).
    pub l1d_misses_percent: Option<f64>,
}

/// How a report credited the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Method {
    /// The alternating-period patch's method: a short window's deltas, when it began and ended
    /// in one function.
    Windows,
    /// The baseline: each long period's deltas, to the function where it ended.
    UniformLongPeriod,
}

/// Per-function hardware metrics, ranked by share of cycles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PmuReport {
    /// How the counts were credited.
    pub method: Method,
    /// Windows recorded (the calibration's own left out); with
    /// [`Method::UniformLongPeriod`], long periods.
    pub windows: u64,
    /// Windows whose start and end were in different functions (not credited); with
    /// [`Method::UniformLongPeriod`], long periods that ended in unknown code.
    pub discarded: u64,
    /// Windows whose leader counted more than 1.5 times the window asked plus the fixed cost
    /// (the overflow came late: not credited).
    pub overlong: u64,
    /// Long period and window, in the leader's unit (`events[0]`: cycles, or ns of CPU time).
    pub long_period: u64,
    /// See `long_period`.
    pub window: u64,
    /// The calibration subtracted from every window.
    pub calibration: Calibration,
    /// Counters, in group order: the leader first.
    pub events: Vec<Event>,
    /// Warnings (multiplexing, throttling, dropped windows).
    pub warnings: Vec<String>,
    /// Rows, most cycles first.
    pub rows: Vec<PmuRow>,
}

impl PmuReport {
    /// A report credited by `method` that holds nothing yet: no window, no calibration, no
    /// event, no row. The sampler fills in the rest, field by field.
    pub fn new(method: Method) -> PmuReport {
        PmuReport {
            method,
            windows: 0,
            discarded: 0,
            overlong: 0,
            long_period: 0,
            window: 0,
            calibration: Calibration::default(),
            events: Vec::new(),
            warnings: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// The alternating-period patch's table: Symbol, #, CPI, BM/KI, CM/KI, %CM, %CY, %I, %BM, with
    /// a legend (in the software mode: Symbol, #, %T, PF/ms). Columns the chosen events cannot fill
    /// show `-`.
    pub fn write_table(&self, w: &mut dyn Write) -> io::Result<()> {
        let clock = self.events.first().copied().unwrap_or(Event::Cycles);
        let software = clock == Event::TaskClock;
        let unit = clock.unit();
        let what = if software {
            "Software-clock metrics"
        } else {
            "Hardware metrics"
        };
        match self.method {
            Method::Windows => writeln!(
                w,
                "{what} per function ({} windows of ~{} {unit} every ~{} {unit}; not credited: {} that began and ended in different functions, {} overlong)",
                self.windows, self.window, self.long_period, self.discarded, self.overlong
            )?,
            Method::UniformLongPeriod => writeln!(
                w,
                "{what} per function by uniform sampling at the long period (the baseline, from the same run: {} periods of ~{} {unit}, each credited to the function where it ended; {} in unknown code)",
                self.windows, self.long_period, self.discarded
            )?,
        }
        if self.method == Method::UniformLongPeriod {
            writeln!(
                w,
                "nothing subtracted: the signal path's cost is small against a long period"
            )?;
        } else {
            writeln!(
                w,
                "calibration: {} windows; subtracted per window: {}",
                self.calibration.windows,
                self.events
                    .iter()
                    .zip(self.calibration.fixed)
                    .map(|(e, f)| format!(
                        "{f:.0} {}",
                        profpoint_json::to_string(e)
                            .unwrap_or_default()
                            .trim_matches('"')
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
        let sw = self
            .rows
            .iter()
            .map(|r| r.symbol.len())
            .max()
            .unwrap_or(6)
            .clamp(6, 60);
        if software {
            self.write_software_rows(w, sw)?;
        } else {
            self.write_hardware_rows(w, sw)?;
        }
        for warning in &self.warnings {
            writeln!(w, "warning: {warning}")?;
        }
        Ok(())
    }

    /// The software mode's columns and legend: Symbol, #, %T, PF/ms (`sw`: the symbol width).
    fn write_software_rows(&self, w: &mut dyn Write, sw: usize) -> io::Result<()> {
        writeln!(
            w,
            "{:<sw$}  {:>7}  {:>6}  {:>8}",
            "Symbol", "#", "%T", "PF/ms"
        )?;
        for r in &self.rows {
            let name: String = r.symbol.chars().take(sw).collect();
            writeln!(
                w,
                "{:<sw$}  {:>7}  {:>6.2}  {:>8}",
                name,
                r.windows,
                r.clock_percent,
                opt(r.page_faults_per_ms, 2)
            )?;
        }
        writeln!(
            w,
            "%T share of CPU time; PF/ms page faults per millisecond of CPU time (both over the windows credited)."
        )?;
        Ok(())
    }

    /// The hardware mode's columns and legend: the alternating-period patch's, and the L1D
    /// shares when counted.
    fn write_hardware_rows(&self, w: &mut dyn Write, sw: usize) -> io::Result<()> {
        // The L1D shares only when those events were counted.
        let l1d =
            self.events.contains(&Event::L1dReads) || self.events.contains(&Event::L1dReadMisses);
        write!(
            w,
            "{:<sw$}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}",
            "Symbol", "#", "CPI", "BM/KI", "CM/KI", "%CM", "%CY", "%I", "%BM"
        )?;
        if l1d {
            write!(w, "  {:>6}  {:>6}", "%L1DA", "%L1DM")?;
        }
        writeln!(w)?;
        for r in &self.rows {
            let name: String = r.symbol.chars().take(sw).collect();
            write!(
                w,
                "{:<sw$}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6.2}  {:>6}  {:>6}",
                name,
                r.windows,
                opt(r.cpi, 2),
                opt(r.bm_per_ki, 2),
                opt(r.cm_per_ki, 2),
                opt(r.cm_percent, 1),
                r.clock_percent,
                opt(r.instructions_percent, 2),
                opt(r.branch_misses_percent, 2),
            )?;
            if l1d {
                write!(
                    w,
                    "  {:>6}  {:>6}",
                    opt(r.l1d_reads_percent, 2),
                    opt(r.l1d_misses_percent, 2)
                )?;
            }
            writeln!(w)?;
        }
        writeln!(
            w,
            "CPI cycles/instruction; BM/KI branch misses per 1000 instructions; CM/KI cache misses per 1000 instructions;"
        )?;
        writeln!(
            w,
            "%CM cache misses per cache reference; %CY %I %BM shares of cycles, instructions, branch misses. The generic"
        )?;
        writeln!(
            w,
            "cache events count the last level (or L2) on most CPUs, not L1D.{}",
            if l1d {
                " %L1DA %L1DM shares of L1D reads and L1D read misses."
            } else {
                ""
            }
        )?;
        Ok(())
    }
}

/// A column's value to `p` decimals, or `-` when the chosen events cannot give it.
fn opt(x: Option<f64>, p: usize) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.p$}"))
}
