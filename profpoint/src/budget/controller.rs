//! The controller thread: each round it reads every point's counters, prices them with the
//! cost model, and moves points between timed, sampled, counted and burst modes so that their
//! cost stays under the budget (`allocate`).

use super::*;
use allocate::{allocate, relax_limited};
use burst::{BurstRound, KEEP, burst, isolate};
use estimate::stalled_call;
use isolation::{Isolated, isolation_classes};
use sample::{SampleState, Sampled, Seen, sleep_counting};
use spent::{Part, Spent};

/// What the controller remembers of one point.
#[derive(Debug, Clone, Default)]
pub(super) struct PointState {
    /// Counters at the end of the last round (summed over shards, since process start).
    pub(super) last: Option<Scalars>,
    /// Estimate up to `last`.
    pub(super) est: Est,
    /// The mode the controller last set (`None`: never set, or taken back by the user).
    pub(super) set: Option<Mode>,
    /// Calls per second when the controller last switched it off.
    pub(super) off_rate: f64,
    /// While in bursts: its calls per tick, averaged over bursts (see `round`), and when it
    /// was last put in bursts (raw clock).
    pub(super) burst_rate: f64,
    pub(super) burst_since: u64,
    /// How many times the controller changed it, and the most throttled state it gave.
    pub(super) changes: u32,
    pub(super) worst: Option<Mode>,
    /// First change, ns since the process's clock origin.
    pub(super) first_ns: Option<u64>,
    /// Its timed calls' total and self time (ticks) and their number, decayed by
    /// [`MEAN_KEEP`] a round: its recent mean call and self time, the stand-ins of its
    /// untimed calls.
    pub(super) mean_pool: (f64, f64, f64),
    /// Its calls timed in its last isolation windows (with every point the controller
    /// throttles inside it off: see `burst::isolate`): its mean call as the program makes it
    /// without the points nested in it ([`Isolated::mean`]).
    pub(super) isolated: Isolated,
}

impl PointState {
    /// Whether the bursts' windows time it: it is in bursts, or counted only, by the
    /// controller (see `Controller::plan_burst`).
    pub(super) fn in_windows(&self) -> bool {
        matches!(self.set, Some(Mode::Burst | Mode::Count))
    }
}

/// The controller's state.
pub(super) struct Controller {
    pub(super) points: Vec<PointState>,
    pub(super) scratch: Vec<Scalars>,
    /// Raw clock and process CPU time (ns) at the end of the last round.
    pub(super) last_tick: u64,
    pub(super) last_cpu_ns: u64,
    /// Summed over rounds: instrumentation cost (ticks) and process CPU (ns).
    pub(super) cost_ticks: f64,
    pub(super) cpu_ns: u64,
    pub(super) controller_ns: u64,
    pub(super) costs: Option<ModeCosts>,
    pub(super) events: Vec<BudgetEvent>,
    pub(super) events_dropped: u64,
    pub(super) note: Option<String>,
    pub(super) running: bool,
    /// Estimates at the last `reset`, by point.
    pub(super) base: Vec<Est>,
    /// The points to time in the next burst, each with the state it goes back to after it
    /// (`Burst`, or `Count` for a counted point timed there to keep its means fresh), and for
    /// how long (set by a round, taken by the controller thread's loop).
    pub(super) plan: Option<(Vec<(usize, Mode)>, Duration)>,
    /// The last burst: when it began and ended (raw clock; `end < start` while it runs), and
    /// its length as planned.
    pub(super) window_start: u64,
    pub(super) window_end: u64,
    pub(super) window: Duration,
    /// What each point's counters gained during the last burst (read just before the burst
    /// and just after it: the calls of the round before the burst began are not the burst's,
    /// and the other points' calls in it tell how much the burst slowed the program).
    pub(super) window_calls: Vec<Scalars>,
    /// What each point's counters gained in the burst's warm-up, before the window's counts
    /// began ([`burst::warm_up`]), and its length (ticks).
    pub(super) window_warm: Vec<Scalars>,
    pub(super) window_warm_ticks: u64,
    /// Whether the last burst's three reads of the counters (at its start, and at its
    /// window's start and end) were quick (each under a quarter of the window): one that was
    /// preempted read some points' counters milliseconds after
    /// others', and its calls in the burst do not compare.
    pub(super) window_reliable: bool,
    /// Ticks at the last burst's window's two reads of the counters, half of each (the window's
    /// counts are the span between the reads' middles).
    pub(super) window_reads: u64,
    /// What bursts cost the program (ticks) and the calls they timed, pooled (see
    /// [`burst::burst_extra`]): a timed call's cost in this program.
    pub(super) in_context: (f64, f64),

    /// Bursts done.
    pub(super) bursts: u64,
    /// The isolation classes (`isolation_classes`): sets of the windows' points none of which
    /// is found inside another in the tree of points; the tree's length they were made from;
    /// the next class to time.
    pub(super) classes: Vec<Vec<usize>>,
    pub(super) classes_from: usize,
    pub(super) next_class: usize,
    /// The next isolation window, planned with the burst (see `plan_burst`).
    pub(super) isolation_plan: Option<(Vec<(usize, Mode)>, Duration)>,
    /// Calls the isolation windows timed since the last round (priced with the bursts').
    pub(super) isolation_timed: u64,
    /// Isolation windows done.
    pub(super) isolations: u64,
    /// What the bursts' windows added to each edge of the tree of points, by (caller's point
    /// index + 1, 0 at the root; point index + 1): calls, timed calls and their ticks, pooled
    /// by [`KEEP`] a burst. Who calls whom, and how long a call takes from each caller, while
    /// every point of the windows is on (`from_isolated` in the report splits a point's
    /// calls among its callers by it).
    pub(super) edges: std::collections::BTreeMap<(u32, u32), [f64; 3]>,
    /// What counting alone cost against the budget (see `floor`).
    pub(super) counting: super::floor::CountingFloor,
    /// Each point's count windows (see `sample`), by point index, and their slots' length.
    pub(super) sampled: Vec<SampleState>,
    pub(super) count_slot: Duration,
    /// Where the last count-window slot ended (raw clock).
    pub(super) slots_to: u64,
    /// The run's cost by part and point (see `spent`): what the report names when the points
    /// cost more than the budget.
    pub(super) spent: Spent,
}

/// Which CPU time [`cpu_ns`] reads.
#[derive(Debug, Clone, Copy)]
pub(super) enum Cpu {
    /// The whole process's (every thread's).
    Process,
    /// The calling thread's.
    Thread,
}

/// CPU time, ns (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`).
#[cfg(unix)]
pub(super) fn cpu_ns(which: Cpu) -> u64 {
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
pub(super) fn cpu_ns(which: Cpu) -> u64 {
    match which {
        Cpu::Process => clock::monotonic_ns(),
        Cpu::Thread => 0,
    }
}

/// The controller thread.
pub(super) fn run() {
    // The cost model and the overhead that compensation subtracts in bursts: one
    // calibration (about 2 ms), here, not on a thread of the program (unless the exit report
    // was armed before `main`, which measured it then). Not at the first burst: measured
    // there, a fork during it left the child's `OnceLock` mid-initialisation, and the child's
    // own controller waited on it for ever at its first burst.
    let costs = overhead::mode_costs();
    {
        let mut c = state();
        c.costs = Some(costs);
        c.running = true;
        // The first round's baseline: counters, clock and CPU time now, no decision (the
        // calls made before are not this round's: they would be priced against no CPU time).
        c.round(None, &costs);
    }
    let mut interval = FIRST_INTERVAL;
    // When the last sleep ended, and the time since in which points in bursts were timed
    // anyway (the burst; the isolation window, for those in it): the count windows' first
    // slot is the rest (`sample::Seen`).
    let mut seen = Seen::since(clock::now());
    let mut grid = wall::Grid::new();
    loop {
        let in_bursts = state().in_bursts();
        wall::begin_if_throttled();
        if !in_bursts.is_empty() {
            sleep_counting(interval, &in_bursts, &seen);
        } else if wall::active() {
            wall::sleep_sampling(interval, &mut grid);
        } else {
            std::thread::sleep(interval);
        }
        seen = Seen::since(clock::now());
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
            let t = clock::now();
            burst(&points, window);
            let t1 = clock::now();
            seen.burst = t1.saturating_sub(t);
            let isolation = state().isolation_plan.take();
            if let Some((set, window)) = isolation {
                let got = isolate(&set, window);
                seen.isolation = clock::now().saturating_sub(t1);
                seen.isolated = set.iter().map(|&(i, _)| i).collect();
                if let Some(got) = got {
                    state().fold_isolated(&got);
                }
            }
        }
        interval = if calls == 0 {
            (interval * 2).min(IDLE_INTERVAL)
        } else {
            (interval * 2).min(INTERVAL)
        };
    }
}

impl Controller {
    /// Whether the controller keeps point `i` in bursts: it put it there and no public setter
    /// touched it since (its calls are the count windows' to estimate).
    pub(super) fn keeps_in_bursts(&self, i: usize) -> bool {
        self.points.get(i).and_then(|st| st.set) == Some(Mode::Burst)
            && point::all()[i].is_by_budget()
    }

    /// The points the controller keeps in bursts ([`Controller::keeps_in_bursts`]).
    pub(super) fn in_bursts(&self) -> Vec<usize> {
        (0..self.points.len())
            .filter(|&i| self.keeps_in_bursts(i))
            .collect()
    }

    /// One round: read, fold the estimates, price, reallocate if needed (`ppm`: the budget;
    /// `None` only records the baseline). Returns the calls seen this round.
    pub(super) fn round(&mut self, ppm: Option<u32>, costs: &ModeCosts) -> u64 {
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
        if let Some(b) = &burst {
            self.fold_in_context(b);
        }
        // A timed call is priced at what it costs in this program once bursts measured it
        // (within 1-2x the calibration's figure, as compensation takes it): on base64's loop
        // the calibration loop's figure is 1.3x under it, and the points' real cost over
        // the budget by as much.
        let mut in_program = *costs;
        if let Some(t) = self.in_context_timed() {
            in_program.timed = overhead::in_context_bounded(t, costs.timed);
        }
        let costs = &in_program;
        self.points.resize(points.len(), PointState::default());
        // The round's cost, by part (steady states, the burst, the count windows, the
        // isolation window) and point.
        let mut round = Spent::EMPTY;
        let mut windows_ran = false;
        let mut calls_total = 0;
        // (index, calls this round) of the points the controller may change.
        let mut managed: Vec<(usize, u64)> = Vec::new();
        for (i, (p, cur)) in points.iter().zip(&scratch).enumerate() {
            let st = &mut self.points[i];
            let d = match &st.last {
                Some(last) => delta(cur, last),
                None => *cur,
            };
            let window = self.window_calls.get(i).zip(self.window_warm.get(i));
            // This round's calls of a point in bursts, estimated (none: not in one); the calls
            // whose times stand for the point, and those the round paid for.
            let sampled = self
                .sampled
                .get_mut(i)
                .map(|s| std::mem::take(&mut s.pending));
            let (estimated, d, paid) = fold_round(
                burst.as_ref(),
                window,
                st.set,
                &mut st.est,
                sampled.as_ref(),
                &d,
            );
            // The count windows' calls, counted: their cost is the windows' (`count_slot`).
            if let Some(s) = &sampled
                && s.slots > 0
            {
                round.add(Part::Windows, Some(i), s.seen as f64 * costs.counted);
                windows_ran = true;
            }
            st.last = Some(*cur);
            if d.timed > 0 {
                // What an untimed call of it stands for in the intervals around it: its recent
                // mean timed call and self time, decayed by MEAN_KEEP a round, so that they
                // follow the intervals as they are now (a point's timed calls are compensated
                // in bursts and not around them, unless the program asked; a mean over the
                // whole run kept every earlier phase); a round's longest call, when a stall
                // (`stalled_call`: a preemption, which a round's mean would scale by N), is
                // left out.
                let (mut total, mut own, mut timed) =
                    (d.total as f64, d.self_signed(), d.timed as f64);
                if let Some(max) = stalled_call(&d) {
                    // Its self share kept (the stall may be in a nested call).
                    own *= (total - max as f64).max(0.0) / total;
                    total -= max as f64;
                    timed -= 1.0;
                }
                let (t, o, n) = st.mean_pool;
                st.mean_pool = (
                    t * MEAN_KEEP + total,
                    o * MEAN_KEEP + own,
                    n * MEAN_KEEP + timed,
                );
                let (t, o, n) = st.mean_pool;
                p.set_means((t / n).round() as u64, (o / n).max(0.0).round() as u64);
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
            let timed_cost = paid.timed as f64 * costs.timed + paid.nested as f64 * nested;
            let spent = timed_cost + paid.skipped as f64 * untimed;
            // A counted point's timed calls are those of the bursts' windows (see
            // `plan_burst`): the windows' cost, which sets their length, not its own.
            let windows = if mode == Mode::Count && st.set == Some(Mode::Count) {
                timed_cost
            } else {
                0.0
            };
            round.add(Part::Bursts, Some(i), windows);
            // A point in bursts was called about `scale` times what the burst saw. A burst is a
            // sample of a few hundred microseconds: of a program that calls the point in
            // phases it may catch none (or a burst may catch no thread running), so the rate
            // the controller decides on is averaged over bursts, and kept through rounds whose
            // burst told nothing, instead of reading as a point no longer called.
            let calls = if mode == Mode::Burst {
                round.add(Part::Bursts, Some(i), spent);
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
                round.add(Part::Steady, Some(i), spent - windows);
                d.nr()
            };
            calls_total += paid.nr();
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
        // The isolation windows' timed calls of points in bursts (a counted point's are in
        // its round, priced above).
        round.add(
            Part::Isolation,
            None,
            std::mem::take(&mut self.isolation_timed) as f64 * costs.timed,
        );
        let Some(ppm) = ppm else {
            return calls_total;
        };
        // The steady states' cost (with the isolation window's), the burst's, the windows'.
        let cost = round.part(Part::Steady) + round.part(Part::Isolation);
        let burst_cost = round.part(Part::Bursts);
        let windows_cost = round.part(Part::Windows);
        self.cost_ticks += round.total();
        self.spent.merge(&round);
        self.cpu_ns += dcpu;
        let clk = clock::info();
        let at_ns = clk.to_ns(now.saturating_sub(clock::origin().0));
        if ppm == 0 {
            self.release_all(at_ns);
            return calls_total;
        }
        let budget = clk.to_ticks(dcpu as f64) * f64::from(ppm) / 1e6;
        if windows_ran {
            // The count windows aim at their share of the budget: their slots' length follows
            // what they cost, at most doubling or halving a round (see `sample`); windows that
            // saw nothing cost nothing, and the slots shorten.
            let ratio = (windows_cost / (sample::COUNT_SHARE * budget)).clamp(0.5, 2.0);
            self.count_slot = self
                .count_slot
                .mul_f64(ratio)
                .clamp(sample::MIN_SLOT, sample::MAX_SLOT);
        }
        let throttled = managed
            .iter()
            .any(|&(i, _)| self.points[i].set.is_some_and(|m| m != Mode::On));
        let bursts = super::bursts_allowed();
        // A point left in bursts after the user withdrew them is counted again at once.
        let stale_bursts = !bursts
            && managed
                .iter()
                .any(|&(i, _)| self.points[i].set == Some(Mode::Burst));
        // What counting alone would cost, every managed point counted on every call (the
        // floor under the default budget: see `CountingFloor`).
        let counting: f64 = managed.iter().map(|&(_, n)| n as f64).sum::<f64>() * costs.counted;
        self.counting.fold(counting, budget, &managed);
        // The steady states get what the bursts leave.
        if cost > (1.0 - BURST_SHARE) * budget
            || (throttled && cost < RELAX_BELOW * budget)
            || stale_bursts
        {
            let n: Vec<u64> = managed.iter().map(|&(_, n)| n).collect();
            let want = allocate(&n, costs, TARGET * budget, bursts);
            for (&(i, n), want) in managed.iter().zip(want) {
                let cur = Mode::managed(&points[i], &self.points[i]);
                let next = relax_limited(cur, want);
                self.change(i, cur, next, n as f64 * 1e9 / clk.to_ns_f(dt as f64), at_ns);
            }
        }
        self.plan_burst(&managed, burst_cost, budget);
        calls_total
    }

    /// A timed call's cost in this program (ticks), once bursts measured it on enough calls.
    pub(super) fn in_context_timed(&self) -> Option<f64> {
        let (extra, calls) = self.in_context;
        (calls >= MIN_IN_CONTEXT_CALLS).then(|| extra / calls)
    }

    /// Pools what the round's burst cost per call it timed and hands the pooled figure to
    /// compensation once it rests on enough calls ([`MIN_IN_CONTEXT_CALLS`]).
    fn fold_in_context(&mut self, b: &BurstRound) {
        let timed: u64 = self
            .points
            .iter()
            .zip(&self.window_calls)
            .filter(|(st, _)| st.in_windows())
            .map(|(_, w)| w.timed + w.nested)
            .sum();
        let Some((extra, calls)) = burst::burst_extra(b, timed) else {
            return;
        };
        let (e, n) = self.in_context;
        self.in_context = (e * KEEP + extra, n * KEEP + calls);
        if let Some(t) = self.in_context_timed() {
            overhead::set_in_context(t);
        }
    }

    /// The next burst: the managed points in bursts, and those counted only, for a window
    /// whose cost is about [`BURST_SHARE`] of the budget (`burst_cost`: what the last burst
    /// cost, ticks).
    ///
    /// A counted point is timed in the windows too, and only there: what an untimed call of it
    /// stands for (in its estimate and in the intervals around it, `Point::set_means`) is
    /// then its call as it is now, compensated. Timed only before it was counted, it stood
    /// for the calls of the run's first rounds, when every point was timed and nothing
    /// compensated: base64's `ChunkedEncoder::encode`, counted, read 154 ns of self time a
    /// call against perf's 29. With no point in bursts, the counted points still get windows.
    pub(super) fn plan_burst(&mut self, managed: &[(usize, u64)], burst_cost: f64, budget: f64) {
        let points: Vec<(usize, Mode)> = managed
            .iter()
            .filter_map(|&(i, _)| {
                let st = &self.points[i];
                st.in_windows().then(|| (i, st.set.unwrap_or(Mode::Burst)))
            })
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
        let window = window.clamp(MIN_WINDOW, MAX_WINDOW);
        self.isolation_plan = self.plan_isolation(&points, window.max(MIN_ISOLATION_WINDOW));
        self.plan = Some((points, window));
    }

    /// The next isolation window (see `burst::isolate`): the next class of
    /// [`isolation_classes`] that holds one of this burst's `points`, those of them, for
    /// `window`. The classes are made again when the tree of points grew.
    fn plan_isolation(
        &mut self,
        points: &[(usize, Mode)],
        window: Duration,
    ) -> Option<(Vec<(usize, Mode)>, Duration)> {
        let len = crate::tree::merged_len();
        if len != self.classes_from || self.classes.is_empty() {
            let (nodes, _) = crate::tree::merged();
            let all: Vec<usize> = (0..self.points.len()).collect();
            self.classes = isolation_classes(&all, &nodes);
            self.classes_from = len;
        }
        for _ in 0..self.classes.len() {
            let k = self.next_class % self.classes.len();
            self.next_class = self.next_class.wrapping_add(1);
            let set: Vec<(usize, Mode)> = points
                .iter()
                .filter(|(i, _)| self.classes[k].contains(i))
                .copied()
                .collect();
            if !set.is_empty() {
                return Some((set, window));
            }
        }
        None
    }

    /// Pools what a burst's window added to each edge of the tree of points (`before`,
    /// `after`: `tree::edges` around it).
    pub(super) fn fold_edges(
        &mut self,
        before: &std::collections::HashMap<(u32, u32), [u64; 3]>,
        after: &std::collections::HashMap<(u32, u32), [u64; 3]>,
    ) {
        for v in self.edges.values_mut() {
            v.iter_mut().for_each(|x| *x *= KEEP);
        }
        for (k, a) in after {
            let b = before.get(k).copied().unwrap_or_default();
            if a[0] > b[0] {
                let e = self.edges.entry(*k).or_default();
                for j in 0..3 {
                    e[j] += a[j].saturating_sub(b[j]) as f64;
                }
            }
        }
    }

    /// Pools what an isolation window timed (`got`: each point's counters' gain in it).
    pub(super) fn fold_isolated(&mut self, got: &[(usize, Scalars)]) {
        self.isolations += 1;
        for (i, d) in got {
            let Some(st) = self.points.get_mut(*i) else {
                continue;
            };
            if st.set == Some(Mode::Burst) {
                self.isolation_timed += d.timed;
            }
            let (mut total, mut timed) = (d.total as f64, d.timed as f64);
            if timed == 0.0 {
                continue;
            }
            // A call preempted in the window is the thread's stall, not the point's work.
            if let Some(max) = stalled_call(d) {
                total -= max as f64;
                timed -= 1.0;
            }
            st.isolated.add(total, timed);
        }
    }

    /// Applies and records one change (nothing if `to` is `from`).
    pub(super) fn change(&mut self, i: usize, from: Mode, to: Mode, calls_per_s: f64, at_ns: u64) {
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
            st.burst_since = clock::now();
            if let Some(s) = self.sampled.get_mut(i) {
                s.forget_rate();
            }
        }
        if self.events.len() < MAX_EVENTS {
            let mut event = BudgetEvent::default();
            event.at_s = at_ns as f64 / 1e9;
            event.point = p.name().to_string();
            event.from = from.label();
            event.to = to.label();
            event.calls_per_s = calls_per_s;
            self.events.push(event);
        } else {
            self.events_dropped += 1;
        }
    }

    /// The budget was turned off: every point the controller throttled is timed fully again.
    pub(super) fn release_all(&mut self, at_ns: u64) {
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

/// Folds a point's round `d` into its estimate `est` (`set`: the state the controller gave
/// it; `sampled`: what its count windows told since its last round, if it is in bursts),
/// given the round's burst, if one ran, and the point's calls in that burst's window and in
/// its warm-up (`window`: `(w, u)`). Returns the round's calls of a point in bursts,
/// estimated (`None` if not in bursts), the calls whose times stand for the point (for its
/// recent mean: the window's for a point in bursts; the round's less the warm-up's times
/// otherwise), and the calls the round paid for (its timed calls, the warm-up's included).
///
/// The warm-up's calls are counted but their times stand for nothing ([`burst::warm_up`]):
/// a point in bursts has them counted, priced at its mean call; a point counted only (timed
/// in the windows alone) has them priced at its window's calls; a point beside the bursts
/// keeps them, they are its usual calls.
pub(super) fn fold_round(
    burst: Option<&BurstRound>,
    window: Option<(&Scalars, &Scalars)>,
    set: Option<Mode>,
    est: &mut Est,
    sampled: Option<&Sampled>,
    d: &Scalars,
) -> (Option<f64>, Scalars, Scalars) {
    if set == Some(Mode::Burst) {
        let (w, u) = match (burst, window) {
            (Some(_), Some((w, u))) => (*w, *u),
            _ => (Scalars::default(), Scalars::default()),
        };
        // The warm-up's calls are seen; their times stand for nothing.
        let kept = untimed(d, &u);
        let calls = est.fold_sampled(&kept, &w, &sampled.copied().unwrap_or_default());
        let mut paid = w;
        paid.add(&u);
        return (Some(calls), w, paid);
    }
    let counted = set == Some(Mode::Count);
    match (burst, window) {
        (Some(_), Some((w, u))) => {
            // Counted: timed in the window alone, the warm-up's calls counted.
            let round = if counted { untimed(d, u) } else { *d };
            let kept = est.as_marked(counted, &round);
            est.fold_beside_burst(&kept, w);
            (None, kept, *d)
        }
        _ => {
            // Every call was paid for as it was made (counted: nested or not).
            let kept = est.as_marked(counted, d);
            est.fold(&kept);
            (None, kept, *d)
        }
    }
}

/// `d` with the timed calls of `u` (a span within it) made untimed: counted, their times
/// taken out (`max` too, when `u` set it).
pub(super) fn untimed(d: &Scalars, u: &Scalars) -> Scalars {
    let moved = u.timed.min(d.timed);
    Scalars {
        timed: d.timed - moved,
        skipped: d.skipped + moved,
        total: d.total.saturating_sub(u.total),
        self_ticks: d.self_ticks.wrapping_sub(u.self_ticks),
        max: if u.max != 0 && u.max >= d.max {
            0
        } else {
            d.max
        },
        ..*d
    }
}

/// `cur - last` for the additive counters (saturating: a counter never goes down, but a
/// sum over shards read at slightly different times may, by a call in flight); `max` is the
/// new maximum when one was set in between (a call that long happened then), else 0.
pub(super) fn delta(cur: &Scalars, last: &Scalars) -> Scalars {
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
