//! The heatmap sampler's section of a report: its ranked rows ([`Report`], [`Row`]), its
//! sampled call stacks ([`StackReport`]) and the per-function hardware metrics ([`pmu`]).
//! Data, and the sampler's own table ([`Report::write_table`]): the sampler (the
//! `profpoint-heatmap` crate) fills these types, and the report model and its renderers read
//! them without linking the sampler.
//!
//! As in the rest of the model, the structs are `#[non_exhaustive]`: build one from `Default`
//! (a [`pmu::PmuReport`] from [`pmu::PmuReport::new`]) and assign its fields. So are the
//! enums [`pmu::Event`] and [`pmu::Method`], which will gain variants: a `match` on them needs
//! a wildcard arm. [`By`] is not: rows are formed by function or by bucket, and a match on
//! it may name both without a wildcard.

use serde::{Deserialize, Serialize};
use std::io::Write;

pub mod pmu;
mod stacks;

pub use stacks::{Frame, SampledStack, StackCut, StackReport};

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

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
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

/// A ranked, symbolised view of a sampler's profile (`profpoint_heatmap::Profile::report`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
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
