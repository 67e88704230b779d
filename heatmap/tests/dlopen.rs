//! Libraries `dlopen`ed after start: the watcher gives them buckets within one scan, so their
//! functions are named in the report; one loaded after the last scan (here: a scan interval
//! longer than the run) has its samples counted in "other", never dropped, and the profile's
//! warnings name it. Each test loads a different library, so the order of tests in one
//! process does not matter.

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::ffi::CString;
use std::time::Duration;

use common::*;
use profpoint_heatmap::Config;

fn dlsym(lib: &str, sym: &str) -> Option<*mut libc::c_void> {
    let name = CString::new(lib).unwrap();
    // SAFETY: dlopen with a valid C string; the handle is never closed (stays loaded).
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) };
    if h.is_null() {
        return None;
    }
    let sym = CString::new(sym).unwrap();
    // SAFETY: dlsym on a live handle with a valid C string.
    let f = unsafe { libc::dlsym(h, sym.as_ptr()) };
    (!f.is_null()).then_some(f)
}

fn loaded(lib: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .contains(lib)
}

type Crc32 = unsafe extern "C" fn(u64, *const u8, u32) -> u64;
type Bz2Compress = unsafe extern "C" fn(*mut u8, *mut u32, *const u8, u32, i32, i32, i32) -> i32;

fn in_library(r: &profpoint_heatmap::Report, lib: &str) -> u64 {
    r.rows
        .iter()
        .filter(|row| row.library.as_deref().is_some_and(|l| l.starts_with(lib)))
        .map(|row| row.nr)
        .sum()
}

#[test]
fn a_library_loaded_after_start_gets_buckets_within_one_scan() {
    let _g = serial();
    if loaded("libz.so") {
        println!(
            "SKIPPED a_library_loaded_after_start_gets_buckets_within_one_scan: libz is already loaded"
        );
        return;
    }
    let Some(s) = start_perf_or_skip(
        "a_library_loaded_after_start_gets_buckets_within_one_scan",
        Config::new().hz(1000),
    ) else {
        return;
    };
    let Some(f) = dlsym("libz.so.1", "crc32") else {
        println!(
            "SKIPPED a_library_loaded_after_start_gets_buckets_within_one_scan: libz.so.1 cannot be dlopened here"
        );
        return;
    };
    // SAFETY: zlib's crc32 has the signature uLong crc32(uLong, const Bytef *, uInt).
    let crc32 = unsafe { std::mem::transmute::<*mut libc::c_void, Crc32>(f) };
    let data = vec![7u8; 1 << 16];
    let end = thread_cpu() + Duration::from_millis(300);
    let mut c = 0;
    while thread_cpu() < end {
        // SAFETY: `data` is live for the call and its length fits in u32.
        c = unsafe { crc32(c, data.as_ptr(), data.len() as u32) };
    }
    std::hint::black_box(c);
    let p = s.stop();
    let r = full_report(&p);
    let libz = in_library(&r, "libz.so");
    println!(
        "late libz: {libz} samples in libz, other {}, top {:?}, warnings {:?}",
        p.other(),
        r.rows[0],
        p.warnings()
    );
    // ~300 samples; the first scan interval (20 ms) may land in other.
    assert!(libz >= 200, "{libz}");
    assert!(p.other() <= 60, "{}", p.other());
    assert!(r.rows[0].function.contains("crc32"), "{:?}", r.rows[0]);
    assert!(p.objects().iter().any(|o| o.path.contains("libz.so")));
    assert!(
        !p.warnings().iter().any(|w| w.contains("libz")),
        "{:?}",
        p.warnings()
    );
}

#[test]
fn a_library_loaded_after_the_last_scan_is_other_and_named() {
    let _g = serial();
    if loaded("libbz2.so") {
        println!(
            "SKIPPED a_library_loaded_after_the_last_scan_is_other_and_named: libbz2 is already loaded"
        );
        return;
    }
    // A scan interval longer than the run: the watcher never looks again after start.
    let Some(s) = start_perf_or_skip(
        "a_library_loaded_after_the_last_scan_is_other_and_named",
        Config::new()
            .hz(1000)
            .scan_interval(Duration::from_secs(600)),
    ) else {
        return;
    };
    let Some(f) = dlsym("libbz2.so.1.0", "BZ2_bzBuffToBuffCompress") else {
        println!(
            "SKIPPED a_library_loaded_after_the_last_scan_is_other_and_named: libbz2.so.1.0 cannot be dlopened here"
        );
        return;
    };
    // SAFETY: bzlib's BZ2_bzBuffToBuffCompress(char *dest, unsigned *destLen, char *source,
    // unsigned sourceLen, int blockSize100k, int verbosity, int workFactor).
    let compress = unsafe { std::mem::transmute::<*mut libc::c_void, Bz2Compress>(f) };
    let src: Vec<u8> = (0..1u32 << 16)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let mut dst = vec![0u8; src.len() * 2];
    let end = thread_cpu() + Duration::from_millis(300);
    while thread_cpu() < end {
        let mut len = dst.len() as u32;
        // SAFETY: both buffers are live; `len` holds dst's capacity.
        let rc = unsafe {
            compress(
                dst.as_mut_ptr(),
                &mut len,
                src.as_ptr(),
                src.len() as u32,
                1,
                0,
                30,
            )
        };
        assert_eq!(rc, 0, "BZ_OK");
    }
    let p = s.stop();
    println!(
        "too-late libbz2: other {}, warnings {:?}",
        p.other(),
        p.warnings()
    );
    assert!(
        p.other() >= 150,
        "samples in the late library land in other: {}",
        p.other()
    );
    assert!(
        p.warnings()
            .iter()
            .any(|w| w.contains("libbz2.so") && w.contains("other")),
        "{:?}",
        p.warnings()
    );
    let mut table = Vec::new();
    p.report(&profpoint_heatmap::ReportOptions::default())
        .write_table(&mut table)
        .unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("other (outside every executable segment)"),
        "{table}"
    );
}
