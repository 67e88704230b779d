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
mod tests {
    use super::*;
    use crate::buckets::{ObjectFile, ObjectKind};
    use crate::profile::{Segment, SourceUsed};

    /// A profile over this test binary: two known functions with known counts.
    fn synthetic() -> (Profile, u64, u64) {
        let (objects, segments) = crate::buckets::discover();
        let f1 = crate::symbolize::demangle as fn(&str) -> String as usize as u64;
        let f2 = truncate as fn(&str, usize) -> String as usize as u64;
        let seg_of = |pc: u64| {
            segments
                .iter()
                .position(|s| s.start <= pc && pc < s.end)
                .unwrap()
        };
        // One bucket per function start: functions are 16-byte aligned on x86_64, only 4 on
        // aarch64 (where a 16-byte bucket can begin in the function before).
        let shift = if cfg!(target_arch = "aarch64") { 2 } else { 4 };
        let step = 1u64 << shift;
        let mut segs: Vec<Segment> = segments
            .iter()
            .map(|s| Segment {
                object: s.object,
                start: s.start,
                end: s.end,
                counts: vec![],
            })
            .collect();
        let idx = |s: &Segment, pc: u64| ((pc - (s.start & !(step - 1))) >> shift) as u32;
        for (pc, n) in [(f1, 60u64), (f1 + step, 10), (f2, 25)] {
            let si = seg_of(pc);
            let i = idx(&segs[si], pc);
            segs[si].counts.push((i, n));
            segs[si].counts.sort();
        }
        let p = Profile {
            mode: Mode::Cpu,
            source: SourceUsed::PerfTaskClock,
            requested_hz: 1000,
            shift,
            objects: objects.into_iter().collect::<Vec<ObjectFile>>(),
            segments: segs,
            other: 5,
            proc_samples: 0,
            user_cpu_ns: 100_000_000,
            sys_cpu_ns: 0,
            watcher_cpu_ns: 0,
            wall_ns: 100_000_000,
            threads: 1,
            unarmed_cpu_ns: 0,
            warnings: vec![],
            stacks: None,
        };
        (p, f1, f2)
    }

    #[test]
    fn by_function_sums_buckets_and_percentages_add_up() {
        let (p, f1, f2) = synthetic();
        assert_eq!(p.objects[p.segments[0].object].kind, ObjectKind::Main);
        let r = p.report(&ReportOptions::default());
        assert_eq!(r.total_samples, 100);
        assert_eq!(r.base, 100);
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].function, "profpoint_heatmap::symbolize::demangle");
        assert_eq!((r.rows[0].address, r.rows[0].nr), (f1, 70));
        assert_eq!(r.rows[1].function, "profpoint_heatmap::report::truncate");
        assert_eq!((r.rows[1].address, r.rows[1].nr), (f2, 25));
        assert!((r.rows[0].percent - 70.0).abs() < 1e-9);
        assert_eq!(r.achieved_hz, Some(1000.0));

        let r = p.report(&ReportOptions {
            by: By::Bucket,
            ..ReportOptions::default()
        });
        let got: Vec<(u64, u64)> = r.rows.iter().map(|r| (r.address, r.nr)).collect();
        let step = 1u64 << p.shift;
        assert_eq!(got, vec![(f1, 60), (f2, 25), (f1 + step, 10)]);

        let r = p.report(&ReportOptions {
            top: 1,
            by: By::Function,
            exclude: vec!["profpoint_heatmap::symbolize::*".to_owned()],
            ..ReportOptions::default()
        });
        assert_eq!(r.excluded, 70);
        assert_eq!(r.base, 30);
        assert_eq!(r.rows.len(), 1);
        assert_eq!(r.rows[0].nr, 25);
        assert!((r.rows[0].percent - 25.0 * 100.0 / 30.0).abs() < 1e-9);
    }

    /// A profile of `objects` whose segments hold one sample in each of the given buckets
    /// (`shift` 4).
    fn profile_of(objects: Vec<ObjectFile>, segments: Vec<Segment>) -> Profile {
        Profile {
            mode: Mode::Cpu,
            source: SourceUsed::PerfTaskClock,
            requested_hz: 1000,
            shift: 4,
            objects,
            segments,
            other: 0,
            proc_samples: 0,
            user_cpu_ns: 100_000_000,
            sys_cpu_ns: 0,
            watcher_cpu_ns: 0,
            wall_ns: 100_000_000,
            threads: 1,
            unarmed_cpu_ns: 0,
            warnings: vec![],
            stacks: None,
        }
    }

    /// A vDSO that is not this process's (another build id: a dump read on another kernel):
    /// no names, but all its buckets in one `[vdso]` row, at its lowest address.
    #[test]
    fn a_foreign_vdso_is_one_row() {
        let base = 0x7fff_0000_0000u64;
        let p = profile_of(
            vec![ObjectFile {
                path: "[vdso]".to_owned(),
                bias: base,
                build_id: vec![0xde, 0xad, 0xbe, 0xef],
                kind: ObjectKind::Vdso,
            }],
            vec![Segment {
                object: 0,
                start: base,
                end: base + 0x2000,
                counts: vec![(0x40, 60), (0x41, 3), (0x42, 2), (0x90, 5)],
            }],
        );
        let r = p.report(&ReportOptions::default());
        assert_eq!(r.rows.len(), 1, "{:?}", r.rows);
        let row = &r.rows[0];
        assert_eq!(row.function, "[vdso]");
        assert_eq!(row.library.as_deref(), Some("[vdso]"));
        assert_eq!((row.address, row.nr), (base + 0x400, 70));
        assert!((row.percent - 100.0).abs() < 1e-9);
        // By bucket, they stay apart.
        let r = p.report(&ReportOptions {
            by: By::Bucket,
            ..ReportOptions::default()
        });
        assert_eq!(r.rows.len(), 4);
    }

    /// This process's vDSO: a sample in every bucket of it gives one row per vDSO function,
    /// named by its symbol (`__vdso_clock_gettime` or the like), and at most one `[vdso]` row
    /// for the bytes no symbol covers (headers, tables).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_vdso_by_function_is_one_row_per_symbol() {
        let (objects, ranges) = crate::buckets::discover();
        let Some(vdso) = objects.iter().position(|o| o.kind == ObjectKind::Vdso) else {
            println!("SKIPPED the_vdso_by_function_is_one_row_per_symbol: no vDSO here");
            return;
        };
        if crate::symbolize::running_vdso().is_none() {
            println!(
                "SKIPPED the_vdso_by_function_is_one_row_per_symbol: the vDSO is not listed in \
                 /proc/self/maps (an emulator's?), so its image cannot be read"
            );
            return;
        }
        let segments: Vec<Segment> = ranges
            .iter()
            .filter(|g| g.object == vdso)
            .map(|g| {
                let n = (g.end - (g.start & !15)).div_ceil(16) as u32;
                Segment {
                    object: g.object,
                    start: g.start,
                    end: g.end,
                    counts: (0..n).map(|i| (i, 1)).collect(),
                }
            })
            .collect();
        let buckets: u64 = segments.iter().map(|g| g.counts.len() as u64).sum();
        let p = profile_of(objects, segments);
        let r = p.report(&ReportOptions {
            top: usize::MAX,
            ..ReportOptions::default()
        });
        let names: Vec<&str> = r.rows.iter().map(|r| r.function.as_str()).collect();
        println!("vDSO rows ({buckets} buckets): {names:?}");
        assert_eq!(r.rows.iter().map(|r| r.nr).sum::<u64>(), buckets);
        assert!(
            r.rows
                .iter()
                .all(|r| r.library.as_deref() == Some("[vdso]"))
        );
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "a function in two rows: {names:?}"
        );
        let clock = r
            .rows
            .iter()
            .find(|r| r.function.contains("clock_gettime"))
            .unwrap_or_else(|| panic!("no clock_gettime among the vDSO's rows: {names:?}"));
        // A function of more than one bucket: its buckets were summed.
        assert!(clock.nr > 1, "{clock:?}");
        assert!(names.len() > 1, "{names:?}");
    }

    #[test]
    fn table_and_json_carry_the_same_content() {
        let (p, f1, _) = synthetic();
        let r = p.report(&ReportOptions::default());
        let mut out = Vec::new();
        r.write_table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("source perf task-clock, 1000 Hz requested, 1000 Hz achieved"),
            "{text}"
        );
        let line = text
            .lines()
            .find(|l| l.contains("profpoint_heatmap::symbolize::demangle"))
            .unwrap();
        assert!(line.starts_with(&format!("{f1:016x}")), "{line}");
        assert!(line.contains("70") && line.contains("70.00"), "{line}");
        assert!(text.contains("other (outside every executable segment): 5 samples (5.00%)"));
        // Byte for byte what serde_json writes (it wrote this report before profpoint-json).
        assert_eq!(r.to_json(), serde_json::to_string_pretty(&r).unwrap());
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["total_samples"], 100);
        assert_eq!(v["other"], 5);
        assert_eq!(v["source"], "perf task-clock");
        assert_eq!(
            v["rows"][0]["function"],
            "profpoint_heatmap::symbolize::demangle"
        );
        assert_eq!(v["rows"][0]["nr"], 70);
        assert_eq!(v["rows"][0]["library"], serde_json::Value::Null);
    }
}
