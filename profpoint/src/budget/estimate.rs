//! A point's estimated totals (`Est`): the strata a sampled or counted point's calls fall in,
//! folded round by round, and the totals and error bars a report shows (see the module docs
//! of `budget`, "Estimates and error bars").

use super::*;
use crate::slot::Counts;
use burst::KEEP;
use controller::delta;
use sample::Sampled;

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
    pub(super) unseen_outer: f64,
    pub(super) unseen_all: f64,
    /// Their estimated total and self time, at the bursts' mean call (ticks), and those of
    /// them no burst had priced yet (priced at the point's mean timed call).
    pub(super) unseen_total: f64,
    pub(super) unseen_self: f64,
    pub(super) unseen_unpriced: f64,
    /// The variance (ticks squared) of `unseen_total`, and what the slowing correction added
    /// to it (taken as it is into the interval: see `sample`).
    pub(super) burst_var: f64,
    pub(super) total_sys: f64,
    /// The same for the count: the variance of `unseen_all` and the correction's part.
    pub(super) count_var: f64,
    pub(super) count_sys: f64,
    /// Count-window slots, and those whose window saw a call (see `sample`).
    pub(super) slots: u64,
    pub(super) hits: u64,
    /// In bursts as the estimate was taken: its calls since the last slot ended are not in a
    /// slot yet (estimated at its last slot's rate, or, with none, not at all: see
    /// `budget::estimates`), so even a point with no slot yet has a count that is not exact.
    pub(super) open: bool,
    /// The mean call of its last bursts, which a burst is judged against, and how many
    /// bursts (or calls in them) were taken as stalled (see `fold_burst`).
    pub(super) burst_means: Recent,
    pub(super) burst_stalls: u64,
    /// Its bursts' totals, self times, timed calls, outermost calls and calls, pooled over
    /// bursts (see [`KEEP`]): its mean call in bursts, for the calls between them.
    pub(super) burst_pool_total: f64,
    pub(super) burst_pool_self: f64,
    pub(super) burst_pool_timed: f64,
    pub(super) burst_pool_outer: f64,
    pub(super) burst_pool_all: f64,
    /// For a point not in bursts: its timed calls' total and self time, and their number,
    /// in the bursts of the others (see `fold_beside_burst`).
    pub(super) beside_total: f64,
    pub(super) beside_self: f64,
    pub(super) beside_timed: u64,
    /// The mean timed call of its last strata, which a stratum is judged against, and how
    /// many strata were taken as stalled (see `close`).
    pub(super) strata_means: Recent,
    pub(super) strata_stalls: u64,
    /// Sampled rounds not yet closed as a stratum: a stratum holds at least [`MIN_TIMED`]
    /// timed calls, so that one long call (a preemption, say) is never scaled up by the
    /// calls of a round in which it was the only one timed.
    pub(super) pending: Scalars,
    /// Its outermost and nested calls in the rounds that told them apart (on or sampled:
    /// a recursive call is marked there), pooled: the share of its calls that are outermost,
    /// which a counted round (no mark: every call alike) is taken to have (see
    /// [`Est::outermost_of_counted`]).
    pub(super) depth_outer: f64,
    pub(super) depth_nested: f64,
    /// Counted calls taken as nested by that share (never priced: their time is in the
    /// outermost call's), and the fraction of a call carried to the next round.
    pub(crate) counted_nested: f64,
    pub(super) counted_carry: f64,
}

/// How many bursts' mean calls a new burst is judged against (their median).
pub(super) const RECENT: usize = 15;

/// The fewest timed calls in bursts that a point beside them takes its self share from.
pub(super) const MIN_BESIDE: u64 = 1;

/// The fewest timed calls a sampled stratum closes with.
pub(super) const MIN_TIMED: u64 = 32;

/// A stratum's longest timed call is taken as a stall when it is this many times the mean of
/// the others (see `Est::close`).
const STALL_RATIO: f64 = 1000.0;

/// The longest timed call in `d` (ticks) if it is a stall: a new maximum for the point (`d.max`
/// is 0 otherwise) over [`STALL_RATIO`] times the mean of `d`'s other timed calls (the thread
/// preempted or faulting inside it, not the point's work).
pub(crate) fn stalled_call(d: &Scalars) -> Option<u64> {
    if d.max == 0 || d.timed < 2 {
        return None;
    }
    let rest = (d.total - d.max.min(d.total)) as f64 / (d.timed - 1) as f64;
    (d.max as f64 > STALL_RATIO * rest.max(1.0)).then_some(d.max)
}

/// The longest timed call in a point's counters `c` if it is a stall ([`stalled_call`]) and
/// one of the calls they hold: after a reset the counters are the calls since it
/// (`Counts::since`) but their maximum is the run's, and a slow call made before the reset
/// (its ticks above the total since) would price every call since at nothing.
pub(crate) fn usual_stall(c: &Counts) -> Option<u64> {
    stalled_call(&c.scalars()).filter(|&max| max <= c.total)
}

/// The means (ticks) of a point's last [`RECENT`] bursts or strata, a ring, whose median a
/// new one is judged against.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Recent {
    means: [f64; RECENT],
    /// How many were written so far.
    count: u64,
}

impl Recent {
    /// Records `mean`, every one counted, stalled or not (a running mean of the kept ones
    /// took in a 14x burst under a 20x rule and read every later one against it; the median
    /// follows a real change of the program's calls within RECENT / 2). Returns the median of
    /// the means before it if `mean` is over [`BURST_STALL_RATIO`] times that (a stall).
    fn stall(&mut self, mean: f64) -> Option<f64> {
        let n = (self.count as usize).min(RECENT);
        let median = (n > 0).then(|| {
            let mut v = self.means;
            let v = &mut v[..n];
            v.sort_by(f64::total_cmp);
            v[n / 2]
        });
        self.means[(self.count % RECENT as u64) as usize] = mean;
        self.count += 1;
        median.filter(|&m| mean > BURST_STALL_RATIO * m)
    }
}

impl Est {
    /// A round `d` as the estimate takes it: a counted one's calls split by the share of
    /// outermost calls ([`Est::outermost_of_counted`]); any other (on or sampled: its
    /// recursive calls marked nested) teaches that share and is taken as it is.
    pub(super) fn as_marked(&mut self, counted: bool, d: &Scalars) -> Scalars {
        if counted {
            self.outermost_of_counted(d)
        } else {
            self.learn_depth(d);
            *d
        }
    }

    /// Learns the share of outermost calls from a round `d` in which calls were marked nested
    /// (the point on or sampled).
    fn learn_depth(&mut self, d: &Scalars) {
        self.depth_outer += (d.timed + d.skipped) as f64;
        self.depth_nested += d.nested as f64;
    }

    /// A round `d` of a counted point (every call counted alike, none marked nested) with
    /// its calls split as the point's earlier rounds split them: the outermost share stays
    /// untimed (priced at the mean outermost call), the rest moves to nested (not priced).
    /// A hot recursive function counted only had every call priced as an outermost one: its
    /// total came out its mean depth times too high (fib(20): 21,891 calls an outermost call).
    /// A point never seen recursive, or never seen marked, is left as it is.
    fn outermost_of_counted(&mut self, d: &Scalars) -> Scalars {
        // This round's marked calls (a window's) join what the earlier rounds told.
        let (outer, nested) = (
            self.depth_outer + d.timed as f64,
            self.depth_nested + d.nested as f64,
        );
        if nested == 0.0 || outer == 0.0 || d.skipped == 0 {
            return *d;
        }
        let want = d.skipped as f64 * outer / (outer + nested) + self.counted_carry;
        let kept = (want.floor() as u64).min(d.skipped);
        self.counted_carry = want - kept as f64;
        let moved = d.skipped - kept;
        self.counted_nested += moved as f64;
        Scalars {
            skipped: kept,
            nested: d.nested + moved,
            ..*d
        }
    }

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
    /// the round (its calls all seen: in count windows, bursts and isolation windows), `w` what
    /// the round's burst saw of it (timed on every call, compensated; none if no burst ran),
    /// `s` what the count windows told of the calls not seen. The calls seen are exact; those
    /// not seen are priced at the point's mean call in its bursts (pooled), and carry the
    /// interval. Returns the round's calls, estimated.
    pub(crate) fn fold_sampled(&mut self, d: &Scalars, w: &Scalars, s: &Sampled) -> f64 {
        self.estimated = true;
        self.fold(&delta(d, w));
        self.fold(w);
        self.pool_burst(w);
        self.slots += s.slots;
        self.hits += s.hits;
        self.unseen_all += s.unseen;
        self.count_var += s.var;
        self.count_sys += s.sys;
        let outer_share = if self.burst_pool_all > 0.0 {
            self.burst_pool_outer / self.burst_pool_all
        } else {
            1.0
        };
        let unseen_outer = s.unseen * outer_share;
        self.unseen_outer += unseen_outer;
        if self.burst_pool_timed <= 0.0 {
            // No burst has timed a call yet: priced at the point's mean timed call.
            self.unseen_unpriced += unseen_outer;
        } else {
            let mean = self.burst_pool_total / self.burst_pool_timed;
            self.unseen_total += unseen_outer * mean;
            self.unseen_self += unseen_outer * self.burst_pool_self / self.burst_pool_timed;
            let price = outer_share * mean;
            self.burst_var += price * price * s.var;
            self.total_sys +=
                price * s.sys + unseen_outer * sample::COMPENSATION_SHARE * s.compensated;
        }
        d.nr() as f64 + s.unseen
    }

    /// Pools the mean call of a burst `w` (timed on every call), stalls left out.
    fn pool_burst(&mut self, w: &Scalars) {
        if w.timed == 0 {
            return;
        }
        let (mut total, mut timed, mut own) = (w.total as f64, w.timed, w.self_signed());
        let mut calls = w.nr();
        // The burst's longest call, when it set a new maximum and is over STALL_RATIO times
        // the others' mean, is a stall (the thread preempted inside it: a 4 ms preemption
        // among ~300 calls of ~1 us, a 14x mean that the rule below lets through, stood for
        // 200 unseen calls each and read as 35 s of a 2 s run). Counted once (by the caller),
        // left out of the mean that prices the unseen calls; the burst's self time keeps the
        // share of self the point's bursts had so far.
        if let Some(max) = stalled_call(w) {
            let kept = (total - max as f64).max(0.0);
            own = if self.burst_pool_total > 0.0 {
                kept * self.burst_pool_self / self.burst_pool_total
            } else {
                own * kept / total.max(1.0)
            };
            total = kept;
            timed -= 1;
            calls -= 1;
            self.burst_stalls += 1;
        }
        if timed == 0 {
            return;
        }
        let mean = total / timed as f64;
        // Judged against the median of the recent bursts' means (`Recent::stall`).
        if self.burst_means.stall(mean).is_some() {
            // The burst's calls took many times their usual mean: the thread was preempted
            // or faulted inside one of them. Counted once, not as the mean call of the calls
            // between bursts.
            self.burst_stalls += 1;
        } else {
            self.burst_pool_total = self.burst_pool_total * KEEP + total;
            self.burst_pool_self = self.burst_pool_self * KEEP + own;
            self.burst_pool_timed = self.burst_pool_timed * KEEP + timed as f64;
            self.burst_pool_outer = self.burst_pool_outer * KEEP + (timed + w.skipped) as f64;
            self.burst_pool_all = self.burst_pool_all * KEEP + calls as f64;
        }
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

    /// Calls estimated between bursts: (outermost, all); none while the count is a lower
    /// bound ([`Est::count_unknown`]: it holds the calls seen only).
    pub(crate) fn unseen(&self) -> (f64, f64) {
        if self.count_unknown() {
            return (0.0, 0.0);
        }
        (self.unseen_outer, self.unseen_all)
    }

    /// Student's t for the count windows' estimates (see `sample`).
    fn t(&self) -> f64 {
        sample::t95(self.hits.saturating_sub(1))
    }

    /// The 95% half-width of the calls estimated between bursts; `None` when no call was
    /// estimated (every call was counted: the count is exact) or when the count is a lower
    /// bound ([`Est::count_unknown`]).
    pub(crate) fn unseen_ci95(&self) -> Option<f64> {
        ((self.slots > 0 || self.open) && !self.count_unknown())
            .then(|| self.t() * self.count_var.sqrt() + self.count_sys)
    }

    /// Whether some of its calls went unseen in bursts (in slots, or since the last one while
    /// it is in bursts) and too few count windows saw a call (fewer than [`sample::MIN_HITS`])
    /// for an interval: the count is then a lower bound.
    pub(crate) fn count_unknown(&self) -> bool {
        (self.slots > 0 || self.open) && self.hits < sample::MIN_HITS
    }

    /// Closes the pending stratum. One with fewer than [`MIN_TIMED`] timed calls (the last,
    /// closed for a report) keeps its timed calls as they are and prices its untimed ones at
    /// the mean of every timed call of the point (`untimed`): priced at its own few, a
    /// point sampled 1 in 2^20 whose last stratum held 3 timed calls among 2.9 M, one of
    /// them slow, read 1.5e13 ticks (hours) in a 2 s run.
    pub(super) fn close(&mut self) {
        let d = std::mem::take(&mut self.pending);
        if d.skipped == 0 && d.timed == 0 {
            return;
        }
        if d.timed < MIN_TIMED {
            self.total += d.total as f64;
            self.self_ticks += d.self_signed();
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
        if let Some(max) = stalled_call(&d) {
            once = max as f64;
            scaled -= once;
            timed -= 1;
            calls -= 1;
        }
        let n = timed as f64;
        let calls = calls as f64;
        // Judged against the median of the point's recent strata's means, as a burst is
        // (`fold_burst`): a stall that is not a new maximum for the point (the rule above
        // sees only those) or under STALL_RATIO times the rest's mean (a guest's timer
        // interrupt of 30 us among 32 calls of 100 ns) raises the stratum's mean many times,
        // and scaled by the stratum's thousands of untimed calls it stood for seconds: base64's
        // `ChunkedEncoder::encode`, counted, read 2.7 us a call against 0.1 (its strata's
        // means spread from 21 to 4,251 ticks in one run, the median 250).
        if let Some(m) = self.strata_means.stall(scaled / n) {
            // Its timed calls once, as they are; its untimed ones at the recent median, with
            // the share of self the point had so far (the stall may be in a nested call).
            let share = if self.total > 0.0 {
                (self.self_ticks / self.total).clamp(0.0, 1.0)
            } else {
                (d.self_signed() / d.total.max(1) as f64).clamp(0.0, 1.0)
            };
            let untimed = d.skipped as f64 * m;
            self.total += d.total as f64 + untimed;
            self.self_ticks += d.self_signed() + untimed * share;
            self.var_factor += calls * calls * (1.0 - n / calls) / n;
            self.strata_stalls += 1;
            return;
        }
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
    pub(super) fn closed(&self) -> Est {
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
            unseen_total: (a.unseen_total - b.unseen_total).max(0.0),
            unseen_self: a.unseen_self - b.unseen_self,
            unseen_unpriced: (a.unseen_unpriced - b.unseen_unpriced).max(0.0),
            burst_var: (a.burst_var - b.burst_var).max(0.0),
            total_sys: (a.total_sys - b.total_sys).max(0.0),
            count_var: (a.count_var - b.count_var).max(0.0),
            count_sys: (a.count_sys - b.count_sys).max(0.0),
            slots: a.slots.saturating_sub(b.slots),
            hits: a.hits.saturating_sub(b.hits),
            burst_stalls: a.burst_stalls.saturating_sub(b.burst_stalls),
            counted_nested: (a.counted_nested - b.counted_nested).max(0.0),
            ..a
        }
    }

    /// `self + other` (closed), for a base that accumulates over resets.
    pub(super) fn plus(&self, other: &Est) -> Est {
        let (a, b) = (self.closed(), other.closed());
        Est {
            total: a.total + b.total,
            self_ticks: a.self_ticks + b.self_ticks,
            var_factor: a.var_factor + b.var_factor,
            untimed: a.untimed + b.untimed,
            estimated: a.estimated || b.estimated,
            unseen_outer: a.unseen_outer + b.unseen_outer,
            unseen_all: a.unseen_all + b.unseen_all,
            unseen_total: a.unseen_total + b.unseen_total,
            unseen_self: a.unseen_self + b.unseen_self,
            unseen_unpriced: a.unseen_unpriced + b.unseen_unpriced,
            burst_var: a.burst_var + b.burst_var,
            total_sys: a.total_sys + b.total_sys,
            count_var: a.count_var + b.count_var,
            count_sys: a.count_sys + b.count_sys,
            slots: a.slots + b.slots,
            hits: a.hits + b.hits,
            burst_stalls: a.burst_stalls + b.burst_stalls,
            open: a.open || b.open,
            counted_nested: a.counted_nested + b.counted_nested,
            ..a
        }
    }

    /// [`Est::resolve`] for a point's counters `c`: its untimed calls priced at its usual
    /// timed call, the longest left out when it is a stall ([`stalled_call`]). The stall
    /// stands in the total once, where its round put it; as the mean of the calls the
    /// estimate prices it stood for every one of them (a 12 ms preemption among 29,000
    /// timed calls of a 65 ns leaf, under emulation beside a loaded host, priced its 585,000
    /// calls seen only by the count windows at 170 ns, and the leaf's time took the whole
    /// of its parent's self time).
    pub(crate) fn resolve_counts(&self, c: &Counts, stddev: f64) -> (f64, f64, f64) {
        match usual_stall(c) {
            Some(max) => self.resolve(c.timed - 1, c.total - max, stddev),
            None => self.resolve(c.timed, c.total, stddev),
        }
    }

    /// The final figures, given the point's usual timed calls, their total and their
    /// standard deviation (ticks) over the same span: (total, self, 95% half-width of total).
    /// The mean of the first two prices the calls left untimed.
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
        let mut var = e.var_factor * stddev * stddev;
        if timed > 0 {
            // The mean's own uncertainty, for the calls priced at it.
            var += e.untimed * e.untimed * stddev * stddev / timed as f64;
        }
        let (mut total, mut own) = (e.total + extra, e.self_ticks + extra * self_share);
        let mut half = 1.96 * var.sqrt();
        // The calls estimated between bursts, unless the count is a lower bound (the totals
        // then hold the calls seen only, as the count does).
        if !e.count_unknown() && e.unseen_all > 0.0 {
            let unpriced = e.unseen_unpriced * mean;
            total += e.unseen_total + unpriced;
            own += e.unseen_self + unpriced * self_share;
            // The unpriced calls' share of the count's variance and correction, at the mean.
            let share = e.unseen_unpriced / e.unseen_outer.max(1.0);
            let (count_var, count_sys) = (e.count_var * share * share, e.count_sys * share);
            half += e.t() * (e.burst_var + mean * mean * count_var).sqrt()
                + e.total_sys
                + mean * count_sys;
        }
        (total, own, half)
    }
}
