//! Count windows: how the calls a point in bursts makes between bursts are estimated (see
//! "Bursts" in the module docs, "calls").
//!
//! While points are in bursts, the controller spends the time between rounds in slots (10-100
//! ms, as many as [`COUNT_SHARE`] of the budget pays for). In each slot it counts those points
//! (`Mode::Count`: every call, no clock read) for one window of [`WINDOW`] that opens at a
//! moment drawn uniformly at random, and puts them back off. The moment is drawn here,
//! whatever the program does, so each moment of a slot had the same chance (the window's
//! share of the slot) of being counted, and a slot's calls are the window's over that share:
//! a Horvitz-Thompson estimate, unbiased on any program, phased or periodic, that the window's
//! placement cannot alias with. Two corrections:
//! - counting slows the program in the window (a counted call costs a few nanoseconds more
//!   than an off one): each thread's calls in the window are scaled by the share of the window
//!   its counted calls took ([`window_calls`]), between half the calibrated counted call's
//!   share and twice it ([`slowed`]); the interval reaches both ends of that range;
//! - the time the points were counted or timed anyway (the round's burst, its isolation
//!   window) is no slot's: those calls are seen.
//!
//! The interval: the variance of a point's estimate is read from successive slots' estimated
//! rates (half their squared difference, times the slot squared; the first slot counts as
//! uncertain by its whole estimate). Neighbouring slots differ by the sampling error and by
//! the program's own changes, so the figure is conservative where the program changes phase,
//! and follows the sampling error where it runs steadily. The half-width is Student's t for as
//! many degrees of freedom as slots saw a call, less one; with fewer than [`MIN_HITS`] such
//! slots there is no interval, and the count is a lower bound (the calls seen only).

use super::*;
use controller::{Cpu, cpu_ns};

/// A count window: long enough that what opening and closing it costs the program (the
/// controller waking on a core the program's threads use, ~20 us of their calls a window on a
/// 2-core guest, read as a 0.7x estimate with windows of 100 us) is a small part of it.
pub(super) const WINDOW: Duration = Duration::from_millis(1);
/// A count window's slot at first, and the bounds of every later one: its length follows what
/// the windows cost, aiming at [`COUNT_SHARE`] of the budget (`Controller::round`).
pub(super) const FIRST_SLOT: Duration = Duration::from_millis(10);
pub(super) const MIN_SLOT: Duration = Duration::from_millis(10);
pub(super) const MAX_SLOT: Duration = Duration::from_millis(100);
/// The share of the budget the count windows aim at (the bursts' is `BURST_SHARE`).
pub(super) const COUNT_SHARE: f64 = 0.2;
/// The share of a timed call's whole instrumentation cost by which the bursts' compensated
/// mean call, which prices the calls not seen, is uncertain: the raw mean holds all of it,
/// compensation takes out an estimate of it, so the true mean lies within that cost of the
/// compensated one (on the bench's `timed` shape, calls of ~330 ns, the compensated mean read
/// ~20 ns under the calls' own time, a timed call costing 27 ns).
pub(super) const COMPENSATION_SHARE: f64 = 1.0;
/// The fewest slots whose window saw a call for an interval.
pub(super) const MIN_HITS: u64 = 3;

/// What a point's count windows told since its last round.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sampled {
    /// Slots, those whose window saw a call, and the calls counted in the windows.
    pub(crate) slots: u64,
    pub(crate) hits: u64,
    pub(crate) seen: u64,
    /// Calls estimated outside the windows (the slots' estimates less the calls seen).
    pub(crate) unseen: f64,
    /// The variance of those (see the module docs).
    pub(crate) var: f64,
    /// How far the estimate may be off for what counting slowed its threads (the farther end
    /// of the slowing's range, [`slowed`]): added to the interval as it is.
    pub(crate) sys: f64,
    /// A timed call's whole instrumentation cost (ticks), the most by which the bursts'
    /// compensated mean call, which prices these calls, can be off ([`COMPENSATION_SHARE`]).
    pub(crate) compensated: f64,
}

/// A point's count windows: what they told since its last round, and its last slot's rate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct SampleState {
    pub(super) pending: Sampled,
    last_rate: Option<f64>,
}

impl SampleState {
    /// The calls estimated in `ticks` since its last slot, at that slot's rate (`None`: no
    /// slot since it went into bursts).
    pub(super) fn open(&self, ticks: f64) -> Option<f64> {
        self.last_rate.map(|rate| rate * ticks.max(0.0))
    }

    /// Forgets the last slot's rate: the point goes into bursts again, and a rate from its
    /// earlier time there is no measure of now (nor a neighbour to difference the next slot
    /// with).
    pub(super) fn forget_rate(&mut self) {
        self.last_rate = None;
    }

    /// Adds one slot: `calls` counted in a window of `window` ticks, in a slot of `slot` ticks
    /// in which the point was off but for the window; `corrected`: those calls corrected for
    /// what counting slowed their threads, at the least, the figure taken and the most
    /// ([`window_calls`]).
    pub(super) fn add(&mut self, calls: u64, corrected: [f64; 3], window: f64, slot: f64) {
        let window = window.max(1.0);
        let slot = slot.max(window);
        let scale = |c: f64| c.max(calls as f64) * slot / window;
        let [least, est, most] = corrected.map(scale);
        let rate = est / slot;
        let var = match self.last_rate {
            Some(prev) => (rate - prev).powi(2) / 2.0 * slot * slot,
            None => est * est,
        };
        self.last_rate = Some(rate);
        let p = &mut self.pending;
        p.slots += 1;
        p.hits += u64::from(calls > 0);
        p.seen += calls;
        p.unseen += est - calls as f64;
        p.var += var;
        p.sys += (most - est).max(est - least);
    }
}

/// The calls of each of `n` points in a window of `window` ticks, from the per-shard counts
/// read at its start and end ([`shard::read_points_by_shard`]): counted, and corrected at the
/// least, the figure taken and the most (see [`slowed`]). A thread's counted calls took their
/// share `f` of its window (it is taken to have run through it), so it made `1 - f` of the
/// calls it makes while they are off: its calls are divided by that. One correction for the
/// whole process would not do: the points of a thread that calls them every 2 ns run at half
/// speed in a window while those of another thread barely slow.
pub(super) fn window_calls(
    before: &[(usize, Vec<u64>)],
    after: &[(usize, Vec<u64>)],
    n: usize,
    window: f64,
    counted: f64,
) -> (Vec<u64>, [Vec<f64>; 3]) {
    let mut calls = vec![0u64; n];
    let mut corrected = [vec![0.0; n], vec![0.0; n], vec![0.0; n]];
    for (i, (key, now)) in after.iter().enumerate() {
        // The same shard in the first read: at the same place unless threads came since.
        let then = before
            .get(i)
            .filter(|(k, _)| k == key)
            .or_else(|| before.iter().find(|(k, _)| k == key))
            .map(|(_, c)| c.as_slice());
        let d: Vec<u64> = (0..n)
            .map(|k| {
                let was = then.and_then(|c| c.get(k)).copied().unwrap_or(0);
                now.get(k).copied().unwrap_or(0).saturating_sub(was)
            })
            .collect();
        let share = d.iter().sum::<u64>() as f64 * counted / window.max(1.0);
        let (least, mid, most) = slowed(share);
        for k in 0..n {
            calls[k] += d[k];
            for (c, f) in corrected.iter_mut().zip([least, mid, most]) {
                c[k] += d[k] as f64 / (1.0 - f);
            }
        }
    }
    (calls, corrected)
}

/// A thread's slowing in a count window, given the share of the window its counted calls take
/// at the calibrated counted call (`share`): (the least it may be, the figure taken, the most).
/// The calibration times a counted call in a tight loop once, in 2 ms: in a program a counted
/// call costs up to about twice as much (smallvec's loop: ~3.5 ns against 1.7), and the figure
/// itself moves from run to run (1.1-1.7 ns in the burst_coverage bench's runs). So the slowing
/// lies between half the share and twice it, within [`MOST_SLOWED`]: the figure taken is the
/// middle, the interval reaches both ends. The range is wide only where counting is a large
/// part of the calls (a call every ~1.4 ns: the share ~0.35, the estimate within +-90%); for
/// calls of a few hundred nanoseconds it is a fraction of a percent.
pub(super) fn slowed(share: f64) -> (f64, f64, f64) {
    let least = (share / 2.0).min(MOST_SLOWED);
    let most = (2.0 * share).min(MOST_SLOWED);
    (least, (least + most) / 2.0, most)
}

/// The most a thread is taken to be slowed in a count window: counted calls taking more of it
/// would be calls of a few cycles each.
const MOST_SLOWED: f64 = 0.75;

/// Student's t, two-sided 95%, for `df` degrees of freedom (1.96 beyond the table's reach,
/// approached as `1.96 + 2.4 / df`, within 0.01 of the true figure from 11 on).
pub(crate) fn t95(df: u64) -> f64 {
    const T: [f64; 10] = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23];
    match df {
        0 => f64::INFINITY,
        1..=10 => T[df as usize - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

/// A small generator for the windows' moments (xorshift64*, seeded from the clock): the
/// moments must not follow the program, nothing more.
struct Moments(u64);

impl Moments {
    fn new() -> Moments {
        Moments(clock::now() | 1)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((u128::from(r) * u128::from(n.max(1))) >> 64) as u64
    }
}

/// When the controller's last sleep ended (raw clock), and what of the time since its
/// points in bursts were timed anyway, in ticks: the burst, and the isolation window for those
/// in it (the others are off there, and their calls in it are estimated with the first
/// slot's). The first slot of the next sleep is the rest.
#[derive(Debug, Clone, Default)]
pub(super) struct Seen {
    pub(super) from: u64,
    pub(super) burst: u64,
    pub(super) isolation: u64,
    pub(super) isolated: Vec<usize>,
}

impl Seen {
    pub(super) fn since(from: u64) -> Seen {
        Seen {
            from,
            ..Seen::default()
        }
    }

    /// The ticks point `i` was seen in since `from`.
    fn of(&self, i: usize) -> u64 {
        if self.isolated.contains(&i) {
            self.burst + self.isolation
        } else {
            self.burst
        }
    }
}

/// Sleeps until the raw clock reads `at`.
pub(super) fn sleep_until(at: u64) {
    let now = clock::now();
    if at > now {
        std::thread::sleep(Duration::from_nanos(clock::info().to_ns(at - now)));
    }
}

/// Spends about `total` in count-window slots for `points` (in bursts by the controller):
/// the controller thread's sleep between rounds while points are in bursts. The first slot
/// begins where the last sleep ended, less the time each point was seen in since (`seen`).
/// Each slot is folded into the controller's state as it ends.
pub(super) fn sleep_counting(total: Duration, points: &[usize], seen: &Seen) {
    let all = point::all();
    let clk = clock::info();
    let (counted, slot_length) = {
        let c = state();
        (c.costs.map_or(0.0, |c| c.counted), c.count_slot)
    };
    let slot_ticks = clk.to_ticks(slot_length.as_nanos() as f64) as u64;
    let window_ticks = clk.to_ticks(WINDOW.as_nanos() as f64) as u64;
    let compensated = overhead::call_ticks();
    let mut moments = Moments::new();
    let own_began = cpu_ns(Cpu::Thread);
    let began = clock::now();
    let end = began + clk.to_ticks(total.as_nanos() as f64) as u64;
    let (mut start, mut first) = (seen.from.min(began), true);
    let mut slot_start = began;
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let read = |out: &mut Vec<(usize, Vec<u64>)>| shard::read_points_by_shard(points, out);
    loop {
        sleep_until(slot_start + moments.below(slot_ticks.saturating_sub(window_ticks)));
        let apply = |mode: Mode| {
            let c = state();
            for &i in points {
                // A point the user set, or one the controller moved since, is not the
                // windows' (read under the lock the rounds change states under).
                if c.keeps_in_bursts(i) {
                    mode.apply(&all[i]);
                }
            }
        };
        apply(Mode::Count);
        let t0 = clock::now();
        read(&mut before);
        let t1 = clock::now();
        std::thread::sleep(WINDOW);
        let t2 = clock::now();
        read(&mut after);
        let t3 = clock::now();
        apply(Mode::Burst);
        sleep_until(slot_start + slot_ticks);
        let now = clock::now();
        // The window: between the reads' middles.
        let window = ((t2 + t3) / 2).saturating_sub((t0 + t1) / 2) as f64;
        let slot = |i: usize| {
            let excluded = if first { seen.of(i) } else { 0 };
            now.saturating_sub(start).saturating_sub(excluded) as f64
        };
        let (calls, [least, corrected, most]) =
            window_calls(&before, &after, points.len(), window, counted);
        {
            let mut c = state();
            if c.sampled.len() < all.len() {
                c.sampled.resize(all.len(), SampleState::default());
            }
            // The slots reach this far: a report taken later estimates the calls since.
            c.slots_to = now;
            for (k, &i) in points.iter().enumerate() {
                // A point the user set during the slot is theirs: its calls from then on are
                // seen (or theirs to switch off), and the slot stands for none of them.
                if c.keeps_in_bursts(i) {
                    c.sampled[i].pending.compensated = compensated;
                    c.sampled[i].add(calls[k], [least[k], corrected[k], most[k]], window, slot(i));
                }
            }
        }
        (start, first, slot_start) = (now, false, now);
        if now + slot_ticks / 2 > end {
            break;
        }
    }
    state().controller_ns += cpu_ns(Cpu::Thread).saturating_sub(own_began);
}
