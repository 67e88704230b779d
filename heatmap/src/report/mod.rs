//! The readprofile-style report: the top N functions (or buckets) by samples.
//!
//! [`Profile::report`] symbolises the profile's non-zero buckets (`symbolize.rs`), aggregates
//! them by function (default) or keeps raw buckets, drops rows whose function matches an
//! exclusion glob (the seed's "rule out `cpu_idle`"), and ranks them. Percentages are of all
//! samples less the excluded ones, "other" included, so the total row always reads 100.00 and
//! a large "other" is visible rather than silently renormalised away.
//!
//! [`Report::write_table`] prints the seed's table (Address, Function, NR, %, plus the object
//! for shared libraries) with a header naming the source and the requested and achieved rates;
//! [`Report::to_json`] gives the same content for tools.

use std::collections::HashMap;
use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::config::Mode;
use crate::profile::Profile;
use crate::stacks::StackReport;
use crate::symbolize::Symbolizer;
use profpoint_glob::glob_matches as glob_match;

/// How rows are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// One row per function (all its buckets summed), at the function's address.
    #[default]
    Function,
    /// One row per bucket, at the bucket's address, named by the function holding it.
    Bucket,
}

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

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Function address (by function) or bucket address (by bucket).
    pub address: u64,
    /// Demangled function name, `[unknown]` (no symbol) or `[vdso]` (an address of the vDSO
    /// none of its symbols covers, or any of them when the vDSO that ran is not this one's).
    pub function: String,
    /// Shared object file name; `None` for the main executable.
    pub library: Option<String>,
    /// Samples.
    pub nr: u64,
    /// Share of the report's total, in percent.
    pub percent: f64,
    /// `file:line` of `address`, where debug information exists (for a function row, its
    /// first line; for a bucket row, the line of the bucket's first instruction).
    pub location: Option<String>,
    /// Bucket rows: the functions inlined at `address`, outermost first (empty otherwise).
    pub inlined: Vec<String>,
}

/// A ranked, symbolised view of a [`Profile`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `perf task-clock`, `setitimer` or `tgkill`.
    pub source: String,
    /// `cpu` or `wall`.
    pub mode: String,
    /// Rows formed by function or by bucket.
    pub by: By,
    /// Bucket size in bytes.
    pub bucket_size: u64,
    /// The rate asked for.
    pub requested_hz: u32,
    /// Signal samples per user-CPU second (`None` if no CPU time was measured).
    pub achieved_hz: Option<f64>,
    /// Signal samples per CPU second, user and system.
    pub achieved_hz_per_cpu_second: Option<f64>,
    /// User-space CPU seconds of the process while sampling.
    pub user_cpu_seconds: f64,
    /// System CPU seconds of the process while sampling.
    pub sys_cpu_seconds: f64,
    /// Wall seconds of the run.
    pub wall_seconds: f64,
    /// Samples counted (all of them, "other" and excluded included).
    pub total_samples: u64,
    /// Samples outside every executable segment known at start.
    pub other: u64,
    /// Samples of blocked threads read from `/proc` (wall mode).
    pub proc_samples: u64,
    /// Samples left out by the exclusion globs.
    pub excluded: u64,
    /// The 100% of the percentages: `total_samples - excluded`.
    pub base: u64,
    /// Warnings from sampling and symbolisation.
    pub warnings: Vec<String>,
    /// The top rows, most samples first.
    pub rows: Vec<Row>,
    /// The sampled call stacks, when the sampler ran with stacks (absent from reports of
    /// earlier versions).
    #[serde(default)]
    pub stacks: Option<StackReport>,
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
                (
                    object,
                    Row {
                        address: if key_addr == u64::MAX || credited {
                            addr
                        } else {
                            key_addr
                        },
                        function: r.function,
                        library: r.library,
                        nr: 0,
                        percent: 0.0,
                        location: None,
                        inlined: Vec::new(),
                    },
                )
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
            .map(|raw| crate::stacks::fold::report(raw, self, &mut sym, stripped.clone()));
        let mut warnings = self.warnings.clone();
        warnings.extend(sym.warnings);
        warnings.extend(stripped);
        Report {
            source: self.source.name().to_owned(),
            mode: match self.mode {
                Mode::Cpu => "cpu",
                Mode::Wall => "wall",
            }
            .to_owned(),
            by: opts.by,
            bucket_size: size,
            requested_hz: self.requested_hz,
            achieved_hz: self.achieved_hz(),
            achieved_hz_per_cpu_second: self.achieved_hz_per_cpu_second(),
            user_cpu_seconds: self.user_cpu_seconds(),
            sys_cpu_seconds: self.sys_cpu_seconds(),
            wall_seconds: self.wall_seconds(),
            total_samples: total,
            other: self.other,
            proc_samples: self.proc_samples,
            excluded,
            base,
            warnings,
            rows,
            stacks,
        }
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

impl Report {
    /// Writes the table (see the module docs).
    pub fn write_table(&self, w: &mut dyn Write) -> std::io::Result<()> {
        const MAX_FN: usize = 60;
        let fn_width = self
            .rows
            .iter()
            .map(|r| r.function.chars().count())
            .max()
            .unwrap_or(8)
            .clamp(20, MAX_FN);
        let obj_width = self
            .rows
            .iter()
            .map(|r| r.library.as_deref().map_or(0, str::len))
            .max()
            .unwrap_or(0)
            .max(6);
        let achieved = self
            .achieved_hz
            .map_or_else(|| "n/a".to_owned(), |a| format!("{a:.0}"));
        writeln!(
            w,
            "Heatmap (top #{} by {}, {} mode, {}-byte buckets): {} samples, source {}, {} Hz requested, {} Hz achieved ({} per user+sys CPU second), {:.2} s user CPU, {:.2} s sys CPU, {:.2} s wall",
            self.rows.len(),
            match self.by {
                By::Function => "function",
                By::Bucket => "bucket",
            },
            self.mode,
            self.bucket_size,
            self.total_samples,
            self.source,
            self.requested_hz,
            achieved,
            self.achieved_hz_per_cpu_second
                .map_or_else(|| "n/a".to_owned(), |a| format!("{a:.0}")),
            self.user_cpu_seconds,
            self.sys_cpu_seconds,
            self.wall_seconds,
        )?;
        let rule = format!(
            "{:-<16}  {:-<fw$}  {:-<10}  {:-<9}  {:-<ow$}  {:-<8}",
            "",
            "",
            "",
            "",
            "",
            "",
            fw = fn_width,
            ow = obj_width
        );
        writeln!(
            w,
            "{:>16}  {:<fw$}  {:>10}  {:>9}  {:<ow$}  Location",
            "Address",
            "Function",
            "NR",
            "%",
            "Object",
            fw = fn_width,
            ow = obj_width
        )?;
        writeln!(w, "{rule}")?;
        for r in &self.rows {
            let name = truncate(&r.function, fn_width);
            let mut location = r.location.as_deref().map(short_path).unwrap_or_default();
            if let Some(inner) = r.inlined.last() {
                location.push_str(&format!(" (inlined {inner})"));
            }
            let line = format!(
                "{:016x}  {:<fw$}  {:>10}  {:>9.2}  {:<ow$}  {}",
                r.address,
                name,
                r.nr,
                r.percent,
                r.library.as_deref().unwrap_or(""),
                location,
                fw = fn_width,
                ow = obj_width
            );
            writeln!(w, "{}", line.trim_end())?;
        }
        writeln!(w, "{rule}")?;
        writeln!(
            w,
            "{:>16}  {:<fw$}  {:>10}  {:>9.2}",
            "",
            "",
            self.base,
            if self.base == 0 { 0.0 } else { 100.0 },
            fw = fn_width
        )?;
        if self.other > 0 {
            writeln!(
                w,
                "other (outside every executable segment): {} samples ({:.2}%)",
                self.other,
                if self.base == 0 {
                    0.0
                } else {
                    self.other as f64 * 100.0 / self.base as f64
                }
            )?;
        }
        if self.excluded > 0 {
            writeln!(
                w,
                "excluded by the exclusion globs: {} samples (not in the total)",
                self.excluded
            )?;
        }
        if self.proc_samples > 0 {
            writeln!(
                w,
                "blocked-thread samples read from /proc: {}",
                self.proc_samples
            )?;
        }
        for warning in &self.warnings {
            writeln!(w, "warning: {warning}")?;
        }
        Ok(())
    }

    /// The report as pretty-printed JSON (the fields of [`Report`]).
    pub fn to_json(&self) -> String {
        profpoint_json::to_string_pretty(self)
            .expect("a Report serialises: plain data, no maps with non-string keys")
    }
}

/// The last three components of a source path (`src/lib.rs:12` rather than a registry path).
fn short_path(location: &str) -> String {
    let parts: Vec<&str> = location.rsplitn(4, '/').collect();
    if parts.len() < 4 {
        location.to_owned()
    } else {
        format!("…/{}/{}/{}", parts[2], parts[1], parts[0])
    }
}

/// Cuts `s` to `width` characters, marking the cut with `…`.
fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests;
