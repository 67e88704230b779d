//! The overhead budget: annotate everything and keep the program's speed.
//!
//! # Concept
//! An enabled point costs ~25 ns; annotate every function of a crate whose functions take
//! 1-5 ns and the program runs many times slower, its table distorted by profpoint's own cost.
//! The budget bounds that cost: the instrumentation of the whole process may take at most a
//! set share of its CPU time (`PROFPOINT_BUDGET`, [`crate::set_budget`]; 2% by default).
//! A point too hot to time fully is timed on one call in N (N chosen per point), counted only
//! if even that costs too much, and, as a last resort, timed in bursts: off but for one short
//! burst a round in which it is timed on every call; points that cool down are timed fully
//! again. Counts stay exact for every point not in bursts (a point in bursts has its calls
//! between them estimated), and every estimated total carries an error bar. A program whose points cost less than the budget
//! runs exactly as without it: nothing is throttled, every call is timed.
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
//!   of them counting still costs too much, the hottest go to bursts (below), with the rate
//!   they were called at. N falls by at most 4x a round (it rises at once): a bursty point does
//!   not flap between timed and sampled; a point in bursts counts first when it comes back;
//! - every change is an event in the report;
//! - then it runs the round's burst, if any point is in bursts.
//!
//! # Bursts
//! Switched off, a hot point would tell nothing more: no count, no time, and its time would
//! land in the self time of the point around it (what the budget did before, and what TAU's
//! throttle does). In bursts (after Hirzel and Chilimbi's bursty tracing, which samples short
//! bursts of fully instrumented code) it is off but for one burst a round, a window of
//! 50 us-10 ms in which the controller switches every point in bursts on, with overhead
//! compensation on (their mean call is then about what it is without the points), sleeps,
//! and switches them off again. The window aims at a fifth of the budget ([`BURST_SHARE`]):
//! its length follows what the last burst cost, at most doubling or halving a round. What a
//! burst saw stands for the round:
//! - calls: the counters of every point are read just before and just after the burst, so
//!   the burst's calls of each point are known exactly, and those of the points beside it (not
//!   in bursts, counted all the time): a point's calls in the round are its calls in bursts
//!   over theirs (both pooled over recent bursts, [`KEEP`]) times their calls in the round. A
//!   ratio estimate: the program's control flow fixes how many calls of one function come with
//!   another's, whatever the speed, so neither the burst slowing the program (its points are
//!   timed) nor a thread preempted in it biases it, as a scaling by time would (that read
//!   0.49-2.06x the true count beside two busy loops; the ratio 0.86-1.02x, with rare outliers
//!   near 1.5x: `tests/budget.rs`). With no point beside the bursts, a burst stands for its
//!   share of the round's time. A burst whose counter reads were slow (the controller
//!   preempted between two points' reads) or that saw nothing tells nothing: its round waits
//!   for the next burst that tells;
//! - times: the calls not seen at the bursts' mean call (pooled too); a burst whose calls took
//!   over 20 times the usual mean held a stall, which is counted once;
//! - the points beside the bursts: between bursts their children in bursts are off, and
//!   their time lands in the parent's self time; so a parent's self time is its total times
//!   the share of self it had in the bursts, once they hold a timed call of it.
//!
//! The error bar of a point in bursts adds, per round, half the squared difference of its
//! successive rounds' estimated rates (the first round: its whole estimate over its calls
//! seen).
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
//! 95% half-width. Rounds in which a point was counted only are priced at the point's mean
//! timed call (a model, not a sample: its error bar says so by growing with them). A stratum
//! holds at least 32 timed calls, and its longest, if over 1,000 times the others' mean and a
//! new maximum, is a stall counted once (see `Est::close`).

use crate::clock;
use crate::overhead::{self, ModeCosts};
use crate::point::{self, Kind, Point};
use crate::shard::{self, Scalars};
pub(crate) use profpoint_report::{BudgetEvent, BudgetReport, ThrottledPoint};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The default budget, in parts per million of the process's CPU time (2%; see the module
/// docs for why).
pub(crate) const DEFAULT_PPM: u32 = 20_000;

/// The budget in parts per million of CPU time; 0 when off.
static PPM: AtomicU32 = AtomicU32::new(DEFAULT_PPM);
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
/// A burst whose calls took this many times their usual mean held a stall (`fold_burst`).
const BURST_STALL_RATIO: f64 = 20.0;
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
        eprintln!(
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

/// A point's estimated totals since the start of the process, in ticks (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Est {
    /// Estimated total of the outermost calls.
    pub(crate) total: f64,
    /// Estimated self time.
    pub(crate) self_ticks: f64,
    /// `sum(n_c^2 (1 - n/n_c) / n)` over the sampled strata: times the variance of one call,
    /// the variance of `total`.
    pub(crate) var_factor: f64,
    /// Outermost calls in strata with no timed call (priced at the mean timed call).
    pub(crate) untimed: f64,
    /// Whether any call was left untimed (the totals are estimates).
    pub(crate) estimated: bool,
    /// Calls estimated between bursts (never seen): outermost ones, and all of them.
    unseen_outer: f64,
    unseen_all: f64,
    /// The variance (ticks squared) of the burst rounds' totals, summed over them.
    burst_var: f64,
    /// The last burst round's total per tick of the round (for the next one's variance).
    burst_rate: Option<f64>,
    /// The mean outermost call in bursts so far (ticks; 0 before the first), and how many
    /// bursts were taken as stalled (see `fold_burst`).
    burst_mean: f64,
    burst_count: u64,
    burst_stalls: u64,
    /// Its bursts' totals, self times, timed calls, outermost calls and calls, pooled over
    /// bursts (see [`KEEP`]): its mean call in bursts, for the calls between them.
    burst_pool_total: f64,
    burst_pool_self: f64,
    burst_pool_timed: f64,
    burst_pool_outer: f64,
    burst_pool_all: f64,
    /// For a point not in bursts: its timed calls' total and self time, and their number,
    /// in the bursts of the others (see `fold_beside_burst`).
    beside_total: f64,
    beside_self: f64,
    beside_timed: u64,
    /// Sampled rounds not yet closed as a stratum: a stratum holds at least [`MIN_TIMED`]
    /// timed calls, so that one long call (a preemption, say) is never scaled up by the
    /// calls of a round in which it was the only one timed.
    pending: Scalars,
}

/// The fewest timed calls in bursts that a point beside them takes its self share from.
const MIN_BESIDE: u64 = 1;

/// The fewest timed calls a sampled stratum closes with.
const MIN_TIMED: u64 = 32;

/// A stratum's longest timed call is taken as a stall when it is this many times the mean of
/// the others (see `Est::close`).
const STALL_RATIO: f64 = 1000.0;

impl Est {
    /// Adds the change `d` of a point's counters over one round.
    pub(crate) fn fold(&mut self, d: &Scalars) {
        if d.skipped == 0 {
            // Every call timed: exact.
            self.total += d.total as f64;
            self.self_ticks += d.self_signed();
            return;
        }
        self.estimated = true;
        self.pending.add(d);
        if self.pending.timed >= MIN_TIMED {
            self.close();
        }
    }

    /// Adds a round in which the point was in bursts (see "Bursts" in the module docs): `d` is
    /// the round, `w` what the round's burst saw of it (timed on every call, compensated),
    /// `calls` its calls in the whole round, estimated ([`burst_calls`]), `round_ticks` the
    /// round's length. The calls it was seen making are exact; those it was not are priced
    /// at its mean call in its bursts (pooled like the counts), and carry the error bar.
    pub(crate) fn fold_burst(
        &mut self,
        d: &Scalars,
        w: &Scalars,
        calls: f64,
        seen_before: u64,
        round_ticks: f64,
    ) {
        self.estimated = true;
        // Seen: before the burst began (in the state the round started in), and in it.
        self.fold(&delta(d, w));
        self.fold(w);
        if w.timed > 0 {
            let mean = w.total as f64 / w.timed as f64;
            if self.burst_mean > 0.0 && mean > BURST_STALL_RATIO * self.burst_mean {
                // The burst's calls took many times their usual mean: the thread was preempted
                // or faulted inside one of them. Counted once (above), not as the mean call
                // of the calls between bursts.
                self.burst_stalls += 1;
            } else {
                self.burst_count += 1;
                self.burst_mean += (mean - self.burst_mean) / self.burst_count as f64;
                self.burst_pool_total = self.burst_pool_total * KEEP + w.total as f64;
                self.burst_pool_self = self.burst_pool_self * KEEP + w.self_signed();
                self.burst_pool_timed = self.burst_pool_timed * KEEP + w.timed as f64;
                self.burst_pool_outer = self.burst_pool_outer * KEEP + (w.timed + w.skipped) as f64;
                self.burst_pool_all = self.burst_pool_all * KEEP + w.nr() as f64;
            }
        }
        let unseen_all = (calls - (d.nr() + seen_before) as f64).max(0.0);
        if unseen_all == 0.0 || self.burst_pool_timed <= 0.0 {
            return;
        }
        let unseen_outer = unseen_all * (self.burst_pool_outer / self.burst_pool_all.max(1.0));
        let x = unseen_outer * self.burst_pool_total / self.burst_pool_timed;
        self.total += x;
        self.self_ticks += unseen_outer * self.burst_pool_self / self.burst_pool_timed;
        self.unseen_outer += unseen_outer;
        self.unseen_all += unseen_all;
        // One burst is a sample of its round: the spread between successive rounds' estimated
        // rates (half the mean squared successive difference, which a slow drift of the rate
        // does not inflate) stands for the spread of one round's; the first, with nothing to
        // compare, counts as uncertain by its whole estimate over the calls it timed.
        let rate = x / round_ticks.max(1.0);
        self.burst_var += match self.burst_rate {
            Some(prev) => (rate - prev).powi(2) / 2.0 * round_ticks * round_ticks,
            None => x * x / w.timed.max(1) as f64,
        };
        self.burst_rate = Some(rate);
    }

    /// Adds a round of a point not in bursts while others were: `d` is the round, `w` what
    /// it did during the round's burst. Between bursts the points in them are off, and an
    /// off point's time lands in the self time of the point around it; during the burst they
    /// are timed and leave it. So this point's self time in the round is taken as its total
    /// times its share of self in the bursts so far (once they hold at least
    /// [`MIN_BESIDE`] of its timed calls: too few, and its own counters stand).
    pub(crate) fn fold_beside_burst(&mut self, d: &Scalars, w: &Scalars) {
        self.beside_total += w.total as f64;
        self.beside_self += w.self_signed();
        self.beside_timed += w.timed;
        if self.beside_timed < MIN_BESIDE || self.beside_total <= 0.0 || d.total == 0 {
            self.fold(d);
            return;
        }
        let share = (self.beside_self / self.beside_total).clamp(0.0, 1.0);
        let mut d = *d;
        d.self_ticks = (d.total as f64 * share).round() as u64;
        self.fold(&d);
    }

    /// Calls estimated between bursts: (outermost, all).
    pub(crate) fn unseen(&self) -> (f64, f64) {
        (self.unseen_outer, self.unseen_all)
    }

    /// Closes the pending stratum.
    fn close(&mut self) {
        let d = std::mem::take(&mut self.pending);
        if d.skipped == 0 && d.timed == 0 {
            return;
        }
        if d.timed == 0 {
            self.untimed += d.skipped as f64;
            return;
        }
        let mut timed = d.timed;
        let mut calls = d.timed + d.skipped;
        let mut scaled = d.total as f64;
        let mut once = 0.0;
        // `d.max` is the stratum's longest timed call when it set a new maximum for the point
        // (else 0). One that is over STALL_RATIO times the rest's mean is a stall (the thread
        // preempted or faulting), not the point's work: counted once, not as N calls (a 382 ms
        // preemption of a 500 ns call, scaled by 32, read as 12 s in a run of 1 s).
        if d.max > 0 && timed >= 2 {
            let rest = (d.total - d.max.min(d.total)) as f64 / (timed - 1) as f64;
            if d.max as f64 > STALL_RATIO * rest.max(1.0) {
                once = d.max as f64;
                scaled -= once;
                timed -= 1;
                calls -= 1;
            }
        }
        let n = timed as f64;
        let calls = calls as f64;
        let scale = calls / n;
        let stratum = scaled * scale + once;
        self.total += stratum;
        // Self time in the stratum's own proportion of self to total.
        if d.total > 0 {
            self.self_ticks += d.self_signed() * (stratum / d.total as f64);
        }
        self.var_factor += calls * calls * (1.0 - n / calls) / n;
    }

    /// With the pending stratum closed.
    fn closed(&self) -> Est {
        let mut e = *self;
        e.close();
        e
    }

    /// `self - base`: the estimate since a reset that recorded `base`.
    pub(crate) fn since(&self, base: &Est) -> Est {
        let (a, b) = (self.closed(), base.closed());
        Est {
            total: (a.total - b.total).max(0.0),
            self_ticks: a.self_ticks - b.self_ticks,
            var_factor: (a.var_factor - b.var_factor).max(0.0),
            untimed: (a.untimed - b.untimed).max(0.0),
            estimated: a.estimated,
            unseen_outer: (a.unseen_outer - b.unseen_outer).max(0.0),
            unseen_all: (a.unseen_all - b.unseen_all).max(0.0),
            burst_var: (a.burst_var - b.burst_var).max(0.0),
            burst_stalls: a.burst_stalls.saturating_sub(b.burst_stalls),
            ..a
        }
    }

    /// `self + other` (closed), for a base that accumulates over resets.
    fn plus(&self, other: &Est) -> Est {
        let (a, b) = (self.closed(), other.closed());
        Est {
            total: a.total + b.total,
            self_ticks: a.self_ticks + b.self_ticks,
            var_factor: a.var_factor + b.var_factor,
            untimed: a.untimed + b.untimed,
            estimated: a.estimated || b.estimated,
            unseen_outer: a.unseen_outer + b.unseen_outer,
            unseen_all: a.unseen_all + b.unseen_all,
            burst_var: a.burst_var + b.burst_var,
            burst_stalls: a.burst_stalls + b.burst_stalls,
            ..a
        }
    }

    /// The final figures, given the point's timed calls, their total and their standard
    /// deviation (ticks) over the same span: (total, self, 95% half-width of total).
    pub(crate) fn resolve(&self, timed: u64, timed_total: u64, stddev: f64) -> (f64, f64, f64) {
        let e = self.closed();
        let mean = if timed == 0 {
            0.0
        } else {
            timed_total as f64 / timed as f64
        };
        let extra = e.untimed * mean;
        // Self time of the untimed calls in the proportion of the timed ones.
        let self_share = if e.total > 0.0 {
            (e.self_ticks / e.total).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let mut var = e.var_factor * stddev * stddev + e.burst_var;
        if timed > 0 {
            // The mean's own uncertainty, for the calls priced at it.
            var += e.untimed * e.untimed * stddev * stddev / timed as f64;
        }
        (
            e.total + extra,
            e.self_ticks + extra * self_share,
            1.96 * var.sqrt(),
        )
    }
}

/// What the controller remembers of one point.
#[derive(Debug, Clone, Default)]
struct PointState {
    /// Counters at the end of the last round (summed over shards, since process start).
    last: Option<Scalars>,
    /// Estimate up to `last`.
    est: Est,
    /// The mode the controller last set (`None`: never set, or taken back by the user).
    set: Option<Mode>,
    /// Calls per second when the controller last switched it off.
    off_rate: f64,
    /// While in bursts: its calls per tick, averaged over bursts (see `round`).
    burst_rate: f64,
    /// What its bursts told so far (see [`BurstRound::fold`]).
    burst: BurstState,
    /// How many times the controller changed it, and the most throttled state it gave.
    changes: u32,
    worst: Option<Mode>,
    /// First change, ns since the process's clock origin.
    first_ns: Option<u64>,
}

/// The controller's state.
struct Controller {
    points: Vec<PointState>,
    scratch: Vec<Scalars>,
    /// Raw clock and process CPU time (ns) at the end of the last round.
    last_tick: u64,
    last_cpu_ns: u64,
    /// Summed over rounds: instrumentation cost (ticks) and process CPU (ns).
    cost_ticks: f64,
    cpu_ns: u64,
    controller_ns: u64,
    costs: Option<ModeCosts>,
    events: Vec<BudgetEvent>,
    events_dropped: u64,
    note: Option<String>,
    running: bool,
    /// Estimates at the last `reset`, by point.
    base: Vec<Est>,
    /// The points to time in the next burst, and for how long (set by a round, taken by the
    /// controller thread's loop).
    plan: Option<(Vec<usize>, Duration)>,
    /// The last burst: when it began and ended (raw clock; `end < start` while it runs), and
    /// its length as planned.
    window_start: u64,
    window_end: u64,
    window: Duration,
    /// What each point's counters gained during the last burst (read just before the burst
    /// and just after it: the calls of the round before the burst began are not the burst's,
    /// and the other points' calls in it tell how much the burst slowed the program).
    window_calls: Vec<Scalars>,
    /// Whether the last burst's two reads of the counters were quick (each under a quarter of
    /// the burst): one that was preempted read some points' counters milliseconds after
    /// others', and its calls in the burst do not compare.
    window_reliable: bool,

    /// Bursts done.
    bursts: u64,
}

static STATE: Mutex<Controller> = Mutex::new(Controller {
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
    window_reliable: false,

    bursts: 0,
});

fn state() -> MutexGuard<'static, Controller> {
    // A panic in a round leaves plain numbers behind; the next round goes on from them.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Which CPU time [`cpu_ns`] reads.
#[derive(Debug, Clone, Copy)]
enum Cpu {
    /// The whole process's (every thread's).
    Process,
    /// The calling thread's.
    Thread,
}

/// CPU time, ns (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`).
#[cfg(unix)]
fn cpu_ns(which: Cpu) -> u64 {
    let clock_id = match which {
        Cpu::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
        Cpu::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(clock_id, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Without a CPU clock in `libc` (Windows): the process's CPU time is taken as its wall time,
/// one busy core (the budget is then a share of wall time), and the thread's is not known.
#[cfg(not(unix))]
fn cpu_ns(which: Cpu) -> u64 {
    match which {
        Cpu::Process => clock::monotonic_ns(),
        Cpu::Thread => 0,
    }
}

/// The controller thread.
fn run() {
    // The cost model, measured here (about 2 ms), not on a thread of the program; and the
    // overhead that compensation subtracts in bursts (about 1 ms), here too: measured at the
    // first burst, a fork during it left the child's `OnceLock` mid-initialisation, and the
    // child's own controller waited on it for ever at its first burst.
    let costs = overhead::mode_costs();
    overhead::measure();
    {
        let mut c = state();
        c.costs = Some(costs);
        c.running = true;
        // The first round's baseline: counters, clock and CPU time now, no decision (the
        // calls made before are not this round's: they would be priced against no CPU time).
        c.round(None, &costs);
    }
    let mut interval = FIRST_INTERVAL;
    loop {
        std::thread::sleep(interval);
        let began = cpu_ns(Cpu::Thread);
        // Relaxed: see `set`.
        let ppm = PPM.load(Ordering::Relaxed);
        let (calls, plan) = {
            let mut c = state();
            let calls = c.round(Some(ppm), &costs);
            c.controller_ns += cpu_ns(Cpu::Thread).saturating_sub(began);
            (calls, c.plan.take())
        };
        // Relaxed: a tally.
        ROUNDS.fetch_add(1, Ordering::Relaxed);
        if let Some((points, window)) = plan {
            burst(&points, window);
        }
        interval = if calls == 0 {
            (interval * 2).min(IDLE_INTERVAL)
        } else {
            (interval * 2).min(INTERVAL)
        };
    }
}

/// Times `points` (the controller's, in bursts) fully for `window`, then switches them off
/// again; records when (see "Bursts" in the module docs). Holds the controller's lock only to
/// record, never while the program runs the burst.
fn burst(points: &[usize], window: Duration) {
    let all = point::all();
    let began = cpu_ns(Cpu::Thread);
    // The burst's calls are compensated (each call's and its children's instrumentation taken
    // out of its time: [`crate::compensate`]) whether or not the program asked for it: their
    // mean stands for calls made with no point on, and an uncompensated 1 ns function timed
    // at ~10 ns would stand for ten times its work (measured once, when the controller
    // started).
    let compensating = overhead::compensating();
    {
        let mut c = state();
        c.window = window;
        if !compensating {
            overhead::set_compensation(true);
        }
        // A point the user set since the round is theirs now (`is_by_budget`), and one they
        // set during the burst is theirs too, but for a race: a public setter called between
        // the test and the store below is overwritten once, and the next round hands the point
        // back (its `by_budget` is then the controller's again). The window is a few hundred
        // microseconds a round.
        for &i in points {
            if all[i].is_by_budget() {
                Mode::On.apply(&all[i]);
            }
        }
        // The burst is what happens between the two reads, with its points on throughout:
        // every point's calls in it (those of the points beside the burst too, which tell how
        // much it slowed the program: `burst_scale`) are those of the same span.
        c.window_start = clock::now();
    }
    let timed_read = |out: &mut Vec<Scalars>| {
        let t = clock::now();
        shard::read_all_scalars(out);
        clock::info().to_ns(clock::now().saturating_sub(t))
    };
    let mut before = Vec::new();
    let first = timed_read(&mut before);
    std::thread::sleep(window);
    let mut after = Vec::new();
    let second = timed_read(&mut after);
    let mut c = state();
    c.window_end = clock::now();
    let quick = window.as_nanos() as u64 / 4;
    c.window_reliable = first < quick && second < quick;
    for &i in points {
        if all[i].is_by_budget() {
            Mode::Burst.apply(&all[i]);
        }
    }
    // As the program had it (a `compensate` call during the burst is overwritten: a race
    // of a few hundred microseconds, documented in `crate::compensate`).
    if !compensating {
        overhead::set_compensation(false);
    }
    let mut calls = std::mem::take(&mut c.window_calls);
    calls.clear();
    calls.resize(after.len(), Scalars::default());
    for (i, (a, b)) in after.iter().zip(&before).enumerate() {
        calls[i] = delta(a, b);
    }
    c.window_calls = calls;
    c.bursts += 1;
    c.controller_ns += cpu_ns(Cpu::Thread).saturating_sub(began);
}

impl Controller {
    /// The burst that ran in the span from `since` to `now` (raw clock) and what it saw, or
    /// `None` if none did, or one still runs (a report made during a burst: it stands for
    /// nothing yet). `cur`: every point's counters at `now` (since process start).
    fn burst_round(&self, since: u64, now: u64, cur: &[Scalars]) -> Option<BurstRound> {
        if self.window_start == 0
            || self.window_start < since
            || self.window_end < self.window_start
        {
            return None;
        }
        Some(BurstRound {
            reference: Reference::of(&self.points, &self.window_calls, cur),
            dt: now.saturating_sub(since).max(1) as f64,
            on: self.window_end.saturating_sub(self.window_start).max(1) as f64,
            saw: burst_saw_calls(&self.points, &self.window_calls),
            reliable: self.window_reliable,
        })
    }
}

/// The calls of the points beside the bursts (not in them: counted all the time) in the last
/// burst and in its whole round: what a burst point's calls in the burst stand for (see
/// "Bursts" in the module docs).
#[derive(Debug, Clone, Copy, Default)]
struct Reference {
    inside: u64,
    all: u64,
}

impl Reference {
    fn of(points: &[PointState], window_calls: &[Scalars], cur: &[Scalars]) -> Reference {
        let mut r = Reference::default();
        for (i, st) in points.iter().enumerate() {
            if st.set == Some(Mode::Burst) {
                continue;
            }
            if let (Some(w), Some(last), Some(now)) = (window_calls.get(i), &st.last, cur.get(i)) {
                r.inside += w.nr();
                r.all += delta(now, last).nr();
            }
        }
        r
    }
}

/// Weight of the past in the pooled burst counts: each burst's counts weigh 0.8 of the next
/// one's (so the pools follow a change of the program's mix within ~10 bursts).
const KEEP: f64 = 0.95;

/// The fewest pooled calls of the reference points in bursts for the ratio estimate; below
/// it, a burst stands for its share of the round's time.
const MIN_REFERENCE: f64 = 8.0;

/// A point's calls in a round in which it was in a burst, estimated from `w`, its calls in
/// the burst. With reference points (`pooled` has the point's calls in bursts and theirs,
/// pooled; `reference` their calls in the span): its pooled ratio to their calls times
/// their calls in the span (a ratio estimate: the program's control flow fixes how many
/// calls of one function come with those of another, whatever the speed, so neither the
/// burst's slowing of the program nor a thread preempted in it biases it). Without: its
/// calls in the burst times the span's length over the burst's (`span`, `on`, ticks).
fn burst_calls(w: u64, pooled: (f64, f64), reference: u64, span: f64, on: f64) -> f64 {
    let (mine, theirs) = pooled;
    if theirs >= MIN_REFERENCE {
        mine / theirs * reference as f64
    } else {
        w as f64 * span / on.max(1.0)
    }
}

/// What a point's bursts told so far, and the rounds none of them could tell for yet.
#[derive(Debug, Clone, Copy, Default)]
struct BurstState {
    /// Its calls in bursts and the reference points', pooled (see [`KEEP`]).
    pool: (f64, f64),
    /// Rounds not estimated yet (their bursts told nothing): the calls seen in them, the
    /// reference points' calls, and their ticks.
    seen: u64,
    reference: u64,
    ticks: f64,
}

/// A round with a burst in it.
#[derive(Debug, Clone, Copy)]
struct BurstRound {
    /// The reference points' calls in the burst and in the round.
    reference: Reference,
    /// The round's ticks, and the burst's.
    dt: f64,
    on: f64,
    /// Whether the burst saw a call of any point in it.
    saw: bool,
    /// Whether its counts compare (see `Controller::window_reliable`).
    reliable: bool,
}

impl BurstRound {
    /// Folds the round `d` of a point in bursts into `est`, `w` its calls in the burst:
    /// estimated if the burst tells (reliable, and with reference points or a call seen),
    /// else kept for the next burst that does (`state`). Returns the round's estimated calls
    /// (the kept rounds' included), if estimated.
    fn fold(&self, est: &mut Est, state: &mut BurstState, d: &Scalars, w: &Scalars) -> Option<f64> {
        if self.reliable {
            state.pool = (
                state.pool.0 * KEEP + w.nr() as f64,
                state.pool.1 * KEEP + self.reference.inside as f64,
            );
        }
        if !self.reliable || !(self.saw || state.pool.1 >= MIN_REFERENCE) {
            // Seen calls are exact; the rest of the round waits for a burst that tells.
            est.fold(d);
            state.seen += d.nr();
            state.reference += self.reference.all;
            state.ticks += self.dt;
            return None;
        }
        let calls = burst_calls(
            w.nr(),
            state.pool,
            self.reference.all + state.reference,
            self.dt + state.ticks,
            self.on,
        );
        est.fold_burst(d, w, calls, state.seen, self.dt + state.ticks);
        *state = BurstState {
            pool: state.pool,
            ..BurstState::default()
        };
        Some(calls)
    }
}

/// Whether the last burst saw a call of any point in it (none: the program's threads did not
/// run during it, on a loaded machine, and it stands for nothing).
fn burst_saw_calls(points: &[PointState], window_calls: &[Scalars]) -> bool {
    points
        .iter()
        .zip(window_calls)
        .any(|(st, w)| st.set == Some(Mode::Burst) && w.nr() > 0)
}

impl Controller {
    /// One round: read, fold the estimates, price, reallocate if needed (`ppm`: the budget;
    /// `None` only records the baseline). Returns the calls seen this round.
    fn round(&mut self, ppm: Option<u32>, costs: &ModeCosts) -> u64 {
        let points = point::all();
        let now = clock::now();
        let cpu = cpu_ns(Cpu::Process);
        let dt = now.saturating_sub(self.last_tick).max(1);
        let since = self.last_tick;
        let dcpu = cpu.saturating_sub(self.last_cpu_ns);
        self.last_tick = now;
        self.last_cpu_ns = cpu;
        let mut scratch = std::mem::take(&mut self.scratch);
        shard::read_all_scalars(&mut scratch);
        // The round's burst, if one ran.
        let burst = self.burst_round(since, now, &scratch);
        self.points.resize(points.len(), PointState::default());
        // The cost of the points in steady states, and of the burst.
        let mut cost = 0.0;
        let mut burst_cost = 0.0;
        let mut calls_total = 0;
        // (index, calls this round) of the points the controller may change.
        let mut managed: Vec<(usize, u64)> = Vec::new();
        for (i, (p, cur)) in points.iter().zip(&scratch).enumerate() {
            let st = &mut self.points[i];
            let d = match &st.last {
                Some(last) => delta(cur, last),
                None => *cur,
            };
            let bursting = st.set == Some(Mode::Burst);
            let mut d = d;
            // This round's calls of a point in bursts, estimated (none: not in one).
            let mut estimated = None;
            match (burst, self.window_calls.get(i)) {
                (Some(b), Some(w)) if bursting => {
                    estimated = b.fold(&mut st.est, &mut st.burst, &d, w);
                    d = *w;
                }
                (Some(_), Some(w)) => st.est.fold_beside_burst(&d, w),
                _ => st.est.fold(&d),
            }
            st.last = Some(*cur);
            if d.timed > 0 && cur.timed > 0 {
                // What an untimed call of it stands for in the intervals around it: the mean
                // over the run so far (one round's mean would scale a rare long call, a
                // preemption say, by N).
                p.set_mean_ticks(cur.total / cur.timed);
            }
            if p.kind() == Kind::Hidden {
                continue;
            }
            let mode = Mode::managed(p, st);
            let nested = if matches!(mode, Mode::On | Mode::Burst) {
                costs.timed
            } else {
                costs.skipped
            };
            let untimed = if mode == Mode::Count {
                costs.counted
            } else {
                costs.skipped
            };
            let spent = d.timed as f64 * costs.timed
                + d.nested as f64 * nested
                + d.skipped as f64 * untimed;
            // A point in bursts was called about `scale` times what the burst saw. A burst is a
            // sample of a few hundred microseconds: of a program that calls the point in
            // phases it may catch none (or a burst may catch no thread running), so the rate
            // the controller decides on is averaged over bursts, and kept through rounds whose
            // burst told nothing, instead of reading as a point no longer called.
            let calls = if mode == Mode::Burst {
                burst_cost += spent;
                if let Some(calls) = estimated {
                    let rate = calls / dt as f64;
                    st.burst_rate = if st.burst_rate > 0.0 {
                        (st.burst_rate + rate) / 2.0
                    } else {
                        rate
                    };
                }
                (st.burst_rate * dt as f64).round() as u64
            } else {
                cost += spent;
                d.nr()
            };
            calls_total += d.nr();
            // The user's own choices stand: a point is managed while on, or in the state the
            // controller gave it (no public setter since: `is_by_budget`).
            if st.set.is_some_and(|s| s != mode || !p.is_by_budget()) {
                st.set = None;
            }
            if p.kind() == Kind::Sync && (mode == Mode::On || st.set == Some(mode)) {
                managed.push((i, calls));
            }
        }
        self.scratch = scratch;
        let Some(ppm) = ppm else {
            return calls_total;
        };
        self.cost_ticks += cost + burst_cost;
        self.cpu_ns += dcpu;
        let clk = clock::info();
        let at_ns = clk.to_ns(now.saturating_sub(clock::origin().0));
        if ppm == 0 {
            self.release_all(at_ns);
            return calls_total;
        }
        let budget = clk.to_ticks(dcpu as f64) * f64::from(ppm) / 1e6;
        let throttled = managed
            .iter()
            .any(|&(i, _)| self.points[i].set.is_some_and(|m| m != Mode::On));
        // The steady states get what the bursts leave.
        if cost > (1.0 - BURST_SHARE) * budget || (throttled && cost < RELAX_BELOW * budget) {
            let n: Vec<u64> = managed.iter().map(|&(_, n)| n).collect();
            let want = allocate(&n, costs, TARGET * budget);
            for (&(i, n), want) in managed.iter().zip(want) {
                let cur = Mode::managed(&points[i], &self.points[i]);
                let next = relax_limited(cur, want);
                self.change(i, cur, next, n as f64 * 1e9 / clk.to_ns_f(dt as f64), at_ns);
            }
        }
        self.plan_burst(&managed, burst_cost, budget);
        calls_total
    }

    /// The next burst: the managed points in bursts, for a window whose cost is about
    /// [`BURST_SHARE`] of the budget (`burst_cost`: what the last burst cost, ticks).
    fn plan_burst(&mut self, managed: &[(usize, u64)], burst_cost: f64, budget: f64) {
        let points: Vec<usize> = managed
            .iter()
            .map(|&(i, _)| i)
            .filter(|&i| self.points[i].set == Some(Mode::Burst))
            .collect();
        if points.is_empty() {
            return;
        }
        let window = if burst_cost > 0.0 && !self.window.is_zero() {
            // The cost of a burst grows with its length: aim at the share, at most 2x a round.
            let ratio = (BURST_SHARE * budget / burst_cost).clamp(0.5, 2.0);
            self.window.mul_f64(ratio)
        } else {
            FIRST_WINDOW
        };
        self.plan = Some((points, window.clamp(MIN_WINDOW, MAX_WINDOW)));
    }

    /// Applies and records one change (nothing if `to` is `from`).
    fn change(&mut self, i: usize, from: Mode, to: Mode, calls_per_s: f64, at_ns: u64) {
        if from == to {
            return;
        }
        let p = &point::all()[i];
        to.apply(p);
        let st = &mut self.points[i];
        st.set = Some(to);
        st.changes += 1;
        st.first_ns.get_or_insert(at_ns);
        if st.worst.is_none_or(|w| to.rank() > w.rank()) {
            st.worst = Some(to);
        }
        if to == Mode::Burst {
            st.off_rate = calls_per_s;
            // Its rate until its bursts tell: the one it was put in bursts at.
            st.burst_rate = calls_per_s / clock::info().to_ticks(1e9).max(1.0);
        }
        if self.events.len() < MAX_EVENTS {
            self.events.push(BudgetEvent {
                at_s: at_ns as f64 / 1e9,
                point: p.name().to_string(),
                from: from.label(),
                to: to.label(),
                calls_per_s,
            });
        } else {
            self.events_dropped += 1;
        }
    }

    /// The budget was turned off: every point the controller throttled is timed fully again.
    fn release_all(&mut self, at_ns: u64) {
        for i in 0..self.points.len() {
            if let Some(m) = self.points[i].set
                && m != Mode::On
                && Mode::managed(&point::all()[i], &self.points[i]) == m
            {
                self.change(i, m, Mode::On, 0.0, at_ns);
            }
        }
    }
}

/// `cur - last` for the additive counters (saturating: a counter never goes down, but a
/// sum over shards read at slightly different times may, by a call in flight); `max` is the
/// new maximum when one was set in between (a call that long happened then), else 0.
fn delta(cur: &Scalars, last: &Scalars) -> Scalars {
    Scalars {
        nested: cur.nested.saturating_sub(last.nested),
        timed: cur.timed.saturating_sub(last.timed),
        skipped: cur.skipped.saturating_sub(last.skipped),
        total: cur.total.saturating_sub(last.total),
        self_ticks: cur.self_ticks.wrapping_sub(last.self_ticks),
        min: u64::MAX,
        max: if cur.max > last.max { cur.max } else { 0 },
    }
}

/// Where a point goes from `cur` when the allocation wants `want`: at once when `want` is more
/// throttled; by at most [`MAX_RELAX`] a round when less (a point in bursts counts first).
fn relax_limited(cur: Mode, want: Mode) -> Mode {
    if want.rank() >= cur.rank() {
        return want;
    }
    match cur {
        Mode::Off => Mode::Off,
        Mode::Burst => Mode::Count,
        Mode::Count => match want {
            // From counting to timing one call in 64 at most, then down 4x a round.
            Mode::Sampled(n) => sampled(n.max(MAX_RELAX.pow(3))),
            Mode::On => sampled(MAX_RELAX.pow(3)),
            _ => want,
        },
        Mode::Sampled(n) => {
            let floor = match want {
                Mode::Sampled(w) => w,
                _ => 1,
            };
            sampled((n / MAX_RELAX).max(floor))
        }
        Mode::On => want,
    }
}

/// `Sampled(n)`, or `On` for n <= 1.
fn sampled(n: u32) -> Mode {
    if n <= 1 { Mode::On } else { Mode::Sampled(n) }
}

/// The states for points called `n[i]` times in a round so that their predicted cost is at
/// most `target` ticks (see the module docs): every point gets the same number `k` of timed
/// calls (all of its calls if fewer); the hottest count only if `k = 1` is too dear, and the
/// hottest counting points go to bursts if counting is too dear.
fn allocate(n: &[u64], c: &ModeCosts, target: f64) -> Vec<Mode> {
    let mut order: Vec<usize> = (0..n.len()).collect();
    order.sort_by(|&a, &b| n[b].cmp(&n[a]));
    let nf = |i: usize| n[i] as f64;
    let count_cost =
        |counted: &[usize]| -> f64 { counted.iter().map(|&i| nf(i) * c.counted).sum() };
    // Cost of the points in `rest` all sampled to k timed calls each.
    let sampled_cost = |rest: &[usize], k: f64| -> f64 {
        rest.iter()
            .map(|&i| {
                if nf(i) <= k {
                    nf(i) * c.timed
                } else {
                    nf(i) * c.skipped + k * (c.timed - c.skipped)
                }
            })
            .sum()
    };
    // The smallest `x` in 0..=len for which `ok(x)` holds (`ok` is monotone), or len.
    let least = |len: usize, ok: &dyn Fn(usize) -> bool| {
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if ok(mid) { hi = mid } else { lo = mid + 1 }
        }
        lo
    };
    let mut modes = vec![Mode::On; n.len()];
    // Last resort: the fewest hottest points in bursts (off between them) so that the rest can
    // at least count.
    let off = least(order.len(), &|o| count_cost(&order[o..]) <= target);
    for &i in &order[..off] {
        modes[i] = Mode::Burst;
    }
    let order = &order[off..];
    // Then the fewest hottest counting only so that the rest fit with one timed call each.
    let m = least(order.len(), &|m| {
        count_cost(&order[..m]) + sampled_cost(&order[m..], 1.0) <= target
    });
    for &i in &order[..m] {
        modes[i] = Mode::Count;
    }
    let rest = &order[m..];
    let fixed = count_cost(&order[..m]);
    // The largest k that fits (cost grows with k).
    let max_n = rest.first().map_or(1.0, |&i| nf(i).max(1.0));
    let (mut lo, mut hi) = (1.0f64, max_n);
    if fixed + sampled_cost(rest, hi) <= target {
        lo = hi;
    } else {
        for _ in 0..64 {
            let mid = (lo + hi) / 2.0;
            if fixed + sampled_cost(rest, mid) <= target {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo < 0.5 {
                break;
            }
        }
    }
    let k = lo.max(1.0);
    for &i in rest {
        if nf(i) > k {
            let every = (nf(i) / k).ceil().min(f64::from(MAX_EVERY)) as u32;
            modes[i] = sampled(every.next_power_of_two().min(MAX_EVERY));
        }
    }
    modes
}

/// The estimates of every point (index order) from `abs`, the counters since process start,
/// minus those at the last [`reset`]; `None` when the controller never ran.
pub(crate) fn estimates(abs: &[Scalars]) -> Option<Vec<Est>> {
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
                let (mut e, d, bursting, carried) = match c.points.get(i) {
                    Some(PointState {
                        est,
                        last: Some(last),
                        set,
                        burst,
                        ..
                    }) => (*est, delta(cur, last), *set == Some(Mode::Burst), *burst),
                    _ => (Est::default(), *cur, false, BurstState::default()),
                };
                match (burst, c.window_calls.get(i)) {
                    (Some(b), Some(w)) if bursting => {
                        let mut carried = carried;
                        b.fold(&mut e, &mut carried, &d, w);
                    }
                    (Some(_), Some(w)) => e.fold_beside_burst(&d, w),
                    _ => e.fold(&d),
                }
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
    let now = estimates(abs);
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

/// The budget's section of a report.
pub(crate) fn report(clk: &clock::ClockInfo) -> BudgetReport {
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
            (
                calls,
                ThrottledPoint {
                    point: p.name().to_string(),
                    now: Mode::of(p).label(),
                    worst: st.worst.map_or_else(|| "on".into(), Mode::label),
                    changes: st.changes,
                    first_at_s: st.first_ns.unwrap_or(0) as f64 / 1e9,
                    off_calls_per_s: st.off_rate,
                },
            )
        })
        .collect();
    throttled.sort_by(|a, b| b.0.total_cmp(&a.0));
    BudgetReport {
        percent: get(),
        running: c.running,
        note: c.note.clone(),
        rounds: ROUNDS.load(Ordering::Relaxed),
        cost_timed_ns: clk.to_ns_f(costs.timed),
        cost_skipped_ns: clk.to_ns_f(costs.skipped),
        cost_counted_ns: clk.to_ns_f(costs.counted),
        cost_percent: if c.cpu_ns == 0 {
            0.0
        } else {
            100.0 * clk.to_ns_f(c.cost_ticks) / c.cpu_ns as f64
        },
        controller_ms: c.controller_ns as f64 / 1e6,
        bursts: c.bursts,
        burst_window_us: c.window.as_secs_f64() * 1e6,
        throttled: throttled.into_iter().map(|(_, t)| t).collect(),
        events: c.events.clone(),
        events_dropped: c.events_dropped,
    }
}

#[cfg(unix)]
thread_local! {
    /// The controller's lock, held by the forking thread across a `fork` (see `crate::fork`).
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
mod tests {
    use super::*;

    const COSTS: ModeCosts = ModeCosts {
        timed: 25.0,
        skipped: 5.0,
        counted: 2.0,
    };

    fn cost(n: &[u64], modes: &[Mode]) -> f64 {
        n.iter()
            .zip(modes)
            .map(|(&n, m)| {
                let n = n as f64;
                match *m {
                    Mode::On => n * COSTS.timed,
                    Mode::Sampled(e) => {
                        n * COSTS.skipped + n / f64::from(e) * (COSTS.timed - COSTS.skipped)
                    }
                    Mode::Count => n * COSTS.counted,
                    Mode::Burst | Mode::Off => 0.0,
                }
            })
            .sum()
    }

    #[test]
    fn cheap_points_stay_on() {
        let n = [10, 1000, 5];
        let modes = allocate(&n, &COSTS, 1e9);
        assert_eq!(modes, vec![Mode::On; 3]);
    }

    #[test]
    fn the_hottest_point_is_sampled_and_the_cost_fits() {
        // 1M calls of one point, 100 of another; room for ~2.5M ticks.
        let n = [100, 1_000_000];
        let target = 6e6;
        let modes = allocate(&n, &COSTS, target);
        assert_eq!(modes[0], Mode::On, "{modes:?}");
        assert!(matches!(modes[1], Mode::Sampled(e) if e >= 2), "{modes:?}");
        assert!(
            cost(&n, &modes) <= target,
            "{} > {target}",
            cost(&n, &modes)
        );
    }

    #[test]
    fn counting_then_bursts_as_last_resorts() {
        let n = [1_000_000, 10_000, 10];
        // Sampling the hottest is too dear (5 ticks a call), counting it fits.
        let modes = allocate(&n, &COSTS, 2.5e6);
        assert_eq!(modes[0], Mode::Count, "{modes:?}");
        assert!(cost(&n, &modes) <= 2.5e6);
        // Not even counting fits: the hottest goes to bursts (off between them), the others
        // share what is left (the coldest is still timed on every call).
        let modes = allocate(&n, &COSTS, 1e5);
        assert_eq!(modes[0], Mode::Burst, "{modes:?}");
        assert_eq!(modes[2], Mode::On, "{modes:?}");
        assert!(cost(&n, &modes) <= 1e5);
    }

    #[test]
    fn relaxing_is_gradual_and_throttling_immediate() {
        assert_eq!(
            relax_limited(Mode::On, Mode::Sampled(64)),
            Mode::Sampled(64)
        );
        assert_eq!(
            relax_limited(Mode::Sampled(64), Mode::On),
            Mode::Sampled(16)
        );
        assert_eq!(relax_limited(Mode::Sampled(4), Mode::On), Mode::On);
        assert_eq!(relax_limited(Mode::Off, Mode::On), Mode::Off);
        assert_eq!(relax_limited(Mode::Burst, Mode::On), Mode::Count);
        assert_eq!(relax_limited(Mode::Count, Mode::On), Mode::Sampled(64));
    }

    #[test]
    fn a_round_with_few_timed_calls_waits_for_more() {
        // One timed call of 1,000,000 ticks (a preemption) among 10,000 calls of ~10 ticks:
        // alone it would say 10^10. Pooled with the next rounds' 40 timed calls of 10 ticks,
        // the stratum's mean is ~24,400 ticks.
        let mut e = Est::default();
        e.fold(&Scalars {
            timed: 1,
            skipped: 9_999,
            total: 1_000_000,
            self_ticks: 1_000_000,
            ..Scalars::default()
        });
        assert_eq!(e.total, 0.0, "still pending");
        e.fold(&Scalars {
            timed: 40,
            skipped: 39_960,
            total: 400,
            self_ticks: 400,
            ..Scalars::default()
        });
        let (total, _, _) = e.resolve(41, 1_000_400, 0.0);
        let expected = 1_000_400.0 * 50_000.0 / 41.0;
        assert!((total - expected).abs() < 1.0, "{total} vs {expected}");
    }

    #[test]
    fn a_stall_is_counted_once_not_scaled() {
        // 40 timed calls of 10 ticks and one of 10,000,000 (a preemption) among 41,000 calls.
        let mut e = Est::default();
        e.fold(&Scalars {
            timed: 41,
            skipped: 40_959,
            total: 10_000_400,
            self_ticks: 10_000_400,
            max: 10_000_000,
            ..Scalars::default()
        });
        let (total, _, _) = e.resolve(41, 10_000_400, 0.0);
        let expected = 10_000_000.0 + 400.0 * 40_999.0 / 40.0;
        assert!((total - expected).abs() < 1.0, "{total} vs {expected}");
        // Without a new maximum in the stratum, nothing is taken for a stall.
        let mut e = Est::default();
        e.fold(&Scalars {
            timed: 41,
            skipped: 40_959,
            total: 10_000_400,
            self_ticks: 10_000_400,
            max: 0,
            ..Scalars::default()
        });
        let (total, _, _) = e.resolve(41, 10_000_400, 0.0);
        assert!((total - 10_000_400.0 * 1000.0).abs() < 1.0, "{total}");
    }

    /// `n` calls of `each` ticks, all timed, all outermost, self time all theirs.
    fn calls(n: u64, each: u64) -> Scalars {
        Scalars {
            timed: n,
            total: n * each,
            self_ticks: n * each,
            ..Scalars::default()
        }
    }

    fn round(inside: u64, all: u64, saw: bool, reliable: bool) -> BurstRound {
        BurstRound {
            reference: Reference { inside, all },
            dt: 1e8,
            on: 1e5,
            saw,
            reliable,
        }
    }

    #[test]
    fn a_burst_stands_for_its_round_by_its_ratio_to_the_reference_points() {
        // In the burst: 1,000 calls of 10 ticks, and 10 of the reference points'; in the
        // whole round, 10,000 of theirs: the point made ~1,000,000 calls in the round.
        let (mut e, mut st) = (Est::default(), BurstState::default());
        let w = calls(1000, 10);
        let got = round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w);
        assert_eq!(got, Some(1_000_000.0));
        assert_eq!(e.unseen(), (999_000.0, 999_000.0));
        // The unseen calls at the bursts' mean call: 10 ticks each.
        assert!((e.closed().total - 10_000_000.0).abs() < 1e-6, "{e:?}");
        assert!(e.estimated);
        // The first burst has nothing to compare with: its whole estimate is its error.
        assert!(e.burst_var > 0.0);
    }

    #[test]
    fn without_reference_points_a_burst_stands_for_its_share_of_the_round() {
        // No reference calls: the round (1e8 ticks) over the burst (1e5) is 1,000 times it.
        let (mut e, mut st) = (Est::default(), BurstState::default());
        let w = calls(100, 10);
        let got = round(0, 0, true, true).fold(&mut e, &mut st, &w, &w);
        assert_eq!(got, Some(100_000.0));
    }

    #[test]
    fn a_burst_that_tells_nothing_waits_for_one_that_does() {
        let (mut e, mut st) = (Est::default(), BurstState::default());
        // Preempted reads: nothing pooled, the round kept (its 5 calls seen are exact).
        let seen = calls(5, 10);
        assert_eq!(
            round(10, 10_000, true, false).fold(&mut e, &mut st, &seen, &seen),
            None
        );
        assert_eq!(st.pool, (0.0, 0.0));
        assert_eq!((st.seen, st.reference), (5, 10_000));
        // The next burst tells for both rounds: 100 per reference call, 20,000 of theirs.
        let w = calls(1000, 10);
        let got = round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w);
        assert_eq!(got, Some(2_000_000.0));
        assert_eq!(e.unseen().1, 2_000_000.0 - 1005.0);
        assert_eq!((st.seen, st.reference, st.ticks), (0, 0, 0.0));
    }

    #[test]
    fn a_stalled_burst_is_counted_once_not_as_the_mean_call() {
        let (mut e, mut st) = (Est::default(), BurstState::default());
        let w = calls(1000, 10);
        round(10, 10_000, true, true).fold(&mut e, &mut st, &w, &w);
        let before = e.closed().total;
        // A burst whose 1,000 calls took 10,000 ticks each (a preemption in it): taken once.
        let stalled = calls(1000, 10_000);
        round(10, 10_000, true, true).fold(&mut e, &mut st, &stalled, &stalled);
        assert_eq!(e.burst_stalls, 1);
        let added = e.closed().total - before;
        // Its own 10,000,000 ticks, and the unseen calls at the usual mean (10 ticks).
        let unseen = e.unseen().0 - 999_000.0;
        assert!(
            (added - (10_000_000.0 + unseen * 10.0)).abs() < 1.0,
            "{added} {unseen}"
        );
    }

    #[test]
    fn beside_bursts_a_point_keeps_the_self_share_it_had_in_them() {
        // In the bursts, half of its time was its own (its children, in bursts, were timed);
        // around them its children were off and it read all of it as its own.
        let mut e = Est::default();
        let w = Scalars {
            timed: 10,
            total: 1000,
            self_ticks: 500,
            ..Scalars::default()
        };
        e.fold_beside_burst(&calls(100, 100), &w);
        assert_eq!(e.closed().total, 10_000.0);
        assert_eq!(e.closed().self_ticks, 5_000.0);
    }

    #[test]
    fn strata_keep_phases_apart() {
        // Phase 1: 1,000 calls of 1,000 ticks, all timed. Phase 2: 1,000,000 calls of 10
        // ticks, 1 in 1,000 timed. A ratio over the whole run would say ~900x too much.
        let mut e = Est::default();
        e.fold(&Scalars {
            timed: 1000,
            total: 1_000_000,
            self_ticks: 1_000_000,
            ..Scalars::default()
        });
        e.fold(&Scalars {
            timed: 1000,
            skipped: 999_000,
            total: 10_000,
            self_ticks: 10_000,
            ..Scalars::default()
        });
        let (total, _, ci) = e.resolve(2000, 1_010_000, 0.0);
        assert!((total - 11_000_000.0).abs() < 1.0, "{total}");
        assert_eq!(ci, 0.0);
        assert!(e.estimated);
    }
}
