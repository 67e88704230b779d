//! The dump format: a real profile survives the round trip exactly and reports the same; every
//! truncation, every single-bit flip and arbitrary bytes give a `DumpError`, never a panic;
//! the command that reports from a dump is `profpoint heatmap` (profpoint-cli/tests/cli.rs).

// Linux only: the samplers it tests run on Linux only (elsewhere they say so; see pmu/unsupported.rs and unsupported.rs).
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::*;
use profpoint_heatmap::{Config, DumpError, Profile, ReportOptions, Source};
use proptest::prelude::*;

/// A small real profile (setitimer: works without perf), taken once per test binary.
fn real_profile() -> Profile {
    static P: std::sync::OnceLock<Profile> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let _g = serial();
        let s = profpoint_heatmap::start(Config::new().hz(250).source(Source::Setitimer)).unwrap();
        // Samples whatever the load (setitimer: see burn_cpu_alpha_until).
        burn_cpu_alpha_until(&s, Duration::from_millis(200), 10, Duration::from_secs(10));
        s.stop()
    })
    .clone()
}

#[test]
fn round_trip_is_exact_and_reports_the_same() {
    let p = real_profile();
    assert!(p.total_samples() > 0);
    let mut bytes = Vec::new();
    p.write_dump(&mut bytes).unwrap();
    assert_eq!(&bytes[..8], b"HEATMAP\0");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 3);
    let q = Profile::read_dump(&bytes).unwrap();
    assert_eq!(p, q);
    let opts = ReportOptions::default();
    assert_eq!(p.report(&opts), q.report(&opts));
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = real_profile().to_dump_bytes();
    for n in 0..bytes.len() {
        let e = Profile::read_dump(&bytes[..n]).unwrap_err();
        // Any variant will do but a panic; the message must say what is wrong.
        assert!(!e.to_string().is_empty());
        if n >= 8 {
            assert!(
                matches!(e, DumpError::Truncated { .. } | DumpError::Checksum { .. }),
                "{n}: {e}"
            );
        }
    }
}

#[test]
fn every_bit_flip_is_an_error() {
    let bytes = real_profile().to_dump_bytes();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            assert!(
                Profile::read_dump(&b).is_err(),
                "flip of bit {bit} of byte {i} went unnoticed"
            );
        }
    }
}

#[test]
fn foreign_and_future_files_say_so() {
    let e = Profile::read_dump(b"\x7fELF\x02\x01\x01\0rest").unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a heatmap dump: starts with [7f, 45, 4c, 46, 02, 01, 01, 00], expected the magic \"HEATMAP\\0\""
    );
    let mut b = real_profile().to_dump_bytes();
    b[8..12].copy_from_slice(&7u32.to_le_bytes());
    assert_eq!(
        Profile::read_dump(&b).unwrap_err().to_string(),
        "heatmap dump format version 7: this reader reads versions 1 to 3"
    );
    assert!(matches!(
        Profile::read_dump(b"HEAT").unwrap_err(),
        DumpError::Truncated { what: "magic", .. }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Arbitrary bytes: an error or (vanishingly unlikely) a valid profile, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Profile::read_dump(&bytes);
    }

    /// Arbitrary bytes after a valid header and with a valid checksum: the field checks (not
    /// the checksum) must reject them, still without a panic.
    #[test]
    fn checksummed_garbage_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut b = b"HEATMAP\0".to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&body);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &x in &b {
            h ^= u64::from(x);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        b.extend_from_slice(&h.to_le_bytes());
        if let Ok(p) = Profile::read_dump(&b) {
            // Whatever was accepted must report without panicking either.
            let _ = p.report(&ReportOptions::default()).to_json();
        }
    }
}
