//! After the fact: windows credited to the functions they began and ended in (or, for the
//! baseline, each long period to the function where it ended), summed and ranked.

use super::calibration::in_calibration_loop;
use super::events::{Event, MAX_MEMBERS};
use super::window::{PmuProfile, Window, overlong};
use super::{Method, PmuReport, PmuRow};
use crate::symbolize::Symbolizer;
use std::collections::HashMap;

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

    /// What uniform sampling at the long period would report from the same run: each long period's
    /// deltas credited to the function where it ended (the alternating-period patch's baseline,
    /// which smears every function towards the average). Same symbolisation as
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
        let per_fn = per_function(credited, events.len());
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
                let mut row = PmuRow::default();
                row.symbol = symbol;
                row.windows = n;
                row.cpi = ins.filter(|i| *i > 0.0).map(|i| v[0] / i);
                row.bm_per_ki = per_ki(get(Event::BranchMisses));
                row.cm_per_ki = per_ki(get(Event::CacheMisses));
                row.cm_percent = match (get(Event::CacheMisses), get(Event::CacheReferences)) {
                    (Some(m), Some(r)) if r > 0.0 => Some(100.0 * m / r),
                    _ => None,
                };
                row.clock_percent = pct(v[0], tc);
                row.instructions_percent = ins.map(|i| pct(i, ti));
                row.branch_misses_percent = get(Event::BranchMisses).map(|b| pct(b, tb));
                row.page_faults_per_ms = match (get(Event::PageFaults), get(Event::TaskClock)) {
                    (Some(f), Some(ns)) if ns > 0.0 => Some(1e6 * f / ns),
                    _ => None,
                };
                row.l1d_reads_percent = get(Event::L1dReads).map(|x| pct(x, tla));
                row.l1d_misses_percent = get(Event::L1dReadMisses).map(|x| pct(x, tlm));
                row
            })
            .collect();
        rows.sort_by(|a, b| {
            b.clock_percent
                .total_cmp(&a.clock_percent)
                .then(a.symbol.cmp(&b.symbol))
        });
        rows.truncate(top);
        let mut report = PmuReport::new(method);
        report.windows = windows;
        report.discarded = discarded;
        report.overlong = overlong;
        report.long_period = self.config.long_period;
        report.window = self.config.window;
        report.calibration = self.calibration;
        report.events = events;
        report.warnings = self.warnings.clone();
        report.rows = rows;
        report
    }
}

/// Per function: the windows credited to it and the sums of their deltas (the first
/// `nevents` counters).
fn per_function(
    credited: Vec<(String, [f64; MAX_MEMBERS + 1])>,
    nevents: usize,
) -> HashMap<String, (u64, [f64; MAX_MEMBERS + 1])> {
    let mut per_fn: HashMap<String, (u64, [f64; MAX_MEMBERS + 1])> = HashMap::new();
    for (f, d) in credited {
        let e = per_fn.entry(f).or_insert((0, [0.0; MAX_MEMBERS + 1]));
        e.0 += 1;
        for (sum, x) in e.1.iter_mut().zip(d).take(nevents) {
            *sum += x;
        }
    }
    per_fn
}
