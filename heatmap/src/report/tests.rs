use super::*;
use crate::buckets::{ObjectFile, ObjectKind};
use crate::profile::{Segment, SourceUsed};

/// A profile over this test binary: two known functions with known counts.
fn synthetic() -> (Profile, u64, u64) {
    let (objects, segments) = crate::buckets::discover();
    let f1 = crate::symbolize::demangle as fn(&str) -> String as usize as u64;
    let f2 = name_key as fn(&str) -> u64 as usize as u64;
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
    assert_eq!(r.rows[1].function, "profpoint_heatmap::report::name_key");
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
