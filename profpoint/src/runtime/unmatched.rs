//! Globs of the `PROFPOINT_*` variables that match no point (or tracepoint): one line each at
//! start-up, or, in a program that names points at run time (the `tracing` bridge's spans),
//! checked again at the exit report ([`warn_deferred`]) against the points named by then.

use crate::env;

/// The names a glob of a variable is matched against.
#[derive(Clone, Copy)]
pub(super) enum Names {
    Points,
    Tracepoints,
}

/// The globs of one variable that matched nothing: up to [`UNMATCHED_EACH`] get a line each
/// (with a name that looks like them); more get one line with their count and the first few.
pub(super) struct Unmatched {
    var: &'static str,
    names: Names,
    globs: Vec<String>,
    count: usize,
    /// Checked again at exit (see [`warn_deferred`]): the line says "by the end of the run".
    at_exit: bool,
}

/// Globs of points' variables that matched no point at start-up in a program that names points
/// at run time (the `tracing` bridge's spans): each is checked again against every point at
/// exit, and said then if it still matches none.
static DEFERRED: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());

/// The most globs kept for the check at exit (the variables' own length bounds them too).
const DEFERRED_MAX: usize = 1024;

/// Says the globs [`DEFERRED`] at start-up that still match no point, once, at the exit
/// report (a span's point claimed in the run is a point by then).
pub(crate) fn warn_deferred() {
    let deferred = std::mem::take(&mut *DEFERRED.lock().unwrap_or_else(|e| e.into_inner()));
    if deferred.is_empty() {
        return;
    }
    // The index start-up matches the globs with: a glob with a literal start looks only at
    // the names that share it.
    let index = profpoint_glob::NameIndex::new(crate::point::listed().map(|p| p.name()));
    let mut var: Option<Unmatched> = None;
    for (v, glob) in deferred {
        if var.as_ref().is_some_and(|u| u.var != v)
            && let Some(u) = var.take()
        {
            u.warn();
        }
        let u = var.get_or_insert_with(|| Unmatched {
            at_exit: true,
            ..Unmatched::new(v, Names::Points)
        });
        u.check(&glob, index.for_each_match(&glob, |_| {}));
    }
    if let Some(u) = var {
        u.warn();
    }
}

/// How many globs of one variable that match nothing get a line each.
const UNMATCHED_EACH: usize = 3;

impl Unmatched {
    pub(super) fn new(var: &'static str, names: Names) -> Unmatched {
        Unmatched {
            var,
            names,
            globs: Vec::new(),
            count: 0,
            at_exit: false,
        }
    }

    /// Counts `glob` when it `matched` nothing.
    pub(super) fn check(&mut self, glob: &str, matched: usize) {
        if matched > 0 {
            return;
        }
        self.count += 1;
        // All of them (bounded: a program with spare points checks them again at exit).
        if self.globs.len() < DEFERRED_MAX {
            self.globs.push(glob.to_string());
        }
    }

    pub(super) fn warn(self) {
        // Another copy of profpoint seen in this process may hold the points: see
        // `warn_unmatched`.
        if self.count == 0 || super::copies::all().len() > 1 {
            return;
        }
        // A program with points named at run time (the `tracing` bridge's spans) may name
        // them later: a glob that matches nothing yet is not a mistake there, and is checked
        // again at exit.
        if !self.at_exit && matches!(self.names, Names::Points) && crate::point::spare::any() {
            let mut d = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
            let room = DEFERRED_MAX.saturating_sub(d.len());
            d.extend(self.globs.into_iter().take(room).map(|g| (self.var, g)));
            return;
        }
        if self.count <= UNMATCHED_EACH {
            for g in &self.globs {
                warn_unmatched(self.var, g, self.names, self.at_exit);
            }
            return;
        }
        let (all, what) = names_of(self.names);
        let first: Vec<String> = self.globs[..UNMATCHED_EACH]
            .iter()
            .map(|g| env::shown(g, 32))
            .collect();
        crate::diag::warn_line!(
            "profpoint: {}: {} globs match{} none of the {} {what} in {}{}, the first {}",
            self.var,
            self.count,
            if self.at_exit { "ed" } else { "" },
            all.len(),
            env::shown(&super::copies::own_name(), 48),
            if self.at_exit {
                " by the end of the run"
            } else {
                ""
            },
            first.join(", ")
        );
    }
}

/// The names of this copy's points or tracepoints, and what they are called.
fn names_of(names: Names) -> (Vec<&'static str>, &'static str) {
    match names {
        Names::Points => (crate::point::listed().map(|p| p.name()).collect(), "points"),
        Names::Tracepoints => (
            crate::tracepoint::all().iter().map(|t| t.name()).collect(),
            "tracepoints",
        ),
    }
}

/// One warning line for a glob of `var` that matched none of this copy's points (or
/// tracepoints): how many there are, a name that looks like the glob, and a character the
/// glob may have meant as another syntax's wildcard.
///
/// Another copy of profpoint seen in this process (a library's, see `super::copies`) may hold
/// the points this glob names, and this copy cannot read that copy's names: then no warning.
/// A library loaded later (`dlopen`) is not seen at all; the line names this copy's object,
/// so a glob meant for such a library's points reads as what it is.
/// `at_exit`: the glob was checked again at exit (a program that names points at run time),
/// and the line says so.
fn warn_unmatched(var: &str, glob: &str, names: Names, at_exit: bool) {
    let (all, what) = names_of(names);
    let object = env::shown(&super::copies::own_name(), 48);
    let shown = env::shown(glob, 48);
    let mut line = match (all.len(), at_exit) {
        (0, false) => {
            format!("profpoint: {var}={shown}: matches nothing: there are no {what} in {object}")
        }
        (n, false) => {
            format!("profpoint: {var}={shown}: matches none of the {n} {what} in {object}")
        }
        (n, true) => format!(
            "profpoint: {var}={shown}: matched none of the {n} {what} in {object} by the end of \
             the run (points named at run time, such as spans, included)"
        ),
    };
    // The name sharing the longest start with the glob's literal part (the first on a tie).
    let literal = &glob[..glob.find(['*', '?']).unwrap_or(glob.len())];
    let common = |n: &str| {
        n.chars()
            .zip(literal.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    if let Some(like) = all.iter().rev().max_by_key(|n| common(n)) {
        line.push_str(&format!(" (names look like {})", env::shown(like, 48)));
    }
    if let Some(c) = crate::glob::foreign_syntax(glob) {
        line.push_str(&format!("; only * and ? are wildcards, {c} matches itself"));
    }
    crate::diag::warn_line!("{line}");
}
