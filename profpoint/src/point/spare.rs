//! Points created at run time: spare statics in the linker slice, named when claimed.
//!
//! # Concept
//! Every point is a `static` in [`POINTS`], so the set of points is fixed at link time. Code
//! that learns of what it times only at run time (the `tracing` bridge: one point per span
//! callsite) reserves a pool of spare points instead, with [`crate::__spare_points!`], and
//! [`claim`]s one per thing to time. A spare is of [`Kind::Spare`]: until claimed,
//! [`Point::kind`] reads [`Kind::Hidden`], so it is in no report, no glob, no budget round and
//! not in [`crate::points`]; claimed, it reads [`Kind::Sync`] and is a point like any other.
//!
//! # Mechanism
//! - The claim (name, file, line) is kept in a table indexed by the point's dense index,
//!   allocated at the first claim (the `Point` static does not grow: its size is documented).
//!   The hot path never reads it: a spare's calls run exactly the code of a static point's.
//! - The user's settings by glob (`PROFPOINT_DISABLE`, `PROFPOINT_ENABLE`, `PROFPOINT_SAMPLE`
//!   at start-up; [`crate::enable`], [`crate::disable`], [`crate::set_sampling`],
//!   [`crate::count_only`] later) are recorded in order ([`record`]), and a claimed point gets
//!   those whose glob matches its name, in that order: it ends as it would have had it existed
//!   at start-up. A later rule with the same glob replaces an earlier one (it overrides it on
//!   every point either matches), so the record stays as small as the set of globs used.
//! - One lock orders claims and settings: a setting applied while a point is claimed reaches it
//!   either through the points it walks or through the record, never neither.
//! - An exhausted pool says so once on the diagnostics writer; the claim returns `None`.

use super::{Kind, Point, all};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Who a claimed spare is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claim {
    pub(crate) name: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
}

/// What a recorded setting does to a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Rule {
    Enabled(bool),
    Sampling(u32),
    Counting,
}

impl Rule {
    pub(crate) fn apply(self, p: &Point) {
        match self {
            Rule::Enabled(on) => p.set_enabled(on),
            Rule::Sampling(n) => p.set_sampling(n),
            Rule::Counting => p.set_counting(),
        }
    }
}

/// The settings by glob, in order, and the spares not yet claimed.
struct State {
    /// The rules in the order they were set; a replaced one leaves a hole (`None`), and the
    /// holes are squeezed out once they outnumber the rules.
    rules: Vec<Option<(String, Rule)>>,
    /// Where each glob's rule is in `rules`: replacing one is a lookup, not a walk (10,000
    /// globs at start-up would otherwise compare 50 million pairs).
    at: BTreeMap<String, usize>,
    /// Dense indexes of the spares, found at the first claim; `next` is the first unclaimed.
    spares: Option<Vec<u32>>,
    next: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    rules: Vec::new(),
    at: BTreeMap::new(),
    spares: None,
    next: 0,
});

/// One claim per point of [`all`] (only spares' are ever set), allocated at the first claim.
static CLAIMS: OnceLock<Box<[OnceLock<Claim>]>> = OnceLock::new();

/// Whether the exhausted pool was said.
static SAID_EXHAUSTED: AtomicBool = AtomicBool::new(false);

fn state() -> MutexGuard<'static, State> {
    // A panic under the lock leaves a valid state (every step is a push or a store).
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The claim of the point at dense index `index`, if it is a claimed spare.
pub(crate) fn claim_of(index: u32) -> Option<Claim> {
    CLAIMS.get()?.get(index as usize)?.get().copied()
}

/// Whether the program has spare points (a pool is linked): a glob that matches no point at
/// start-up may then name points claimed later.
pub(crate) fn any() -> bool {
    all().iter().any(|p| p.kind == Kind::Spare)
}

/// Records a setting by glob for the points claimed later, then runs `apply` (which applies
/// it to the points there are), under the one lock (see the module docs).
pub(crate) fn record<R>(glob: &str, rule: Rule, apply: impl FnOnce() -> R) -> R {
    let mut s = state();
    s.set(glob, rule);
    apply()
}

impl State {
    /// Records `rule` for `glob` after every other, dropping the earlier rule of that glob.
    fn set(&mut self, glob: &str, rule: Rule) {
        if let Some(old) = self.at.remove(glob) {
            self.rules[old] = None;
        }
        self.at.insert(glob.to_string(), self.rules.len());
        self.rules.push(Some((glob.to_string(), rule)));
        if self.rules.len() > 2 * self.at.len() + 16 {
            self.rules.retain(Option::is_some);
            for (i, (g, _)) in self.rules.iter().flatten().enumerate() {
                self.at.insert(g.clone(), i);
            }
        }
    }

    /// The rules in the order they were set.
    fn rules(&self) -> impl Iterator<Item = &(String, Rule)> {
        self.rules.iter().flatten()
    }
}

/// Hands out a spare point named `name` (made printable: a control character becomes a
/// space), at `file:line`, with the user's recorded settings applied; counted only
/// ([`Point::set_counting`]) before those settings when `counted`. `None` when every spare is
/// taken (said once on stderr) or there is none.
pub(crate) fn claim(
    name: &'static str,
    file: &'static str,
    line: u32,
    counted: bool,
) -> Option<&'static Point> {
    let points = all();
    let mut s = state();
    if s.spares.is_none() {
        s.spares = Some(
            (0..points.len() as u32)
                .filter(|&i| points[i as usize].kind == Kind::Spare)
                .collect(),
        );
    }
    let spares = s.spares.as_deref().unwrap_or(&[]);
    let Some(&i) = spares.get(s.next) else {
        if !spares.is_empty() && !SAID_EXHAUSTED.swap(true, Ordering::Relaxed) {
            crate::diag::warn_line!(
                "profpoint: all {} points for run-time names are taken; `{}` and later ones \
                 are not profiled",
                spares.len(),
                crate::env::shown(name, 64)
            );
        }
        return None;
    };
    s.next += 1;
    let point = &points[i as usize];
    let name = printable(name);
    // Its settings before its claim: once claimed it is in reports and budget rounds, and
    // none of them may see it in a state the user's settings do not give it.
    if counted {
        point.set_counting();
    }
    for (glob, rule) in s.rules() {
        if crate::glob::matches(glob, name) {
            rule.apply(point);
        }
    }
    let claims = CLAIMS.get_or_init(|| (0..points.len()).map(|_| OnceLock::new()).collect());
    // Set once: the lock hands each spare out once.
    let _ = claims[i as usize].set(Claim { name, file, line });
    Some(point)
}

/// `name` with each control character replaced by a space (a report row is one line); leaked
/// only when it had one.
fn printable(name: &'static str) -> &'static str {
    if !name.chars().any(char::is_control) {
        return name;
    }
    let clean: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    Box::leak(clean.into_boxed_str())
}

/// Reserves `$n` spare points (1, 4, 16, 64, 256 or 1024) in the linker slice, for
/// [`crate::__private::claim_point`]. Each is 104 bytes of static data, and every shard holds
/// a pointer for each; unclaimed, they are in no report.
#[cfg(not(feature = "off"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __spare_points {
    (1) => {
        const _: () = {
            #[$crate::__private::linkme::distributed_slice($crate::__private::POINTS)]
            #[linkme(crate = $crate::__private::linkme)]
            static SPARE: $crate::__private::Point = $crate::__private::Point::spare();
        };
    };
    (4) => {
        $crate::__spare_points!(1);
        $crate::__spare_points!(1);
        $crate::__spare_points!(1);
        $crate::__spare_points!(1);
    };
    (16) => {
        $crate::__spare_points!(4);
        $crate::__spare_points!(4);
        $crate::__spare_points!(4);
        $crate::__spare_points!(4);
    };
    (64) => {
        $crate::__spare_points!(16);
        $crate::__spare_points!(16);
        $crate::__spare_points!(16);
        $crate::__spare_points!(16);
    };
    (256) => {
        $crate::__spare_points!(64);
        $crate::__spare_points!(64);
        $crate::__spare_points!(64);
        $crate::__spare_points!(64);
    };
    (1024) => {
        $crate::__spare_points!(256);
        $crate::__spare_points!(256);
        $crate::__spare_points!(256);
        $crate::__spare_points!(256);
    };
}

/// The `off` feature: no point exists, so no spare either.
#[cfg(feature = "off")]
#[doc(hidden)]
#[macro_export]
macro_rules! __spare_points {
    ($n:tt) => {};
}

#[cfg(test)]
mod tests {
    use super::{BTreeMap, Rule, State};

    fn globs(s: &State) -> Vec<(&str, String)> {
        s.rules()
            .map(|(g, r)| (g.as_str(), format!("{r:?}")))
            .collect()
    }

    #[test]
    fn a_glob_set_again_moves_to_the_end_with_its_new_rule_and_holes_are_squeezed_out() {
        let mut s = State {
            rules: Vec::new(),
            at: BTreeMap::new(),
            spares: None,
            next: 0,
        };
        s.set("a::*", Rule::Enabled(false));
        s.set("b", Rule::Sampling(4));
        s.set("a::*", Rule::Enabled(true));
        assert_eq!(
            globs(&s),
            [
                ("b", "Sampling(4)".into()),
                ("a::*", "Enabled(true)".into())
            ]
        );
        // A program toggling one glob forever keeps a bounded record.
        for i in 0..10_000 {
            s.set("a::*", Rule::Enabled(i % 2 == 0));
            assert!(s.rules.len() <= 2 * 2 + 17, "{}", s.rules.len());
        }
        assert_eq!(
            globs(&s),
            [
                ("b", "Sampling(4)".into()),
                ("a::*", "Enabled(false)".into())
            ]
        );
        // Each glob's place is where its rule is.
        for (g, &i) in &s.at {
            assert_eq!(s.rules[i].as_ref().map(|r| r.0.as_str()), Some(g.as_str()));
        }
    }
}
