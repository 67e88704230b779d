//! The overhead budget: annotate everything and keep the program's speed.
//!
//! # Concept
//! An enabled point costs ~25 ns; annotate every function of a crate whose functions take
//! 1-5 ns and the program runs many times slower, its table distorted by profpoint's own cost.
//! The budget bounds that cost: the instrumentation of the whole process may take at most a
//! set share of its CPU time (`PROFPOINT_BUDGET`, [`crate::set_budget`]; 2% by default).
//! A point too hot to time fully is timed on one call in N (N chosen per point), counted only
//! if even that costs too much; points that cool down are timed fully again. Counting is the
//! floor: the budget never turns a point off, so every count is exact. Where counting alone
//! costs more than the budget, the hottest points stay counted, the others share the budget
//! as if they were not there, and the report says what counting cost and who made it
//! (`floor`). Only where the user opted in to bursts ([`set_bursts`],
//! `PROFPOINT_BUDGET=2%,bursts`) do those hottest points go, instead, to bursts: off but for
//! one short burst a round in which they are timed on every call, their calls between bursts
//! estimated. Every estimated total carries an error bar. A program whose points cost less
//! than the budget runs exactly as without it: nothing is throttled, every call is timed.
//!
//! # Why 2% by default
//! It is below the run-to-run noise of a wall-time measurement on a shared machine (2-5% on
//! this project's 2-core VM: `BENCHMARKS.md`), so a program under the default budget is not
//! measurably slower than without profpoint's points, and one timed call in N still times
//! thousands of calls a second of every hot point: its total's error bar is well under 1%.
//!
//! # Mechanism
//! A controller thread (`profpoint-budget`), started by the first point call of the process
//! (never before `main`'s first use, never in a loader context: see `ensure_started`), wakes
//! every 10 ms at first, then every 100 ms (every 1 s while no point is called). Each round:
//! - it reads every slot's scalar counters (one cache line each, under the slots' seqlocks,
//!   no lock the hot path takes) and the process's CPU time;
//! - it prices the round's calls with a cost model measured once in this process
//!   (`overhead::mode_costs`: a timed call, a sampled untimed call, a counted call);
//! - if that cost is over the budget, or well under it while points are throttled, it gives
//!   every point it manages the same number `k` of timed calls per round (points called
//!   fewer times are timed on every call), the largest `k` whose predicted cost is 70% of the
//!   budget; a point called `n` times is then timed on one call in `N = n / k` (rounded up to a
//!   power of two). If even `k = 1` costs too much, the hottest points count only, and if all
//!   of them counting still costs too much, the hottest stay counted (the floor) or, with
//!   bursts allowed, go to bursts (below), with the rate they were called at. N falls by at most 4x a round (it rises at once): a bursty point does
//!   not flap between timed and sampled; a point in bursts counts first when it comes back;
//! - every change is an event in the report;
//! - then it runs the round's burst, if any point is in bursts or counted only.
//!
//! # Bursts
//! Switched off, a hot point would tell nothing more: no count, no time, and its time would
//! land in the self time of the point around it (what the budget did before, and what TAU's
//! throttle does). In bursts (after Hirzel and Chilimbi's bursty tracing, which samples short
//! bursts of fully instrumented code) it is off but for one burst a round, a window of
//! 50 us-10 ms in which the controller switches every point in bursts on, with overhead
//! compensation on (their mean call is then about what it is without the points), sleeps,
//! and switches them off again. The window aims at a fifth of the budget ([`BURST_SHARE`]):
//! its length follows what the last burst cost, at most doubling or halving a round. Its
//! counts begin after a warm-up (a quarter of the window, 50-250 us, [`burst::warm_up`]):
//! the first calls after the points go on run slower than their usual calls, and their
//! excess, which compensation's fixed figure does not take out, stood for every call
//! between the windows. The warm-up's calls are counted (a point in bursts has them
//! estimated with its calls between windows, a counted point prices them at its window's),
//! its cost is the burst's, and no rate is read from it. What a burst saw stands for the
//! round:
//! - calls: the burst's calls of each point are known exactly (the counters are read just
//!   before and just after it); those between bursts are estimated from count windows
//!   (`sample`): between rounds the controller counts the points in bursts for 1 ms at a
//!   uniform random moment of each 10-100 ms slot, and a slot's calls are the window's over
//!   its share of the slot, corrected per thread for what counting slowed it. The moment is
//!   drawn here, so the estimate holds whatever the program's phases; the interval comes from
//!   successive slots' spread, and with fewer than three windows that saw a call the count is
//!   a lower bound (the calls seen);
//! - times: the calls not seen at the bursts' mean call (pooled over bursts, `burst::KEEP`);
//!   a burst whose mean call is over 4 times the median of the point's last 15 bursts' means,
//!   or whose longest call (a new maximum) is over 1,000 times the others' mean, held a stall,
//!   which is counted once and not pooled;
//! - what a timed call costs in this program: the points beside the bursts run slower in a
//!   burst than around it, and the time the burst added over the calls it timed
//!   ([`burst::burst_extra`], pooled) is the cost of a timed call with the program's own
//!   caches, paths and nesting (1.3-1.5x the calibration loop's on base64's). Timed calls
//!   are priced at it, compensation takes it out (both within 1-2x the calibration's
//!   figure), and the report gives it;
//! - the points beside the bursts: between bursts their children in bursts are off, and
//!   their time lands in the parent's self time; so a parent's self time is its total times
//!   the share of self it had in the bursts, once they hold a timed call of it.
//!
//! The windows time the points the controller counts, too (and run for them alone when no
//! point is in bursts): a counted call stands for its point's mean call and self time (in its
//! estimate and in the intervals around it), and a mean taken before the point was counted
//! is from the run's first rounds, when every point was timed and nothing compensated. On
//! base64's loop a counted `ChunkedEncoder::encode` read 154 ns of self time a call against
//! perf's 29, and the self times summed to 1.2-1.4x the wall time; timed in the windows, 22 ns
//! and 0.84-0.89x. Its calls stay counted exactly; its timed calls in the windows make its
//! strata (ratio estimates, as for a sampled point); their cost counts as the windows'.
//!
//! # Isolation windows: self times from totals
//! A parent's self time in a burst is its time less its children's less what compensation
//! takes out for their instrumentation, a fixed figure a call; on base64's loop the real
//! figure differs by 2-6 ns a nested call from site to site (how the parent's code changes
//! when its children's points are on), and parents with many annotated children ranked above
//! their children against perf. So after each burst the controller runs a second window
//! (`burst::isolate`, at least 1 ms) in which only one class of the windows' parents is on, a
//! set none of which was ever found inside another in the tree of points
//! (`isolation::isolation_classes`; the classes take turns, a round each): each is timed
//! with every throttled point below it off, its calls holding its children's work at the
//! cost of their disabled guards, which is the annotated program's own. Leaves (no other
//! point found inside them) are not isolated: their bursts' times have no nested call's cost
//! in them. A point's isolated mean call is kept from its last 15 such windows (less those
//! whose mean is over twice the median: a timer interrupt in a window of a few hundred calls,
//! `Isolated::mean`). The report then gives such a point the total its mean call times its
//! calls (error bar: the windows' spread), and the self time that less each child's calls
//! under it at the child's mean call (isolated where it has one, else its bursts'), scaled by
//! how much longer the child's calls from this parent took than its calls from all its
//! callers in the bursts, whose windows also pool who calls whom (`Controller::edges`: the
//! tree of points also holds the isolation windows' calls, attached to whatever was on above
//! them). The bursts' total of such a parent is not used: with every nested point timed and
//! compensated, base64's `internal_encode` read 10 ns a call there against 23 alone (and in
//! perf). On base64's loop (docs/budget.md, "Isolation windows" and "Totals from the isolation
//! windows"): 0-3 pairs out of perf's order, mean 0.9 over 16 runs, against 1.5 over 12 for
//! self times capped at the bursts' totals and 2-4 before isolation; the top three in perf's
//! order in 11 of 16 runs. Its limits: a counted point's calls inside an isolated parent cost
//! their counting (~2 ns) there; a child's mean call is from its own windows, a parent's from
//! its own, so a thin wrapper reads the small difference of two means measured at different
//! times (base64's `ChunkedEncoder::encode` reads 0 where perf has 0.5%); an isolated mean
//! reads 10-25% over the same point timed alone for a whole run (about half of that goes with
//! a 2 ms warm-up, which did not improve the ranking); the windows' timed calls cost as the
//! bursts' do and are priced with them.
//!
//! The error bar of a point in bursts: its count windows' (`sample`), the unseen calls priced
//! at the bursts' mean call.
//!
//! The controller manages only points in a state it set itself, or on: a point a user sampled,
//! counted or switched off (by variable or API) stays as the user set it (every public setter
//! clears the point's `by_budget` mark; the controller's own changes set it; a setter called
//! during a burst's few hundred microseconds is overwritten once, at the burst's end, as is a
//! `compensate` call then). Async points are
//! not managed (their timing does not sample).
//!
//! # Estimates and error bars
//! A point's N changes over time, and its calls may be slower in one phase than another, so a
//! total is estimated per round (a stratum), not for the run: each round's timed time scaled
//! by its calls over its timed calls. The variance of that ratio estimator, summed over
//! rounds, is `sum(n_c^2 (1 - n/n_c) / n) * S^2` (`n` timed of `n_c` outermost calls in a round,
//! `S^2` the variance of the point's timed calls, from its distribution); the report gives the
//! 95% half-width. A counted point's rounds pool into strata with its timed calls in the
//! bursts' windows; rounds no window timed it in (before a stratum closes) are priced at the
//! point's mean timed call (a model, not a sample: its error bar says so by growing with
//! them). A recursive point's counted calls (unmarked) are split as its marked calls split,
//! and only the outermost share is priced (`Est::outermost_of_counted`). A stratum
//! holds at least 32 timed calls, and its longest, if over 1,000 times the others' mean and a
//! new maximum, is a stall counted once (see `Est::close`); a stratum whose mean timed call is
//! over 4 times the median of the point's last 15 strata's held a stall too (one that was not
//! a new maximum, or a guest's timer interrupt of tens of microseconds): its timed calls count
//! once and its untimed ones are priced at that median. The last stratum, closed for a report
//! with fewer, keeps its timed calls exact and prices the rest at the point's mean.

use crate::clock;
use crate::overhead::{self, ModeCosts};
use crate::point::{self, Kind, Point};
use crate::shard;
use crate::slot::Scalars;
pub(crate) use profpoint_report::{BudgetEvent, BudgetReport, ThrottledPoint};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

mod allocate;
mod burst;
mod controller;
mod estimate;
mod floor;
mod isolation;
mod sample;
mod spent;
pub(crate) mod wall;

use controller::{Controller, PointState, delta, fold_round, run};
pub(crate) use estimate::{Est, usual_stall};
pub(crate) use isolation::IsolatedMean;

/// The budget in parts per million of CPU time; 0 when off. The default, 2%, is
/// `PROFPOINT_BUDGET`'s (see the module docs for why).
static PPM: AtomicU32 = AtomicU32::new(crate::env::DEFAULT_BUDGET_PPM);
/// Whether the user opted in to bursts (off by default: counting is the budget's floor).
static BURSTS: AtomicBool = AtomicBool::new(false);
/// Whether the controller thread was started in this process.
static STARTED: AtomicBool = AtomicBool::new(false);
/// Set in a forked child: the controller restarts there only with the child's first new
/// thread (a child that only runs until `exec` must not start threads).
static FORKED: AtomicBool = AtomicBool::new(false);
/// Rounds done (read by tests and the report without the lock).
static ROUNDS: AtomicU64 = AtomicU64::new(0);

/// The first round's interval; each next one doubles, up to [`INTERVAL`].
const FIRST_INTERVAL: Duration = Duration::from_millis(10);
const INTERVAL: Duration = Duration::from_millis(100);
/// The interval while no point is called.
const IDLE_INTERVAL: Duration = Duration::from_secs(1);
/// What share of the budget an allocation aims at (headroom for rates that grow).
const TARGET: f64 = 0.7;
/// Below this share of the budget, throttled points are given more timed calls.
const RELAX_BELOW: f64 = 0.5;
/// N falls by at most this factor a round.
const MAX_RELAX: u32 = 4;
/// The share of the budget the bursts aim at (the steady states are allocated [`TARGET`] of
/// it, and re-allocated above `1 - BURST_SHARE`).
const BURST_SHARE: f64 = 0.2;
/// A burst's first length, and the bounds of every later one.
const FIRST_WINDOW: Duration = Duration::from_micros(200);
const MIN_WINDOW: Duration = Duration::from_micros(50);
const MAX_WINDOW: Duration = Duration::from_millis(10);
/// The shortest isolation window (`burst::isolate`): shorter, the means of two windows of
/// one call tree, a parent's and its child's, differed by 15-30 ns on base64's loop.
const MIN_ISOLATION_WINDOW: Duration = Duration::from_millis(1);
/// The bounds of a burst's warm-up ([`burst::warm_up`]).
const MIN_WARM_UP: Duration = Duration::from_micros(50);
const MAX_WARM_UP: Duration = Duration::from_micros(250);
/// A burst whose calls took this many times the median of the recent bursts' means held a
/// stall (`fold_burst`): a preemption of a millisecond among a few hundred calls of 300 ns
/// makes 12x; a program whose calls of one function take 4x as long in one burst as in the
/// others is read as stalled there, until such bursts are the recent majority.
const BURST_STALL_RATIO: f64 = 4.0;
/// Weight of the past in a point's recent mean call (`PointState::mean_pool`) each round.
const MEAN_KEEP: f64 = 0.8;
/// The fewest timed calls, pooled over bursts, on which a timed call's cost in the program is
/// handed to compensation (see `Controller::fold_in_context`).
const MIN_IN_CONTEXT_CALLS: f64 = 1000.0;
/// Events kept for the report (the rest are counted).
const MAX_EVENTS: usize = 1000;
/// The largest N the controller sets (beyond it, a point counts only).
const MAX_EVERY: u32 = 1 << 20;

/// Sets the budget: `Some(percent)` of the process's CPU time, `None` for none (every point
/// in its own state, throttled points timed fully again). Starts the controller if points
/// were already called.
pub(crate) fn set(percent: Option<f64>) {
    let ppm = percent.map_or(0, |p| {
        (p.clamp(0.0, 100.0) * 10_000.0).round().max(1.0) as u32
    });
    // Relaxed: the controller reads it at its next round; nothing else depends on it.
    PPM.store(ppm, Ordering::Relaxed);
    if ppm != 0 && shard::shard_count() > 0 {
        ensure_started(true);
    }
}

/// Allows bursts (the budget's last resort beyond counting, which estimates the calls of the
/// points in them) or withdraws them (points in bursts are counted again at the next round).
pub(crate) fn set_bursts(allowed: bool) {
    // Relaxed: the controller reads it at its next round; nothing else depends on it.
    BURSTS.store(allowed, Ordering::Relaxed);
}

/// Whether bursts are allowed (see [`set_bursts`]).
pub(crate) fn bursts_allowed() -> bool {
    // Relaxed: see `set_bursts`.
    BURSTS.load(Ordering::Relaxed)
}

/// The budget in percent of CPU time, `None` when off.
pub(crate) fn get() -> Option<f64> {
    // Relaxed: see `set`.
    match PPM.load(Ordering::Relaxed) {
        0 => None,
        ppm => Some(f64::from(ppm) / 10_000.0),
    }
}

/// The controller starts from the cold path of a user's point (see `point::ON_NEW_SLOT`).
#[cfg(not(feature = "off"))]
#[linkme::distributed_slice(crate::point::ON_NEW_SLOT)]
static START_ON_FIRST_CALL: fn(bool) = ensure_started;

/// Starts the controller thread once per process (from the cold path of a point's first call
/// on a thread; `new_thread` when that thread just got its shard). Never waits for it.
pub(crate) fn ensure_started(new_thread: bool) {
    // Relaxed: a flag; the compare-exchange below decides who starts the thread.
    if STARTED.load(Ordering::Relaxed) || PPM.load(Ordering::Relaxed) == 0 {
        return;
    }
    if FORKED.load(Ordering::Relaxed) && !new_thread {
        return;
    }
    if STARTED
        .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    // Blocking every asynchronous signal: a signal for the program goes to its own threads.
    let spawned = crate::threads::spawn_quiet(
        std::thread::Builder::new()
            .name("profpoint-budget".into())
            .stack_size(128 * 1024),
        run,
    );
    if let Err(e) = spawned {
        crate::diag::warn_line!(
            "profpoint: the overhead budget's thread could not start ({e}): points are timed on every call"
        );
        state().note = Some(format!("its thread could not start: {e}"));
    }
}

/// A point's state as the controller sees and sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    On,
    Sampled(u32),
    Count,
    /// Off between the controller's bursts, on during them (the controller's last resort).
    Burst,
    /// Off (only ever set by the user: the controller's last resort is `Burst`).
    Off,
}

impl Mode {
    /// The point's state as its status says (a point in bursts reads `Off`, or `On` during
    /// a burst: see [`Mode::managed`]).
    fn of(p: &Point) -> Mode {
        if !p.is_enabled() {
            return Mode::Off;
        }
        match p.sampling() {
            None => Mode::On,
            Some(0) => Mode::Count,
            Some(n) => Mode::Sampled(n),
        }
    }

    /// The state of a point the controller knows as `st`: a point it put in bursts reads
    /// `Off` between them, and is still the controller's while no public setter touched it.
    fn managed(p: &Point, st: &PointState) -> Mode {
        let mode = Mode::of(p);
        if mode == Mode::Off && st.set == Some(Mode::Burst) && p.is_by_budget() {
            Mode::Burst
        } else {
            mode
        }
    }

    fn apply(self, p: &Point) {
        p.set_by_budget(|p| match self {
            Mode::On => p.set_enabled(true),
            Mode::Sampled(n) => p.set_sampling(n),
            Mode::Count => p.set_counting(),
            Mode::Burst | Mode::Off => p.set_enabled(false),
        });
    }

    /// How throttled: on < sampled (by N) < count < burst < off.
    fn rank(self) -> u64 {
        match self {
            Mode::On => 1,
            Mode::Sampled(n) => u64::from(n),
            Mode::Count => 1 << 40,
            Mode::Burst => 1 << 41,
            Mode::Off => 1 << 42,
        }
    }

    /// As the report spells it: `on`, `1/N`, `count`, `burst`, `off`.
    fn label(self) -> String {
        match self {
            Mode::On => "on".into(),
            Mode::Sampled(n) => format!("1/{n}"),
            Mode::Count => "count".into(),
            Mode::Burst => "burst".into(),
            Mode::Off => "off".into(),
        }
    }
}

static STATE: Mutex<Controller> = Mutex::new(Controller::EMPTY);

impl Controller {
    /// A controller before its first round.
    pub(super) const EMPTY: Controller = Controller {
        points: Vec::new(),
        scratch: Vec::new(),
        last_tick: 0,
        last_cpu_ns: 0,
        cost_ticks: 0.0,
        cpu_ns: 0,
        controller_ns: 0,
        costs: None,
        events: Vec::new(),
        events_dropped: 0,
        note: None,
        running: false,
        base: Vec::new(),
        plan: None,
        window_start: 0,
        window_end: 0,
        window: Duration::ZERO,
        window_calls: Vec::new(),
        window_warm: Vec::new(),
        window_warm_ticks: 0,
        window_reliable: false,
        window_reads: 0,
        in_context: (0.0, 0.0),
        bursts: 0,
        classes: Vec::new(),
        classes_from: 0,
        next_class: 0,
        isolation_plan: None,
        isolation_timed: 0,
        isolations: 0,
        edges: std::collections::BTreeMap::new(),
        counting: floor::CountingFloor::EMPTY,
        sampled: Vec::new(),
        count_slot: sample::FIRST_SLOT,
        slots_to: 0,
        spent: spent::Spent::EMPTY,
    };
}

fn state() -> MutexGuard<'static, Controller> {
    // A panic in a round leaves plain numbers behind; the next round goes on from them.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The estimates of every point (index order) from `abs`, the counters since process start,
/// minus those at the last [`reset`]; `None` when the controller never ran.
pub(crate) fn estimates(abs: &[Scalars]) -> Option<Vec<Est>> {
    estimates_at(abs, true)
}

/// [`estimates`], with the calls of points in bursts since their last slot (`open`) or
/// without them (a reset's base: the slot that ends later stands for them, with its own
/// variance, which a base holding the open estimate's would cancel).
fn estimates_at(abs: &[Scalars], open: bool) -> Option<Vec<Est>> {
    let c = state();
    if !c.running {
        return None;
    }
    // Points in bursts: the span since the last round over the burst in it (if one ran).
    let now = clock::now();
    let burst = c.burst_round(c.last_tick, now, abs);
    Some(
        abs.iter()
            .enumerate()
            .map(|(i, cur)| {
                // Since the point's last round (the whole run for a point no round saw yet).
                let (mut e, d, set, since) = match c.points.get(i) {
                    Some(PointState {
                        est,
                        last: Some(last),
                        set,
                        burst_since,
                        ..
                    }) => (*est, delta(cur, last), *set, *burst_since),
                    _ => (Est::default(), *cur, None, 0),
                };
                let window = c.window_calls.get(i).zip(c.window_warm.get(i));
                // The count windows' slots since the round. The slot under way is not yet one:
                // its calls seen are counted, and those not seen, since the last slot ended (or
                // the point went into bursts), are estimated at its last slot's rate, as
                // uncertain as a first slot (by their whole number); with no slot yet, they
                // are not, and the count is a lower bound (`Est::open`).
                let mut sampled = c.sampled.get(i).map(|s| s.pending);
                if open && set == Some(Mode::Burst) {
                    e.open = true;
                    // From the last slot's end, or the point's going into bursts, or the last
                    // burst's end (its calls in the burst are seen; the round's few
                    // milliseconds before it are left to the next slot).
                    let burst_end = if c.window_end >= c.window_start {
                        c.window_end
                    } else {
                        0
                    };
                    let from = c.slots_to.max(since).max(burst_end);
                    let open = now.saturating_sub(from) as f64;
                    if let Some(calls) = c.sampled.get(i).and_then(|s| s.open(open)) {
                        let s = sampled.get_or_insert_with(|| sample::Sampled {
                            compensated: overhead::call_ticks(),
                            ..Default::default()
                        });
                        s.unseen += calls;
                        s.var += calls * calls;
                    }
                }
                fold_round(burst.as_ref(), window, set, &mut e, sampled.as_ref(), &d);
                match c.base.get(i) {
                    Some(b) => e.since(b),
                    None => e,
                }
            })
            .collect(),
    )
}

/// Records the estimates at a reset (`abs`: the counters the reset made the new zero).
pub(crate) fn reset(abs: &[Scalars]) {
    let now = estimates_at(abs, false);
    let mut c = state();
    // `estimates` subtracted the previous base; add it back: the base is absolute.
    if let Some(now) = now {
        let old = std::mem::take(&mut c.base);
        c.base = now
            .iter()
            .enumerate()
            .map(|(i, e)| match old.get(i) {
                Some(b) => e.plus(b),
                None => *e,
            })
            .collect();
    }
}

/// What the isolation windows measured: each point's mean outermost call (ticks) timed in
/// them and its standard error, by point index (`None`: too few timed calls yet,
/// `Isolated::usable_mean`), and the calls of each edge of the tree of points in the bursts'
/// windows, pooled (see `Controller::edges`); `None` when no point has an isolated mean.
pub(crate) fn isolation() -> Option<Isolation> {
    let c = state();
    let means: Vec<Option<IsolatedMean>> = c
        .points
        .iter()
        .map(|st| st.isolated.usable_mean())
        .collect();
    means.iter().any(Option::is_some).then(|| Isolation {
        means,
        edges: c.edges.iter().map(|(&k, &v)| (k, v)).collect(),
    })
}

/// See [`isolation`].
pub(crate) struct Isolation {
    pub(crate) means: Vec<Option<IsolatedMean>>,
    /// ((caller's point index + 1, 0 at the root), point index + 1) -> [calls, timed calls,
    /// their ticks] in the bursts' windows, pooled.
    pub(crate) edges: Vec<((u32, u32), [f64; 3])>,
}

/// The budget's section of a report; `iso`, the report's snapshot of the isolation windows
/// ([`isolation`], read once: the totals and self times it made show the means they were made
/// from, while windows go on landing).
pub(crate) fn report(clk: &clock::ClockInfo, iso: Option<&Isolation>) -> BudgetReport {
    let c = state();
    let costs = c.costs.unwrap_or(ModeCosts {
        timed: 0.0,
        skipped: 0.0,
        counted: 0.0,
    });
    let mut throttled: Vec<(f64, ThrottledPoint)> = c
        .points
        .iter()
        .enumerate()
        .filter(|(_, st)| st.changes > 0)
        .map(|(i, st)| {
            let p = &point::all()[i];
            let calls = st.last.map_or(0, |s| s.nr()) as f64;
            let mut t = ThrottledPoint::default();
            t.point = p.name().to_string();
            // The state the controller gave it, while it is the controller's: its
            // status reads on inside a burst's window, and off between windows for a
            // point in bursts.
            t.now = match st.set {
                Some(m) if p.is_by_budget() => m.label(),
                _ => Mode::of(p).label(),
            };
            t.worst = st.worst.map_or_else(|| "on".into(), Mode::label);
            t.changes = st.changes;
            t.first_at_s = st.first_ns.unwrap_or(0) as f64 / 1e9;
            t.off_calls_per_s = st.off_rate;
            t.isolated_avg_ns = iso
                .and_then(|iso| iso.means.get(i).copied().flatten())
                .map(|m| clk.to_ns_f(m.mean));
            (calls, t)
        })
        .collect();
    throttled.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut report = BudgetReport::default();
    report.percent = get();
    report.running = c.running;
    report.note = c.note.clone();
    report.rounds = ROUNDS.load(Ordering::Relaxed);
    report.cost_timed_ns = clk.to_ns_f(costs.timed);
    report.cost_skipped_ns = clk.to_ns_f(costs.skipped);
    report.cost_counted_ns = clk.to_ns_f(costs.counted);
    // A pooled figure at or under zero is noise above the cost (the program ran as fast
    // in the bursts as around them): not a measurement of it, so none is given.
    report.cost_timed_in_context_ns = c
        .in_context_timed()
        .filter(|t| *t > 0.0)
        .map(|t| clk.to_ns_f(t));
    report.cost_percent = if c.cpu_ns == 0 {
        0.0
    } else {
        100.0 * clk.to_ns_f(c.cost_ticks) / c.cpu_ns as f64
    };
    report.controller_ms = c.controller_ns as f64 / 1e6;
    report.bursts = c.bursts;
    report.burst_window_us = c.window.as_secs_f64() * 1e6;
    report.isolations = c.isolations;
    report.throttled = throttled.into_iter().map(|(_, t)| t).collect();
    report.events = c.events.clone();
    report.events_dropped = c.events_dropped;
    report.bursts_allowed = bursts_allowed();
    // With bursts allowed, the hottest are not counted between them: counting alone is
    // not what the points cost.
    report.counting_over = (!bursts_allowed())
        .then(|| c.counting.report(|i| point::all()[i].name().to_string()))
        .flatten()
        .map(|o| {
            let mut over = profpoint_report::CountingOver::default();
            // The budget's ticks are its share of the CPU's: counting's share is the
            // budget's times how far over it counting went.
            over.percent = report.percent.unwrap_or(0.0) * o.ratio_to_budget;
            over.rounds = o.rounds;
            over.points = shares(o.points);
            over
        });
    // Above the budget for another reason than counting alone: how the cost was paid, and who.
    report.over = report
        .counting_over
        .is_none()
        .then(|| {
            c.spent
                .over(report.cost_percent, report.percent.unwrap_or(0.0), |i| {
                    point::all()[i].name().to_string()
                })
        })
        .flatten()
        .map(|o| {
            let mut over = profpoint_report::BudgetOver::default();
            over.parts = o
                .parts
                .into_iter()
                .map(|(part, percent)| {
                    let mut p = profpoint_report::CostPart::default();
                    p.part = part.to_string();
                    p.percent = percent;
                    p
                })
                .collect();
            over.points = shares(o.points);
            over.why = o.why;
            over
        });
    report.wall_sampler = wall::active().then(|| {
        let (periods, samples, own_ns) = wall::tally();
        let mut w = profpoint_report::WallSampler::default();
        w.period_ns = wall::PERIOD.as_nanos() as u64;
        w.periods = periods;
        w.samples = samples;
        w.own_ms = own_ns as f64 / 1e6;
        w
    });
    report
}

/// Points named with their shares of a cost, as the report gives them.
fn shares(points: Vec<(String, f64)>) -> Vec<profpoint_report::CountingShare> {
    points
        .into_iter()
        .map(|(point, share)| {
            let mut s = profpoint_report::CountingShare::default();
            s.point = point;
            s.share = share;
            s
        })
        .collect()
}

#[cfg(unix)]
thread_local! {
    /// The controller's lock, held by the forking thread across a `fork` (see `crate::runtime::fork`).
    static FORK_HELD: std::cell::RefCell<Option<MutexGuard<'static, Controller>>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(unix)]
/// Takes the controller's lock before a `fork`, so the child never inherits it held by the
/// controller thread (which the child does not have).
pub(crate) fn fork_hold() {
    let mut g = Some(state());
    let _ = FORK_HELD.try_with(|h| *h.borrow_mut() = g.take());
    drop(g);
}

#[cfg(unix)]
/// Releases it after a `fork`. In the child the controller is not running: it restarts with
/// the child's first new thread that calls a point.
pub(crate) fn fork_release(child: bool) {
    let held = FORK_HELD.try_with(|h| h.borrow_mut().take()).ok().flatten();
    if child {
        // Relaxed: the child has one thread.
        STARTED.store(false, Ordering::Relaxed);
        FORKED.store(true, Ordering::Relaxed);
        if let Some(mut c) = held {
            c.running = false;
            c.note = Some(
                "forked child: the controller restarts with the child's first new thread".into(),
            );
            return;
        }
    }
    drop(held);
}

#[cfg(test)]
mod tests;
