//! The readprofile-style report: the top N functions (or buckets) by samples.
//!
//! [`Profile::report`] symbolises the profile's non-zero buckets (`symbolize.rs`), aggregates them
//! by function (default) or keeps raw buckets, drops rows whose function matches an exclusion glob
//! (the Lego heatmap's "rule out `cpu_idle`"), and ranks them. Percentages are of all samples less
//! the excluded ones, "other" included, so the total row always reads 100.00 and a large "other" is
//! visible rather than silently renormalised away.
//!
//! [`Report::write_table`] prints the Lego heatmap's table (Address, Function, NR, %, plus the
//! object for shared libraries) with a header naming the source and the requested and achieved
//! rates; [`Report::to_json`] gives the same content for tools. [`Report`], [`Row`] and [`By`] are
//! the report model's (`profpoint_report::heatmap`), re-exported: this file fills them.

use std::collections::HashMap;

use crate::config::Mode;
use crate::profile::Profile;
use crate::symbolize::Symbolizer;
use profpoint_glob::glob_matches as glob_match;

pub use profpoint_report::heatmap::{By, Report, Row};

/// What to put in a [`Report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// Number of rows (default 20).
    pub top: usize,
    /// By function (default) or by bucket.
    pub by: By,
    /// Globs (`*` any run of characters, `?` one character) matched against whole demangled
    /// function names; matching rows are left out of the rows and of the total.
    pub exclude: Vec<String>,
    /// Globs of *wrapper* functions (by-function rows only): a sample in a matching function
    /// is credited to the outermost closure inlined into it that does not match, from DWARF
    /// inline frames, named after the closure's enclosing function. Libraries that compile
    /// their users' code into generic wrappers (profpoint's `Point::__call_on`) name theirs
    /// here. Samples in the wrapper's own code, or without debug information, stay with it.
    pub transparent: Vec<String>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            top: 20,
            by: By::Function,
            exclude: Vec::new(),
            transparent: Vec::new(),
        }
    }
}

/// When `function` (the symbol at `addr`) matches a `transparent` glob: the function the wrapper
/// runs there. Wrappers run their callers' code as closures: this is the outermost inlined
/// closure frame outside the wrappers, named after its enclosing function. `None` for code that
/// is the wrapper's own (no such frame) and for functions that are not wrappers.
pub(crate) fn through_wrappers(
    sym: &mut Symbolizer,
    object: usize,
    addr: u64,
    function: &str,
    transparent: &[String],
) -> Option<String> {
    if !transparent.iter().any(|g| glob_match(g, function)) {
        return None;
    }
    let mut name = sym
        .source_info(object, addr)
        .inlined
        .into_iter()
        .find(|f| f.ends_with("::{{closure}}") && !transparent.iter().any(|g| glob_match(g, f)))?;
    while let Some(head) = name.strip_suffix("::{{closure}}") {
        name.truncate(head.len());
    }
    Some(name)
}

impl Profile {
    /// Symbolises and ranks this profile. See the module docs.
    pub fn report(&self, opts: &ReportOptions) -> Report {
        let mut sym = Symbolizer::new(&self.objects);
        let size = self.bucket_size();
        // Key: (object, address) -> row under construction.
        let mut rows: HashMap<(usize, u64), (usize, Row)> = HashMap::new();
        let mut excluded = 0u64;
        // Per object: (samples, samples with no symbol), for the stripped-file warning.
        let mut per_object: HashMap<usize, (u64, u64)> = HashMap::new();
        for (si, addr, n) in self.buckets() {
            let object = self.segments[si].object;
            let mut r = sym.lookup_bucket(object, addr, size);
            let tally = per_object.entry(object).or_default();
            tally.0 += n;
            if r.function == "[unknown]" {
                tally.1 += n;
            }
            let mut credited = false;
            if opts.by == By::Function
                && let Some(name) =
                    through_wrappers(&mut sym, object, addr, &r.function, &opts.transparent)
            {
                r.function = name;
                credited = true;
            }
            if opts.exclude.iter().any(|g| glob_match(g, &r.function)) {
                excluded += n;
                continue;
            }
            let key_addr = match opts.by {
                // All [unknown] buckets of one object share a row, at the lowest address, and
                // so do the vDSO's buckets no symbol covers and all buckets credited through a
                // wrapper to one function.
                By::Function if r.function == "[unknown]" || r.function == "[vdso]" => u64::MAX,
                By::Function if credited => name_key(&r.function),
                By::Function => r.start,
                By::Bucket => addr,
            };
            let (_, row) = rows.entry((object, key_addr)).or_insert_with(|| {
                let mut row = Row::default();
                row.address = if key_addr == u64::MAX || credited {
                    addr
                } else {
                    key_addr
                };
                row.function = r.function;
                row.library = r.library;
                (object, row)
            });
            row.nr += n;
            if key_addr == u64::MAX || credited {
                row.address = row.address.min(addr);
            }
        }
        let total = self.total_samples();
        let base = total - excluded;
        let mut rows: Vec<(usize, Row)> = rows.into_values().collect();
        rows.sort_by(|(_, a), (_, b)| b.nr.cmp(&a.nr).then(a.address.cmp(&b.address)));
        rows.truncate(opts.top);
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|(object, mut r)| {
                r.percent = if base == 0 {
                    0.0
                } else {
                    r.nr as f64 * 100.0 / base as f64
                };
                if r.function != "[unknown]" && r.function != "[vdso]" {
                    let info = sym.source_info(object, r.address);
                    r.location = info.location;
                    if opts.by == By::Bucket {
                        r.inlined = info.inlined;
                    }
                }
                r
            })
            .collect();
        let stripped = stripped_warnings(self, &sym, &per_object, total);
        let stacks = self
            .stacks
            .as_ref()
            .map(|raw| fold::report(raw, self, &mut sym, stripped.clone()));
        let mut warnings = self.warnings.clone();
        warnings.extend(sym.warnings);
        warnings.extend(stripped);
        let mut report = Report::default();
        report.source = self.source.name().to_owned();
        report.mode = match self.mode {
            Mode::Cpu => "cpu",
            Mode::Wall => "wall",
        }
        .to_owned();
        report.by = opts.by;
        report.bucket_size = size;
        report.requested_hz = self.requested_hz;
        report.achieved_hz = self.achieved_hz();
        report.achieved_hz_per_cpu_second = self.achieved_hz_per_cpu_second();
        report.user_cpu_seconds = self.user_cpu_seconds();
        report.sys_cpu_seconds = self.sys_cpu_seconds();
        report.wall_seconds = self.wall_seconds();
        report.total_samples = total;
        report.other = self.other;
        report.proc_samples = self.proc_samples;
        report.excluded = excluded;
        report.base = base;
        report.warnings = warnings;
        report.rows = rows;
        report.stacks = stacks;
        report
    }
}

/// One line per stripped file holding samples without a symbol: the main executable always,
/// a library when such samples are at least 1% of the run (system libraries ship stripped).
fn stripped_warnings(
    p: &Profile,
    sym: &Symbolizer,
    per_object: &HashMap<usize, (u64, u64)>,
    total: u64,
) -> Vec<String> {
    let mut objects: Vec<_> = per_object
        .iter()
        .filter(|&(&o, &(_, unknown))| {
            unknown > 0
                && sym.stripped(o)
                && (p.objects[o].kind == crate::buckets::ObjectKind::Main || unknown * 100 >= total)
        })
        .collect();
    objects.sort_by_key(|&(&o, _)| o);
    objects
        .into_iter()
        .map(|(&o, &(samples, unknown))| {
            format!(
                "{:.0}% of samples in {} have no symbol: it is stripped (Cargo `strip = true` or \
                 `strip`); build with `strip = false` or keep a copy with symbols",
                unknown as f64 * 100.0 / samples.max(1) as f64,
                p.objects[o].path
            )
        })
        .collect()
}

/// A row key for a function known by name only (credited through a wrapper): FNV-1a of the
/// name, with the top bit set so it never equals a real code address (user space is below
/// 2^47 on x86_64 and aarch64).
fn name_key(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h | (1 << 63)) & !1
}

mod fold;
#[cfg(test)]
mod tests;
