//! The wall sampler: the times of throttled points from samples, never from extrapolation.
//!
//! # Concept
//! A point timed on every call has measured times. A point the budget throttles (timed one
//! call in N, or counted only) has an exact count but only some of its calls timed, and
//! scaling those up gave trees whose children outgrew their parents and rankings that moved
//! from run to run. So while any point is throttled, the budget's own thread looks at every
//! thread's current node of the points tree at a steady rate and adds a sample to it. A node's
//! sampled time is the samples of its subtree times the period: wall-clock time, as a timed
//! call measures it (a thread blocked or descheduled inside a point is in it, as a timed call
//! counts it), and a child never holds more samples than its parent, by construction.
//!
//! # Mechanism
//! - No signal and no timer aimed at the program's threads: the budget's thread sleeps to the
//!   next tick of a fixed grid ([`PERIOD`]), reads each shard's current-node word (the owner
//!   writes it at every enter and leave of a point in the tree) and adds the periods since its
//!   last look to that node's `samples` (it is their only writer). A late wake-up (a busy
//!   machine) gives its sample every period it covered, so the samples of a thread that was
//!   in one node all along add up to the wall time sampled.
//! - Sampling begins the first time the controller finds a point throttled (by itself or by
//!   the user) and then goes on to the end of the process; at that moment each node's measured
//!   total is kept in its `before` ([`crate::tree::mark_before_sampling`]): until then every
//!   call was timed. A throttled node's time is `before` plus its subtree's samples times the
//!   period, held between what its timed calls measured and what its parent leaves
//!   (`report/tree.rs`).
//! - Counted-only calls are not in the tree (that is what makes counting cheap): their time
//!   is in the samples of the node around them.
//! - Its own cost (CPU time of the looks) is kept, and the budget's report states it.
//!
//! # Extending
//! The samples are per node and per shard, summed by path like every other node counter
//! (`tree::merged`). Anything that wants a time where calls were not all timed reads them
//! there, never scales a timed subset.

use super::*;

/// The sampling period. Each look costs one wake-up of the budget's thread, most of it the
/// timer interrupt: the kernel's tick here (HZ=250) keeps that cost within its target
/// (BENCHMARKS.md, "The wall sampler"), and gives 250 samples a second of every thread.
pub(crate) const PERIOD: Duration = Duration::from_millis(4);

/// Whether sampling has begun (it never stops).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Periods sampled so far (each look adds the periods it covered).
static PERIODS: AtomicU64 = AtomicU64::new(0);
/// Samples that found a thread inside a point (one per shard and look).
static HITS: AtomicU64 = AtomicU64::new(0);
/// CPU time of the looks, nanoseconds (the budget's thread's own).
static OWN_NS: AtomicU64 = AtomicU64::new(0);

/// Whether wall sampling has begun: a throttled node's time is then sampled.
pub(crate) fn active() -> bool {
    // Relaxed: a flag; reports read node counters that are themselves relaxed tallies.
    ACTIVE.load(Ordering::Relaxed)
}

/// What the sampler has done so far: periods sampled, samples inside a point, its own CPU
/// time in nanoseconds.
pub(crate) fn tally() -> (u64, u64, u64) {
    // Relaxed: tallies.
    (
        PERIODS.load(Ordering::Relaxed),
        HITS.load(Ordering::Relaxed),
        OWN_NS.load(Ordering::Relaxed),
    )
}

/// Begins sampling if a point is throttled now (sampled or counted only, by anyone); the
/// controller's thread, each round.
pub(super) fn begin_if_throttled() {
    if active() {
        return;
    }
    let throttled = point::all()
        .iter()
        .any(|p| p.kind() != Kind::Hidden && matches!(Mode::of(p), Mode::Sampled(_) | Mode::Count));
    // Bursts (opt-in) keep their own windows and estimates: the controller's sleep is theirs.
    // Relaxed: a setting.
    if throttled && !BURSTS.load(Ordering::Relaxed) {
        crate::tree::mark_before_sampling();
        // Relaxed: see `active`.
        ACTIVE.store(true, Ordering::Relaxed);
    }
}

/// The controller's sleep of `total` while sampling: looks at every thread on the grid's
/// ticks until `total` has passed.
pub(super) fn sleep_sampling(total: Duration, grid: &mut Grid) {
    let clk = clock::info();
    let end = clock::now() + clk.to_ticks(total.as_nanos() as f64) as u64;
    // Its cost is the thread's CPU time over the whole sleep: the wake-ups are most of it.
    let began = controller::cpu_ns(controller::Cpu::Thread);
    loop {
        let next = grid.next.max(clock::now());
        if next >= end {
            sample::sleep_until(end);
            let spent = controller::cpu_ns(controller::Cpu::Thread).saturating_sub(began);
            // Relaxed: a tally.
            OWN_NS.fetch_add(spent, Ordering::Relaxed);
            return;
        }
        sample::sleep_until(next);
        let now = clock::now();
        // The periods this look stands for: its own, and each one it woke too late for.
        let weight = match grid.next {
            0 => 1,
            at => 1 + now.saturating_sub(at) / grid.period,
        };
        grid.next = match grid.next {
            0 => now + grid.period,
            at => at + weight * grid.period,
        };
        let weight = u32::try_from(weight).unwrap_or(u32::MAX);
        grid.look(weight);
        // Relaxed: a tally.
        PERIODS.fetch_add(u64::from(weight), Ordering::Relaxed);
    }
}

/// The sampler's grid and the shards it looks at.
pub(super) struct Grid {
    /// The next look, clock ticks (0: none yet).
    next: u64,
    /// The period, clock ticks.
    period: u64,
    /// The shards known at the last look (refreshed when their number grows).
    shards: Vec<&'static shard::Shard>,
}

impl Grid {
    pub(super) fn new() -> Grid {
        let period = clock::info().to_ticks(PERIOD.as_nanos() as f64) as u64;
        Grid {
            next: 0,
            period: period.max(1),
            shards: Vec::new(),
        }
    }

    /// One look at every shard: its thread's current node gains `weight` periods.
    fn look(&mut self, weight: u32) {
        if shard::shard_count() != self.shards.len() {
            self.shards = shard::all_shards();
        }
        let mut hits = 0;
        for s in &self.shards {
            hits += u64::from(crate::tree::sample_current(s, weight));
        }
        // Relaxed: a tally.
        HITS.fetch_add(hits, Ordering::Relaxed);
    }
}

/// The sampling period in nanoseconds, as reports convert samples.
pub(crate) fn period_ns() -> f64 {
    PERIOD.as_nanos() as f64
}
