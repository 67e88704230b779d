//! Per-function hardware metrics by alternating sample periods, in process, without root.
//!
//! # Concept
//! The seed (`perf-alternating-sample-period.txt`, a kernel patch never merged): sample on
//! cycles, alternating a *long* period (which only picks a moment, cheaply) and a *short
//! window* (whose counter deltas are the measurement), and credit a window's deltas to a
//! function only when the window began and ended in that function. A long period alone
//! smears every function's metrics towards the average; short periods alone cost 25-62x the
//! data and get throttled. Alternating gives per-function CPI, branch and cache misses at a
//! small multiple of plain sampling's cost.
//!
//! # Mechanism
//! - Per thread (a watcher finds threads as the heatmap's does), a `perf_event_open` group:
//!   cycles as the sampling leader, plus counting members (instructions, branch-misses,
//!   cache-references, cache-misses by default), user space only. The leader's overflow is
//!   routed as a signal to its own thread (`F_SETOWN_EX`/`F_SETSIG`) and re-armed with
//!   `PERF_EVENT_IOC_REFRESH(1)`, which freezes the group at each overflow: the counts read in
//!   the handler are exact at that moment.
//! - The handler's state machine per thread: at the end of a long period it records the pc
//!   (the window's start) and reads the group; it sets the period to the window
//!   (`PERF_EVENT_IOC_PERIOD` takes a *pointer*) and re-arms. At the end of the window it reads
//!   the group again and appends (start pc, end pc, deltas) to a preallocated record buffer,
//!   then sets a long period and re-arms. Both periods carry random jitter (xorshift, per
//!   thread) so sampling cannot lock onto a loop's harmonic.
//! - After the fact: start and end pcs are symbolised; a window counts for a function only if
//!   both name it; the rest are counted as discarded. The fixed cost every window carries (the
//!   signal path's own cycles, instructions and misses) is measured at start on a known loop,
//!   for ~100 ms on a thread of its own (`start` does not wait; `stop` does, or stops it early
//!   in a short program: under 5 windows it is not trusted, nothing is subtracted and the
//!   report says so), and subtracted from every window.
//! - Its own rate is capped (the long period has a floor) so the kernel never throttles it:
//!   slow overflow interrupts make the kernel lower `perf_event_max_sample_rate` for everyone.
//!   The rate is read at start and stop and a drop is reported; multiplexing (time running <
//!   time enabled) is detected per thread and reported.
//!
//! # Async-signal safety
//! The handler touches: errno (saved and restored), the siginfo (`si_fd`) and ucontext (pc),
//! the static slot table (atomics), `read`/`ioctl` on the overflowing descriptor (both
//! async-signal-safe system calls), and one preallocated record (index by `fetch_add`). No
//! allocation, lock or lazy TLS.
//!
//! # Without a PMU
//! Many VMs and containers expose no hardware events (`perf_event_open` of cycles fails with
//! ENOENT or EOPNOTSUPP), `perf_event_paranoid` may forbid them, seccomp may deny the system
//! call. [`start`] of the hardware mode then fails with a [`PmuError`] naming the cause and the
//! fix; callers (profpoint's report) go on without this section.
//!
//! The software mode ([`PmuConfig::software`], `PROFPOINT_PMU=software`) needs no PMU: the
//! thread's CPU clock (`task-clock`, in ns) leads and page faults are counted, through the same
//! handler, state machine, calibration and attribution. Two things differ. User-only sampling
//! skips a clock that fires inside the kernel, so windows cannot begin there and a window whose
//! end firing was skipped runs twice as long: such *overlong* windows are not credited. And the
//! shares (%T) lean towards user-space time for the same reason; the rates over credited
//! windows (page faults per ms) do not.

use crate::symbolize::Symbolizer;
use serde::Serialize;
use std::io::{self, Write};

/// The kernel's floor for a software clock's period (`perf_swevent_start_hrtimer`: 10 us).
pub const MIN_SOFTWARE_WINDOW: u64 = 10_000;

/// A counter of the group: a generic hardware event (`PERF_COUNT_HW_*`) or one of the two
/// software events the software clock mode uses (`PERF_COUNT_SW_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// Every event, with the name `PROFPOINT_PMU_EVENTS` and the JSON report use.
const EVENT_NAMES: [(Event, &str); 10] = [
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
    fn unit(self) -> &'static str {
        if self == Event::TaskClock {
            "ns"
        } else {
            "cycles"
        }
    }
}

/// Most counters in a group: the leader and up to this many members.
const MAX_MEMBERS: usize = 6;

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
                    "a per-function metrics sampler (PROFPOINT_PMU) already runs in this process"
                )
            }
            PmuError::Config(s) => write!(f, "{s}"),
            PmuError::Io(e) => write!(f, "hardware-metrics sampler: {e}"),
            PmuError::Unsupported => write!(
                f,
                "per-function metrics (PROFPOINT_PMU) are not available on this platform ({}): \
                 they need Linux",
                std::env::consts::OS
            ),
        }
    }
}

impl std::error::Error for PmuError {}

/// One measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    /// pc where the window began.
    pub start_pc: u64,
    /// pc where it ended.
    pub end_pc: u64,
    /// The window's length as asked of the kernel (jittered), in the leader's unit.
    pub asked: u64,
    /// Counter deltas over the window, in the group's order (the leader first).
    pub deltas: [u64; MAX_MEMBERS + 1],
    /// Counter deltas over the long period before it, which ended at `start_pc`: what uniform
    /// sampling at the long period would see (the calibration reads the loop's own IPC here).
    pub long: [u64; MAX_MEMBERS + 1],
}

/// The fixed cost every window carries, measured at start on a known loop (its own thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Calibration {
    /// Windows measured on the calibration loop.
    pub windows: u64,
    /// Extra counts per window (group order: cycles first), subtracted from every window.
    pub fixed: [f64; MAX_MEMBERS + 1],
}

/// A loop of integer adds: no branch misses to speak of, no memory but one stack slot.
#[inline(never)]
fn calibration_loop(iters: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
    for i in 0..iters {
        // The barrier keeps the optimiser from replacing the loop by its closed form (sums of
        // polynomials): without it the loop takes no time and the windows land elsewhere.
        a = std::hint::black_box(a.wrapping_add(i));
        b = b.wrapping_add(a);
        c = c.wrapping_add(b);
        d = d.wrapping_add(c);
    }
    std::hint::black_box(a ^ b ^ c ^ d)
}

/// Whether `pc` is in the calibration loop (it is small: a few hundred bytes).
fn in_calibration_loop(pc: u64) -> bool {
    let f = calibration_loop as fn(u64) -> u64 as usize as u64;
    pc >= f && pc < f + 512
}

/// Whether a window's leader counted well past what was asked: its overflow came late (a
/// software clock that fires inside the kernel is skipped by user-only sampling and fires again
/// a whole window later) and its end pc says nothing about what ran in between. Half a window
/// of slack beyond the fixed cost: one skipped firing doubles the count, so it is caught.
fn overlong(w: &Window, fixed: f64) -> bool {
    w.asked > 0 && w.deltas[0] as f64 > 1.5 * w.asked as f64 + fixed
}

// The live machinery is Linux's (perf_event_open, real-time signals carrying `si_fd`).
#[cfg(target_os = "linux")]
mod live;
#[cfg(target_os = "linux")]
pub use live::{Counters, PmuSampler, available, start};
// The tests reach the live half's internals.
#[cfg(all(test, target_os = "linux"))]
use live::*;

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
pub use unsupported::{Counters, PmuSampler, available, start};

/// The windows of one run.
#[derive(Debug, Clone)]
pub struct PmuProfile {
    /// How it sampled.
    pub config: PmuConfig,
    /// Every window recorded.
    pub windows: Vec<Window>,
    /// The fixed cost subtracted from every window.
    pub calibration: Calibration,
    /// Threads sampled over the run (those that ended included).
    pub threads: u64,
    /// Wall seconds sampled.
    pub wall_seconds: f64,
    /// Multiplexing, throttling, dropped windows.
    pub warnings: Vec<String>,
}

/// One function's metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The seed's method: a short window's deltas, when it began and ended in one function.
    Windows,
    /// The baseline: each long period's deltas, to the function where it ended.
    UniformLongPeriod,
}

/// Per-function hardware metrics, ranked by share of cycles.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Runs `f` with a namer of this process's pcs by function (symbolised from its current
/// mappings), crediting code inside `transparent` wrappers to the function whose closure they
/// run; `None` for unknown code.
fn with_names_in_this_process<R>(
    transparent: &[String],
    f: impl FnOnce(&mut dyn FnMut(u64) -> Option<String>) -> R,
) -> R {
    let (objects, segments) = crate::buckets::discover();
    let mut sym = Symbolizer::new(&objects);
    let mut name_of = |pc: u64| {
        let seg = segments.iter().find(|s| pc >= s.start && pc < s.end)?;
        let r = sym.lookup(seg.object, pc);
        if r.function == "[unknown]" {
            return None;
        }
        Some(
            crate::report::through_wrappers(&mut sym, seg.object, pc, &r.function, transparent)
                .unwrap_or(r.function),
        )
    };
    f(&mut name_of)
}

impl PmuProfile {
    /// Credits windows to functions (symbolised from this process's mappings) and ranks them.
    pub fn report(&self, top: usize) -> PmuReport {
        self.report_through(top, &[])
    }

    /// [`PmuProfile::report`], crediting code inside functions matching a `transparent` glob
    /// (wrappers that run their callers' code as inlined closures, as profpoint's
    /// `Point::__call_on` does) to the function the closure came from, as the heatmap's
    /// report does (needs debuginfo).
    pub fn report_through(&self, top: usize, transparent: &[String]) -> PmuReport {
        with_names_in_this_process(transparent, |names| self.report_with(top, names))
    }

    /// [`PmuProfile::report`] with a given symboliser (tests feed their own).
    pub fn report_with(
        &self,
        top: usize,
        name_of: &mut dyn FnMut(u64) -> Option<String>,
    ) -> PmuReport {
        let mut discarded = 0;
        let mut late = 0;
        let mut credited = Vec::new();
        let mut recorded = 0;
        for w in self.program_windows() {
            recorded += 1;
            if overlong(w, self.calibration.fixed[0]) {
                late += 1;
                continue;
            }
            match (name_of(w.start_pc), name_of(w.end_pc)) {
                (Some(a), Some(b)) if a == b => {
                    let mut d = [0.0; MAX_MEMBERS + 1];
                    for (k, x) in d.iter_mut().enumerate() {
                        *x = (w.deltas[k] as f64 - self.calibration.fixed[k]).max(0.0);
                    }
                    credited.push((a, d));
                }
                _ => discarded += 1,
            }
        }
        self.ranked(Method::Windows, recorded, discarded, late, credited, top)
    }

    /// What uniform sampling at the long period would report from the same run: each long
    /// period's deltas credited to the function where it ended (the seed's baseline, which
    /// smears every function towards the average). Same symbolisation as
    /// [`PmuProfile::report_through`].
    pub fn uniform_report_through(&self, top: usize, transparent: &[String]) -> PmuReport {
        with_names_in_this_process(transparent, |names| self.uniform_report_with(top, names))
    }

    /// [`PmuProfile::uniform_report_through`] with a given symboliser.
    pub fn uniform_report_with(
        &self,
        top: usize,
        name_of: &mut dyn FnMut(u64) -> Option<String>,
    ) -> PmuReport {
        let mut credited = Vec::new();
        let (mut recorded, mut unknown) = (0, 0);
        for w in self.program_windows() {
            recorded += 1;
            match name_of(w.start_pc) {
                Some(f) => {
                    let mut d = [0.0; MAX_MEMBERS + 1];
                    for (x, v) in d.iter_mut().zip(w.long) {
                        *x = v as f64;
                    }
                    credited.push((f, d));
                }
                None => unknown += 1,
            }
        }
        self.ranked(
            Method::UniformLongPeriod,
            recorded,
            unknown,
            0,
            credited,
            top,
        )
    }

    /// Windows of the program (the calibration loop's own left out: they are the sampler's
    /// work).
    fn program_windows(&self) -> impl Iterator<Item = &Window> {
        self.windows
            .iter()
            .filter(|w| !(in_calibration_loop(w.start_pc) && in_calibration_loop(w.end_pc)))
    }

    /// Sums the credited deltas per function and ranks the functions by share of the leader.
    fn ranked(
        &self,
        method: Method,
        windows: u64,
        discarded: u64,
        overlong: u64,
        credited: Vec<(String, [f64; MAX_MEMBERS + 1])>,
        top: usize,
    ) -> PmuReport {
        let mut events = vec![self.config.clock];
        events.extend(&self.config.events);
        let pos = |e: Event| events.iter().position(|x| *x == e);
        let mut per_fn: std::collections::HashMap<String, (u64, [f64; MAX_MEMBERS + 1])> =
            std::collections::HashMap::new();
        for (f, d) in credited {
            let e = per_fn.entry(f).or_insert((0, [0.0; MAX_MEMBERS + 1]));
            e.0 += 1;
            for (sum, x) in e.1.iter_mut().zip(d).take(events.len()) {
                *sum += x;
            }
        }
        let total = |k: usize| per_fn.values().map(|v| v.1[k]).sum::<f64>();
        let (tc, ti, tb) = (
            total(0),
            pos(Event::Instructions).map_or(0.0, total),
            pos(Event::BranchMisses).map_or(0.0, total),
        );
        let (tla, tlm) = (
            pos(Event::L1dReads).map_or(0.0, total),
            pos(Event::L1dReadMisses).map_or(0.0, total),
        );
        let pct = |x: f64, t: f64| if t > 0.0 { 100.0 * x / t } else { 0.0 };
        let mut rows: Vec<PmuRow> = per_fn
            .into_iter()
            .map(|(symbol, (n, v))| {
                let get = |e: Event| pos(e).map(|k| v[k]);
                let ins = get(Event::Instructions);
                let per_ki = |x: Option<f64>| match (x, ins) {
                    (Some(x), Some(i)) if i > 0.0 => Some(1000.0 * x / i),
                    _ => None,
                };
                PmuRow {
                    symbol,
                    windows: n,
                    cpi: ins.filter(|i| *i > 0.0).map(|i| v[0] / i),
                    bm_per_ki: per_ki(get(Event::BranchMisses)),
                    cm_per_ki: per_ki(get(Event::CacheMisses)),
                    cm_percent: match (get(Event::CacheMisses), get(Event::CacheReferences)) {
                        (Some(m), Some(r)) if r > 0.0 => Some(100.0 * m / r),
                        _ => None,
                    },
                    clock_percent: pct(v[0], tc),
                    instructions_percent: ins.map(|i| pct(i, ti)),
                    branch_misses_percent: get(Event::BranchMisses).map(|b| pct(b, tb)),
                    page_faults_per_ms: match (get(Event::PageFaults), get(Event::TaskClock)) {
                        (Some(f), Some(ns)) if ns > 0.0 => Some(1e6 * f / ns),
                        _ => None,
                    },
                    l1d_reads_percent: get(Event::L1dReads).map(|x| pct(x, tla)),
                    l1d_misses_percent: get(Event::L1dReadMisses).map(|x| pct(x, tlm)),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.clock_percent
                .total_cmp(&a.clock_percent)
                .then(a.symbol.cmp(&b.symbol))
        });
        rows.truncate(top);
        PmuReport {
            method,
            windows,
            discarded,
            overlong,
            long_period: self.config.long_period,
            window: self.config.window,
            calibration: self.calibration,
            events,
            warnings: self.warnings.clone(),
            rows,
        }
    }
}

impl PmuReport {
    /// The seed's table: Symbol, #, CPI, BM/KI, CM/KI, %CM, %CY, %I, %BM, with a legend (in the
    /// software mode: Symbol, #, %T, PF/ms). Columns the chosen events cannot fill show `-`.
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
        let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
        let sw = self
            .rows
            .iter()
            .map(|r| r.symbol.len())
            .max()
            .unwrap_or(6)
            .clamp(6, 60);
        if software {
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
        } else {
            // The L1D shares only when those events were counted.
            let l1d = self.events.contains(&Event::L1dReads)
                || self.events.contains(&Event::L1dReadMisses);
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
        }
        for warning in &self.warnings {
            writeln!(w, "warning: {warning}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_os = "linux")]
    use crate::sys;
    #[cfg(target_os = "linux")]
    use std::sync::atomic::Ordering;
    #[cfg(target_os = "linux")]
    use std::time::Duration;

    #[cfg(target_os = "linux")]
    #[test]
    fn ioctl_numbers_match_the_kernel_header() {
        // _IO('$', 2) and _IOW('$', 4, __u64): dir 1 (write) << 30 | size 8 << 16 | '$' << 8 | nr.
        assert_eq!(IOC_REFRESH, (b'$' as libc::c_ulong) << 8 | 2);
        assert_eq!(
            IOC_PERIOD,
            1 << 30 | 8 << 16 | (b'$' as libc::c_ulong) << 8 | 4
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn si_fd_is_where_we_read_it() {
        // A pipe with F_SETSIG raises our signal with si_fd set: read it back at our offset.
        use std::sync::atomic::AtomicI64;
        static SEEN: AtomicI64 = AtomicI64::new(-1);
        extern "C" fn h(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
            // SAFETY: a valid siginfo from the kernel, carrying si_fd because of F_SETSIG.
            let fd = unsafe { *((info as *const u8).add(SI_FD_OFFSET) as *const libc::c_int) };
            SEEN.store(fd as i64, Ordering::SeqCst);
        }
        let sig = libc::SIGRTMIN() + 7;
        // SAFETY: zeroed sigaction, then filled; pipe/fcntl/write on our own descriptors.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction =
                h as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            act.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(sig, &act, std::ptr::null_mut());
            let mut p = [0; 2];
            assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
            sys::route_signal(p[0], sys::gettid(), sig).unwrap();
            libc::write(p[1], b"x".as_ptr().cast(), 1);
            for _ in 0..100 {
                if SEEN.load(Ordering::SeqCst) >= 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(SEEN.load(Ordering::SeqCst), p[0] as i64);
            libc::close(p[0]);
            libc::close(p[1]);
            libc::signal(sig, libc::SIG_DFL);
        }
    }

    fn profile(windows: Vec<Window>) -> PmuProfile {
        PmuProfile {
            // Windows of 5,000 cycles (`win` asks exactly that): with the 1,000 fixed below, a
            // window counting over 1.5 x 5,000 + 1,000 = 8,500 cycles is overlong.
            config: PmuConfig {
                window: 5_000,
                ..PmuConfig::default()
            },
            windows,
            calibration: Calibration {
                windows: 10,
                fixed: [1000.0, 100.0, 1.0, 10.0, 2.0, 0.0, 0.0],
            },
            threads: 1,
            wall_seconds: 1.0,
            warnings: vec![],
        }
    }

    fn win(start: u64, end: u64, d: [u64; 5]) -> Window {
        let mut deltas = [0; MAX_MEMBERS + 1];
        deltas[..5].copy_from_slice(&d);
        Window {
            start_pc: start,
            end_pc: end,
            asked: 5_000,
            deltas,
            ..Window::default()
        }
    }

    #[test]
    fn windows_count_only_when_they_begin_and_end_in_one_function_and_calibration_is_subtracted() {
        // Functions: f at 0x1000.., g at 0x2000..
        let mut names = |pc: u64| match pc {
            0x1000..0x2000 => Some("f".to_string()),
            0x2000..0x3000 => Some("g".to_string()),
            _ => None,
        };
        let p = profile(vec![
            // f: 4000 cycles, 2100 instructions, 11 branch misses, 110 refs, 12 misses (raw)
            win(0x1010, 0x1020, [4000, 2100, 11, 110, 12]),
            win(0x1010, 0x1030, [4000, 2100, 11, 110, 12]),
            // g: high CPI, at the overlong limit but not past it
            win(0x2010, 0x2020, [8500, 1100, 1, 50, 42]),
            // across f and g: discarded
            win(0x1010, 0x2020, [4000, 2000, 0, 0, 0]),
            // unknown: discarded
            win(0x9000, 0x9000, [4000, 2000, 0, 0, 0]),
            // in f, but one firing was skipped and the window ran twice as long: overlong,
            // not credited
            win(0x1010, 0x1020, [10_000, 2100, 900, 110, 12]),
        ]);
        let r = p.report_with(10, &mut names);
        assert_eq!((r.windows, r.discarded, r.overlong), (6, 2, 1));
        let f = r.rows.iter().find(|r| r.symbol == "f").unwrap();
        let g = r.rows.iter().find(|r| r.symbol == "g").unwrap();
        assert_eq!((f.windows, g.windows), (2, 1));
        // After calibration: f 3000 cycles / 2000 instructions per window: CPI 1.5;
        // branch misses 10 per 2000 instr = 5 per KI; cache misses 10 per 2000 = 5 per KI.
        assert!((f.cpi.unwrap() - 1.5).abs() < 1e-9);
        assert!((f.bm_per_ki.unwrap() - 5.0).abs() < 1e-9);
        assert!((f.cm_per_ki.unwrap() - 5.0).abs() < 1e-9);
        assert!((f.cm_percent.unwrap() - 10.0).abs() < 1e-9);
        // g: 7500 / 1000 = CPI 7.5, and g leads by share of cycles: f 6000, g 7500.
        assert!((g.cpi.unwrap() - 7.5).abs() < 1e-9);
        assert_eq!(r.rows[0].symbol, "g");
        assert!((g.clock_percent - 100.0 * 7500.0 / 13500.0).abs() < 1e-9);
        let mut out = Vec::new();
        r.write_table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for col in ["Symbol", "CPI", "BM/KI", "CM/KI", "%CM", "%CY", "%I", "%BM"] {
            assert!(text.contains(col), "{col} in {text}");
        }
        assert!(text.contains("2 that began and ended"), "{text}");
        assert!(text.contains("1 overlong"), "{text}");
    }

    #[test]
    fn l1d_events_use_the_kernel_cache_encoding_and_every_event_has_one_name() {
        // L1D = 0, OP_READ = 0, RESULT_MISS = 1: config 1 << 16 (perf_event.h).
        #[cfg(target_os = "linux")]
        {
            assert_eq!(Event::L1dReads.kind(), (3, 0));
            assert_eq!(Event::L1dReadMisses.kind(), (3, 0x10000));
        }
        for (e, name) in EVENT_NAMES {
            assert_eq!(name.parse::<Event>(), Ok(e));
            // The JSON name is the same.
            assert_eq!(
                profpoint_json::to_string(&e).unwrap(),
                format!("\"{name}\"")
            );
        }
        let e = "l1-misses".parse::<Event>().unwrap_err();
        assert!(
            e.contains("\"l1-misses\" is not an event") && e.contains("l1d-read-misses"),
            "{e}"
        );
    }

    #[test]
    fn pmu_events_come_from_the_environment_or_a_clear_error() {
        let env = |events: &'static str| {
            move |k: &str| match k {
                "PROFPOINT_PMU" => Some("1".to_string()),
                "PROFPOINT_PMU_EVENTS" => Some(events.to_string()),
                _ => None,
            }
        };
        let c = PmuConfig::from_env_vars(env("instructions, l1d-reads,l1d-read-misses"))
            .unwrap()
            .unwrap();
        assert_eq!(
            c.events,
            [Event::Instructions, Event::L1dReads, Event::L1dReadMisses]
        );
        for bad in [
            "",
            "instructions,,",
            "cycles",
            "l1-misses",
            "instructions,instructions,instructions,instructions,instructions,instructions,instructions",
        ] {
            let e = PmuConfig::from_env_vars(env(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("PROFPOINT_PMU_EVENTS={bad:?}: expected up to 6")),
                "{e}"
            );
        }
    }

    #[test]
    fn the_l1d_shares_appear_when_counted() {
        let p = PmuProfile {
            config: PmuConfig {
                window: 5_000,
                events: vec![Event::Instructions, Event::L1dReads, Event::L1dReadMisses],
                ..PmuConfig::default()
            },
            windows: vec![
                win(0x1010, 0x1020, [4000, 2000, 300, 30, 0]),
                win(0x2010, 0x2020, [4000, 2000, 100, 10, 0]),
            ],
            calibration: Calibration::default(),
            threads: 1,
            wall_seconds: 1.0,
            warnings: vec![],
        };
        let mut names = |pc: u64| Some(if pc < 0x2000 { "f" } else { "g" }.to_string());
        let r = p.report_with(10, &mut names);
        let f = r.rows.iter().find(|r| r.symbol == "f").unwrap();
        assert_eq!(f.l1d_reads_percent, Some(75.0));
        assert_eq!(f.l1d_misses_percent, Some(75.0));
        let mut out = Vec::new();
        r.write_table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("%L1DA") && text.contains("%L1DM"), "{text}");
        assert!(text.contains("75.00"), "{text}");
    }

    #[test]
    fn env_and_config_errors_name_the_value() {
        let env = |k: &str| match k {
            "PROFPOINT_PMU" => Some("1".to_string()),
            "PROFPOINT_PMU_WINDOW" => Some("7".to_string()),
            _ => None,
        };
        let e = PmuConfig::from_env_vars(env).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"PROFPOINT_PMU_WINDOW="7": expected a window in cycles between 100 and 1000000"#
        );
        let on = |k: &str| (k == "PROFPOINT_PMU").then(|| "1".to_string());
        assert!(PmuConfig::from_env_vars(on).unwrap().is_some());
        let bad = PmuConfig {
            long_period: 10,
            ..PmuConfig::default()
        };
        let e = start(bad).unwrap_err();
        assert!(e.to_string().contains("long period 10"), "{e}");
    }

    #[cfg(not(target_os = "linux"))]
    #[test]
    fn elsewhere_than_linux_start_says_the_platform_lacks_it() {
        let msg = start(PmuConfig::default()).unwrap_err().to_string();
        assert!(msg.contains("not available on this platform"), "{msg}");
        assert_eq!(available().unwrap_err().to_string(), msg);
        assert!(Counters::open(&[Event::Instructions]).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn without_a_pmu_start_names_the_cause_and_the_fix() {
        match available() {
            Ok(()) => println!(
                "SKIPPED without_a_pmu_start_names_the_cause_and_the_fix: this machine has a PMU"
            ),
            Err(e) => {
                let msg = start(PmuConfig::default()).unwrap_err().to_string();
                assert_eq!(msg, e.to_string());
                assert!(
                    msg.contains("perf_event_paranoid")
                        || msg.contains("no hardware performance counters")
                        || msg.contains("denied"),
                    "{msg}"
                );
            }
        }
    }
}
