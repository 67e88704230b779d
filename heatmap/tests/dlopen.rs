//! A library `dlopen`ed after start has no buckets: its samples are counted in "other" (not
//! dropped) and the profile's warnings name it. A library loaded before start gets buckets
//! and names in the report.

mod common;

use std::ffi::CString;
use std::time::Duration;

use common::*;
use heatmap::Config;

type Crc32 = unsafe extern "C" fn(u64, *const u8, u32) -> u64;

/// Opens libz and returns its `crc32`, or None (the test then says SKIPPED).
fn load_crc32() -> Option<Crc32> {
    let name = CString::new("libz.so.1").unwrap();
    // SAFETY: dlopen with a valid C string; the handle is never closed (stays loaded).
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    if h.is_null() {
        return None;
    }
    let sym = CString::new("crc32").unwrap();
    // SAFETY: dlsym on a live handle with a valid C string.
    let f = unsafe { libc::dlsym(h, sym.as_ptr()) };
    // SAFETY: zlib's crc32 has the signature uLong crc32(uLong, const Bytef *, uInt).
    (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, Crc32>(f) })
}

fn burn_crc(crc32: Crc32, cpu: Duration) {
    let data = vec![7u8; 1 << 16];
    let end = thread_cpu() + cpu;
    let mut c = 0;
    while thread_cpu() < end {
        // SAFETY: `data` is live for the call and its length fits in u32.
        c = unsafe { crc32(c, data.as_ptr(), data.len() as u32) };
    }
    std::hint::black_box(c);
}

#[test]
fn late_and_early_libraries() {
    let _g = serial();
    let Some(s) = start_perf_or_skip("late_and_early_libraries", Config::new().hz(1000)) else {
        return;
    };
    let Some(crc32) = load_crc32() else {
        println!("SKIPPED late_and_early_libraries: libz.so.1 cannot be dlopened here");
        return;
    };
    burn_crc(crc32, Duration::from_millis(200));
    let p = s.stop();
    println!(
        "late library: other = {}, warnings {:?}",
        p.other(),
        p.warnings()
    );
    assert!(
        p.other() >= 100,
        "samples in the late library land in other: {}",
        p.other()
    );
    assert!(
        p.warnings()
            .iter()
            .any(|w| w.contains("libz.so") && w.contains("other")),
        "{:?}",
        p.warnings()
    );
    let mut table = Vec::new();
    p.report(&heatmap::ReportOptions::default())
        .write_table(&mut table)
        .unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("other (outside every executable segment)"),
        "{table}"
    );

    // Now libz is loaded before start: it has buckets and its function is named.
    let Some(s) = start_perf_or_skip("late_and_early_libraries", Config::new().hz(1000)) else {
        return;
    };
    burn_crc(crc32, Duration::from_millis(200));
    let p = s.stop();
    let r = full_report(&p);
    let in_libz: u64 = r
        .rows
        .iter()
        .filter(|row| {
            row.library
                .as_deref()
                .is_some_and(|l| l.starts_with("libz.so"))
        })
        .map(|row| row.nr)
        .sum();
    let top = &r.rows[0];
    println!("early library: {in_libz} samples in libz, top row {top:?}");
    assert!(in_libz >= 100, "{in_libz}");
    assert!(
        top.library.as_deref().unwrap_or("").starts_with("libz.so"),
        "{top:?}"
    );
    assert!(top.function.contains("crc32"), "{top:?}");
    assert!(p.other() < 20, "{}", p.other());
}
