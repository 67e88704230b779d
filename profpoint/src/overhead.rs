//! Self-overhead: what one enabled point costs on this machine, measured in-process.
//!
//! # Concept
//! A point's reported time includes part of its own cost: the work between the first clock
//! read (in `start`) and the second (in `leave`). A parent point also pays the whole cost of
//! every point nested in it. Users comparing small numbers need both figures, so the report
//! header prints them and [`crate::ReportOptions::subtract_overhead`] (or
//! `PROFPOINT_SUBTRACT_OVERHEAD=1`) removes the in-interval part from every timed call.
//!
//! # Mechanism
//! A hidden point (never reported) times an empty body in a tight loop, through the path an
//! enabled `#[profile_point]` takes: the loop's time per iteration, less the bare loop's, is
//! the full cost of a call; the median interval the point recorded is the part that lands
//! inside a measurement. The same rounds time the point sampled and counted only, for the
//! overhead budget's cost model: one calibration a process, so every figure agrees. Best of a
//! few rounds, to keep a preempted round out.

use crate::clock;
use crate::point::{COMPENSATION, Kind, Name, Point};
use crate::shard;
pub(crate) use profpoint_report::{Overhead, Setup};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The first-use work so far.
pub(crate) fn setup(clk: &clock::ClockInfo) -> Setup {
    let mut setup = Setup::default();
    setup.ns = clk.to_ns_f(shard::setup_ticks() as f64);
    setup.calls = shard::setup_calls();
    setup
}

#[cfg_attr(not(feature = "off"), linkme::distributed_slice(crate::point::POINTS))]
static CALIBRATION: Point = Point::new(
    Name::Static("profpoint::calibration"),
    Kind::Hidden,
    file!(),
    line!(),
);

/// What the calibration measured, in raw ticks (converted at report time, so measuring before
/// `main` does not wait for the clock calibration).
struct Calibration {
    /// A timed call's full cost.
    full: f64,
    /// The part of it inside the timed interval (the median interval of an empty body).
    inside: f64,
    /// Each state's cost, for the budget's model.
    modes: ModeCosts,
}

/// One calibration a process: the header's overhead, compensation's figures and the budget's
/// cost model all come from the same interleaved rounds. Two separate loops timing the same
/// path read figures far apart in one process on a noisy guest (BENCHMARKS.md, "Figures
/// behind design choices"), so the header and the budget disagreed about what a timed call
/// costs.
static CALIBRATED: OnceLock<Calibration> = OnceLock::new();

/// Rounds of each calibration loop; the best round of each is kept.
const ROUNDS: usize = 7;
/// Calls per round: long enough (~0.1 ms) to dwarf the two clock reads around it.
const CALLS: u64 = 5_000;

/// Measures the overhead once per process (about 2 ms); later calls do nothing.
pub(crate) fn measure() {
    if cfg!(feature = "off") {
        // No point exists to time (the calibration point is not in any section).
        return;
    }
    calibrated();
}

/// The calibration, measured on first use: the calibration point's loops timed on every call,
/// sampled (one call in 2^30 timed), counted only, and the bare loop, interleaved round by
/// round ([`best_interleaved`]); the in-interval part is the median interval the timed loop
/// recorded.
fn calibrated() -> &'static Calibration {
    CALIBRATED.get_or_init(|| {
        let p = &CALIBRATION;
        let index = p.index() as usize;
        let before = shard::read_point(index);
        let [bare, timed, skipped, counted] =
            best_interleaved([None, Some(p), Some(p), Some(p)], |i| match i {
                1 => p.set_enabled(true),
                // One call in 2^30 timed: the rest take the sampled path's untimed branch.
                2 => p.set_sampling(1 << 30),
                3 => p.set_counting(),
                _ => {}
            });
        p.set_enabled(true);
        let c = shard::read_point(index).since(&before);
        let cost = |ticks: f64| (ticks - bare).max(0.0);
        let (timed, skipped, counted) = (cost(timed), cost(skipped), cost(counted));
        // A cheaper state never costs more than a dearer one in the model (noise can say so).
        let skipped = skipped.min(timed);
        Calibration {
            full: timed,
            inside: crate::hist::quantile(&c.hist, c.hist.iter().sum(), 0.5),
            modes: ModeCosts {
                timed,
                skipped,
                counted: counted.min(skipped),
            },
        }
    })
}

/// The calibration's (full cost of a timed call, in-interval part), if it ran.
fn measured() -> Option<(f64, f64)> {
    CALIBRATED.get().map(|c| (c.full, c.inside))
}

/// A timed call's whole instrumentation cost (ticks), as calibrated; 0 before the calibration.
pub(crate) fn call_ticks() -> f64 {
    measured().map_or(0.0, |(full, _)| full)
}

/// Ticks per iteration of each loop of `CALLS` calls through its point (the path an enabled
/// `#[profile_point]` takes; `None`: the bare loop), the best of `ROUNDS` rounds each, the
/// loops interleaved round by round: a preempted round is left out, and a machine whose speed
/// moves (a busy neighbour, a frequency step) moves every loop alike, where loops measured
/// one after another each met a different machine. That is the mechanism; no gain from it
/// has been shown (beside two busy loops the counted call's figure still moved from run to run
/// after the change: `tests/compensation.rs`). `prepare(i)` runs before loop `i`
/// of every round (it sets the state the loop measures).
fn best_interleaved<const N: usize>(
    loops: [Option<&'static Point>; N],
    mut prepare: impl FnMut(usize),
) -> [f64; N] {
    let mut best = [f64::MAX; N];
    for _ in 0..ROUNDS {
        for (i, point) in loops.iter().enumerate() {
            prepare(i);
            best[i] = best[i].min(round_ticks(*point));
        }
    }
    best
}

/// One round: ticks per iteration of a loop of `CALLS` calls through `point`, or of the bare
/// loop.
fn round_ticks(point: Option<&'static Point>) -> f64 {
    let t0 = clock::now();
    for i in 0..CALLS {
        if let Some(p) = point {
            // The same two out-of-line calls of profpoint's own code that every annotated
            // function makes.
            let mut t = std::mem::MaybeUninit::uninit();
            let _g = p.__enter(&mut t);
            std::hint::black_box(i);
        } else {
            std::hint::black_box(i);
        }
    }
    (clock::now() - t0) as f64 / CALLS as f64
}

/// What one call costs in each state of an on point, in raw ticks (the overhead budget's
/// cost model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ModeCosts {
    /// A timed call (two clock reads, the interval recorded).
    pub(crate) timed: f64,
    /// A call that sampled timing leaves untimed (a countdown, the count in the seqlock).
    pub(crate) skipped: f64,
    /// A call of a point that counts only (one per-thread increment).
    pub(crate) counted: f64,
}

/// What each state of an on point costs (the budget's model), found once per process with
/// the rest of the calibration (a few milliseconds, on the calling thread); later calls
/// return the same figures.
pub(crate) fn mode_costs() -> ModeCosts {
    calibrated().modes
}

/// Turns compensation on (measuring the overhead first, once) or off, and gives every point
/// its stand-ins for untimed calls under the new setting (`Point::set_means`).
pub(crate) fn set_compensation(on: bool) {
    if cfg!(feature = "off") {
        return;
    }
    let (full, inside, counted, skipped) = match on.then(|| {
        measure();
        measured()
    }) {
        Some(Some((full, inside))) => {
            // Untimed calls: their own cost, from the budget's cost model (measured once).
            let m = mode_costs();
            (
                full_ticks(full),
                inside.round().min(full.round()) as u64,
                m.counted.round() as u64,
                m.skipped.round() as u64,
            )
        }
        _ => (0, 0, 0, 0),
    };
    // Relaxed: independent constants; a call that reads old and new values compensates by a
    // mix of valid figures once.
    COMPENSATION.inside.store(inside, Ordering::Relaxed);
    COMPENSATION.full.store(full, Ordering::Relaxed);
    COMPENSATION.counted.store(counted, Ordering::Relaxed);
    COMPENSATION.skipped.store(skipped, Ordering::Relaxed);
    for p in crate::point::all() {
        p.refresh_stand_ins();
    }
}

/// A timed call's whole cost in the running program (raw ticks as `f64` bits; 0: not
/// measured), from the overhead budget's bursts (`budget::burst::burst_extra`): what
/// compensation takes out of the intervals around a timed call, in place of the calibration
/// loop's figure, once the controller has one.
static IN_CONTEXT: AtomicU64 = AtomicU64::new(0);

/// The in-context figure is used within [1, this] times the calibration's: a burst's rates
/// are noisy (a preempted thread, a program with phases), and a figure far above the
/// calibration's would take parents' own time out with their children's cost.
const IN_CONTEXT_MAX: f64 = 2.0;

/// Sets the in-context cost of a timed call (ticks); applied at once if compensating.
pub(crate) fn set_in_context(ticks: f64) {
    // Relaxed: a figure read on its own (see `set_compensation`).
    IN_CONTEXT.store(ticks.max(0.0).to_bits(), Ordering::Relaxed);
    if compensating()
        && let Some((full, _)) = measured()
    {
        COMPENSATION.full.store(full_ticks(full), Ordering::Relaxed);
    }
}

/// What compensation takes out per timed call (ticks): the in-context figure where there is
/// one, within its bounds, else the calibration's `calibrated`.
fn full_ticks(calibrated: f64) -> u64 {
    // Relaxed: see `set_in_context`.
    let ctx = f64::from_bits(IN_CONTEXT.load(Ordering::Relaxed));
    let full = if ctx > 0.0 && calibrated > 0.0 {
        in_context_bounded(ctx, calibrated)
    } else {
        calibrated
    };
    full.round() as u64
}

/// A timed call's in-context cost `ctx` held within its bounds around the calibration's figure
/// `calibrated` (see [`IN_CONTEXT_MAX`]): what compensation takes out, and what the budget's
/// controller prices a timed call at.
pub(crate) fn in_context_bounded(ctx: f64, calibrated: f64) -> f64 {
    ctx.clamp(calibrated, IN_CONTEXT_MAX * calibrated)
}

/// Whether compensation is on.
pub(crate) fn compensating() -> bool {
    // Relaxed: see `set_compensation`.
    COMPENSATION.full.load(Ordering::Relaxed) != 0
}

/// The overhead in nanoseconds, if it was measured.
pub(crate) fn get(clk: &clock::ClockInfo) -> Option<Overhead> {
    measured().map(|(per_call, inside)| {
        let mut overhead = Overhead::default();
        overhead.per_call_ns = clk.to_ns_f(per_call);
        overhead.in_interval_ns = clk.to_ns_f(inside);
        overhead
    })
}
