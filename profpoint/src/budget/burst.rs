//! Bursts, the controller's last resort: points too hot even to count are off but for one
//! short window a round, timed fully there, and their calls between windows estimated from
//! the windows' calls against the points still counted (see the module docs of `budget`,
//! "Bursts").

use super::*;
use controller::{Cpu, cpu_ns, delta};

/// Times `points` (the controller's, in bursts or counted only) fully for `window`, then puts
/// each back in its state (off, or counting); records when (see "Bursts" in the module docs).
/// Holds the controller's lock only to record, never while the program runs the burst.
pub(super) fn burst(points: &[(usize, Mode)], window: Duration) {
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
        for &(i, _) in points {
            if all[i].is_by_budget() {
                Mode::On.apply(&all[i]);
            }
        }
        // From here the burst's points are on. Its window, what happens between the two reads
        // after the warm-up, is what it measures: every point's calls in it (those of the
        // points beside the burst too, which tell how much it slowed the program:
        // `burst_extra`) are those of the same span.
        c.window_start = clock::now();
    }
    // Who calls whom while every point of the windows is on (the tree of points elsewhere
    // holds the calls of isolation windows too, attached to whatever was on above them).
    let edges_before = crate::tree::edges();
    // How long a read took, in ticks.
    let timed_read = |out: &mut Vec<Scalars>| {
        let t = clock::now();
        shard::read_all_scalars(out);
        clock::now().saturating_sub(t)
    };
    // The first calls after the points go on are not their usual calls (see [`warm_up`]):
    // they run, timed, before the window's counts begin, and are told apart (`window_warm`).
    let mut start = Vec::new();
    let zeroth = timed_read(&mut start);
    std::thread::sleep(warm_up(window));
    let from = clock::now();
    let mut before = Vec::new();
    let first = timed_read(&mut before);
    std::thread::sleep(window);
    let mut after = Vec::new();
    let second = timed_read(&mut after);
    let edges_after = crate::tree::edges();
    let mut c = state();
    c.fold_edges(&edges_before, &edges_after);
    c.window_end = clock::now();
    let clk = clock::info();
    let quick = window.as_nanos() as u64 / 4;
    c.window_reliable = [zeroth, first, second]
        .iter()
        .all(|&t| clk.to_ns(t) < quick);
    // The counts are the span between the reads' middles: the window less half of each.
    c.window_reads = (first + second) / 2;
    c.window_warm_ticks = from.saturating_sub(c.window_start);
    for &(i, back) in points {
        if all[i].is_by_budget() {
            back.apply(&all[i]);
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
    let mut warm = std::mem::take(&mut c.window_warm);
    warm.clear();
    warm.extend(before.iter().zip(&start).map(|(b, s)| delta(b, s)));
    c.window_warm = warm;
    c.bursts += 1;
    c.controller_ns += cpu_ns(Cpu::Thread).saturating_sub(began);
}

/// Times `set` (one isolation class of the windows' points: none nests another, see
/// `controller::isolation_classes`) alone, compensated, for `window` after a warm-up, every
/// other point of the windows staying off or counted; then puts each back in its state.
/// Returns what each point's counters gained in the window, or `None` when a read of them was
/// slow (the controller preempted: the gains are of different spans).
///
/// Why: in a burst every point of the windows is timed, and a parent's self time is its
/// time less its children's less what compensation takes out for their instrumentation; on
/// base64's loop that figure is off by 2-6 ns a nested call at some sites (how the parent's
/// code changes when its children's points are on), which moved parents with many children
/// above their children in perf's order (docs/budget.md, "The floor under the ranking target").
/// Timed alone, a point's mean call holds its children as the program makes them with their
/// points off, and its self time is that less its children's mean calls: a child that is a
/// parent too timed alone in its turn, a leaf as its bursts timed it
/// (`report::from_isolated`).
pub(super) fn isolate(set: &[(usize, Mode)], window: Duration) -> Option<Vec<(usize, Scalars)>> {
    let all = point::all();
    let began = cpu_ns(Cpu::Thread);
    let compensating = overhead::compensating();
    {
        let _c = state();
        if !compensating {
            overhead::set_compensation(true);
        }
        for &(i, _) in set {
            if all[i].is_by_budget() {
                Mode::On.apply(&all[i]);
            }
        }
    }
    std::thread::sleep(warm_up(window));
    let quick = window.as_nanos() as u64 / 4;
    let clk = clock::info();
    let read = |out: &mut Vec<Scalars>| {
        let t = clock::now();
        shard::read_all_scalars(out);
        clk.to_ns(clock::now().saturating_sub(t)) < quick
    };
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let first = read(&mut before);
    std::thread::sleep(window);
    let second = read(&mut after);
    let mut c = state();
    for &(i, back) in set {
        if all[i].is_by_budget() {
            back.apply(&all[i]);
        }
    }
    if !compensating {
        overhead::set_compensation(false);
    }
    c.controller_ns += cpu_ns(Cpu::Thread).saturating_sub(began);
    (first && second).then(|| {
        set.iter()
            .filter_map(|&(i, _)| Some((i, delta(after.get(i)?, before.get(i)?))))
            .collect()
    })
}

/// How long a burst's points run timed before its window's counts begin: a quarter of the
/// window, within [`MIN_WARM_UP`, `MAX_WARM_UP`].
///
/// The first calls after the points go on run slower than their usual calls (base64's loop, the
/// calls of `Base64Display::fmt` in the windows, compensated: 37-53 ns of self time a call counted
/// from the switch, 2-6 ns from 200 us after it, 3.2 ns timed on every call for the whole run;
/// `BENCHMARKS.md`'s git history), and a window of a few hundred microseconds holds only a few
/// dozen of them. Their excess, which compensation's fixed figure does not take out, stood for
/// every call between the windows.
pub(super) fn warm_up(window: Duration) -> Duration {
    (window / 4).clamp(MIN_WARM_UP, MAX_WARM_UP)
}

impl Controller {
    /// The burst that ran in the span from `since` to `now` (raw clock) and what it saw, or
    /// `None` if none did, or one still runs (a report made during a burst: it stands for
    /// nothing yet). `cur`: every point's counters at `now` (since process start).
    pub(super) fn burst_round(&self, since: u64, now: u64, cur: &[Scalars]) -> Option<BurstRound> {
        if self.window_start == 0
            || self.window_start < since
            || self.window_end < self.window_start
        {
            return None;
        }
        Some(BurstRound {
            reference: Reference::of(&self.points, &self.window_calls, &self.window_warm, cur),
            dt: now.saturating_sub(since).max(1) as f64,
            on: self
                .window_end
                .saturating_sub(self.window_start)
                .saturating_sub(self.window_warm_ticks)
                .saturating_sub(self.window_reads)
                .max(1) as f64,
            warm: self.window_warm_ticks as f64,
            reliable: self.window_reliable,
        })
    }
}

/// The calls of the points beside the bursts (not in them: counted all the time) in the last
/// burst and in its whole round: what a burst point's calls in the burst stand for (see
/// "Bursts" in the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Reference {
    pub(super) inside: u64,
    pub(super) all: u64,
    /// Their calls in the burst's warm-up (see [`warm_up`]), neither inside nor outside it.
    pub(super) warm: u64,
}

impl Reference {
    pub(super) fn of(
        points: &[PointState],
        window_calls: &[Scalars],
        window_warm: &[Scalars],
        cur: &[Scalars],
    ) -> Reference {
        let mut r = Reference::default();
        for (i, st) in points.iter().enumerate() {
            if st.set == Some(Mode::Burst) {
                continue;
            }
            if let (Some(w), Some(last), Some(now)) = (window_calls.get(i), &st.last, cur.get(i)) {
                r.inside += w.nr();
                r.all += delta(now, last).nr();
                r.warm += window_warm.get(i).map_or(0, Scalars::nr);
            }
        }
        r
    }
}

/// Weight of the past in the pooled burst counts: each burst's counts weigh 0.8 of the next
/// one's (so the pools follow a change of the program's mix within ~10 bursts).
pub(super) const KEEP: f64 = 0.95;

/// A round with a burst in it.
#[derive(Debug, Clone, Copy)]
pub(super) struct BurstRound {
    /// The reference points' calls in the burst and in the round.
    pub(super) reference: Reference,
    /// The round's ticks, the burst's window's, and its warm-up's (see [`warm_up`]).
    pub(super) dt: f64,
    pub(super) on: f64,
    pub(super) warm: f64,
    /// Whether its counts compare (see `Controller::window_reliable`).
    pub(super) reliable: bool,
}

/// The fewest calls of the reference points, in the burst and outside it in its round, from
/// which [`burst_extra`] reads how much the burst slowed the program.
pub(super) const MIN_RATE_CALLS: u64 = 64;

/// What the burst of `round` cost the program, in ticks, and the calls it timed: the burst's
/// length less the time its share of the reference points' calls took at the rate they ran at
/// outside it (the points in bursts are off there, and control flow fixes how many of their
/// calls come with the reference's). `timed`: the calls the burst's points made in it. `None`
/// where the rates cannot tell (too few reference calls on either side, no timed call).
/// Pooled over bursts, extra over timed is what a timed call costs in this program, with its
/// caches, paths and nesting: compensation's figure (`overhead::set_in_context`), which the
/// calibration loop, one hidden point in a tight loop, measures 1.33 times too small on
/// base64's (docs/budget.md: 44-51 ns in its loop against 33-34).
pub(super) fn burst_extra(round: &BurstRound, timed: u64) -> Option<(f64, f64)> {
    let Reference { inside, all, warm } = round.reference;
    let outside = all.saturating_sub(inside + warm);
    let off_ticks = round.dt - round.on - round.warm;
    if !round.reliable
        || timed == 0
        || inside < MIN_RATE_CALLS
        || outside < MIN_RATE_CALLS
        || off_ticks <= round.on
    {
        return None;
    }
    let unslowed = inside as f64 * off_ticks / outside as f64;
    Some((round.on - unslowed, timed as f64))
}
