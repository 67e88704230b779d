//! Unit tests of the mode: event names, the environment, attribution and the table (the
//! kernel interfaces the live half relies on are pinned in `sys.rs`).

use super::events::{EVENT_NAMES, MAX_MEMBERS};
use super::*;

fn profile(windows: Vec<Window>) -> PmuProfile {
    let mut calibration = Calibration::default();
    calibration.windows = 10;
    calibration.fixed = [1000.0, 100.0, 1.0, 10.0, 2.0, 0.0, 0.0];
    PmuProfile {
        // Windows of 5,000 cycles (`win` asks exactly that): with the 1,000 fixed below, a
        // window counting over 1.5 x 5,000 + 1,000 = 8,500 cycles is overlong.
        config: PmuConfig {
            window: 5_000,
            ..PmuConfig::default()
        },
        windows,
        calibration,
        threads: 1,
        wall_seconds: 1.0,
        warnings: vec![],
    }
}

fn win(start: u64, end: u64, d: [u64; 5]) -> Window {
    let mut deltas = [0; MAX_MEMBERS + 1];
    deltas[..5].copy_from_slice(&d);
    Window {
        start_pc: start,
        end_pc: end,
        asked: 5_000,
        deltas,
        ..Window::default()
    }
}

#[test]
fn windows_count_only_when_they_begin_and_end_in_one_function_and_calibration_is_subtracted() {
    // Functions: f at 0x1000.., g at 0x2000..
    let mut names = |pc: u64| match pc {
        0x1000..0x2000 => Some("f".to_string()),
        0x2000..0x3000 => Some("g".to_string()),
        _ => None,
    };
    let p = profile(vec![
        // f: 4000 cycles, 2100 instructions, 11 branch misses, 110 refs, 12 misses (raw)
        win(0x1010, 0x1020, [4000, 2100, 11, 110, 12]),
        win(0x1010, 0x1030, [4000, 2100, 11, 110, 12]),
        // g: high CPI, at the overlong limit but not past it
        win(0x2010, 0x2020, [8500, 1100, 1, 50, 42]),
        // across f and g: discarded
        win(0x1010, 0x2020, [4000, 2000, 0, 0, 0]),
        // unknown: discarded
        win(0x9000, 0x9000, [4000, 2000, 0, 0, 0]),
        // in f, but one firing was skipped and the window ran twice as long: overlong,
        // not credited
        win(0x1010, 0x1020, [10_000, 2100, 900, 110, 12]),
    ]);
    let r = p.report_with(10, &mut names);
    assert_eq!((r.windows, r.discarded, r.overlong), (6, 2, 1));
    let f = r.rows.iter().find(|r| r.symbol == "f").unwrap();
    let g = r.rows.iter().find(|r| r.symbol == "g").unwrap();
    assert_eq!((f.windows, g.windows), (2, 1));
    // After calibration: f 3000 cycles / 2000 instructions per window: CPI 1.5;
    // branch misses 10 per 2000 instr = 5 per KI; cache misses 10 per 2000 = 5 per KI.
    assert!((f.cpi.unwrap() - 1.5).abs() < 1e-9);
    assert!((f.bm_per_ki.unwrap() - 5.0).abs() < 1e-9);
    assert!((f.cm_per_ki.unwrap() - 5.0).abs() < 1e-9);
    assert!((f.cm_percent.unwrap() - 10.0).abs() < 1e-9);
    // g: 7500 / 1000 = CPI 7.5, and g leads by share of cycles: f 6000, g 7500.
    assert!((g.cpi.unwrap() - 7.5).abs() < 1e-9);
    assert_eq!(r.rows[0].symbol, "g");
    assert!((g.clock_percent - 100.0 * 7500.0 / 13500.0).abs() < 1e-9);
    let mut out = Vec::new();
    r.write_table(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for col in ["Symbol", "CPI", "BM/KI", "CM/KI", "%CM", "%CY", "%I", "%BM"] {
        assert!(text.contains(col), "{col} in {text}");
    }
    assert!(text.contains("2 that began and ended"), "{text}");
    assert!(text.contains("1 overlong"), "{text}");
}

#[test]
fn l1d_events_use_the_kernel_cache_encoding_and_every_event_has_one_name() {
    // L1D = 0, OP_READ = 0, RESULT_MISS = 1: config 1 << 16 (perf_event.h).
    #[cfg(target_os = "linux")]
    {
        assert_eq!(super::events::kind(Event::L1dReads), Some((3, 0)));
        assert_eq!(
            super::events::kind(Event::L1dReadMisses),
            Some((3, 0x10000))
        );
    }
    for (e, name) in EVENT_NAMES {
        // Every event the model names can be asked of the kernel.
        #[cfg(target_os = "linux")]
        assert!(
            super::events::kind(e).is_some(),
            "{name} has no perf encoding"
        );
        assert_eq!(name.parse::<Event>(), Ok(e));
        // The JSON name is the same.
        assert_eq!(
            profpoint_json::to_string(&e).unwrap(),
            format!("\"{name}\"")
        );
    }
    let e = "l1-misses".parse::<Event>().unwrap_err();
    assert!(
        e.contains("\"l1-misses\" is not an event") && e.contains("l1d-read-misses"),
        "{e}"
    );
}

#[test]
fn the_l1d_shares_appear_when_counted() {
    let p = PmuProfile {
        config: PmuConfig {
            window: 5_000,
            events: vec![Event::Instructions, Event::L1dReads, Event::L1dReadMisses],
            ..PmuConfig::default()
        },
        windows: vec![
            win(0x1010, 0x1020, [4000, 2000, 300, 30, 0]),
            win(0x2010, 0x2020, [4000, 2000, 100, 10, 0]),
        ],
        calibration: Calibration::default(),
        threads: 1,
        wall_seconds: 1.0,
        warnings: vec![],
    };
    let mut names = |pc: u64| Some(if pc < 0x2000 { "f" } else { "g" }.to_string());
    let r = p.report_with(10, &mut names);
    let f = r.rows.iter().find(|r| r.symbol == "f").unwrap();
    assert_eq!(f.l1d_reads_percent, Some(75.0));
    assert_eq!(f.l1d_misses_percent, Some(75.0));
    let mut out = Vec::new();
    r.write_table(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("%L1DA") && text.contains("%L1DM"), "{text}");
    assert!(text.contains("75.00"), "{text}");
}

#[test]
fn config_errors_name_the_value() {
    let bad = PmuConfig {
        long_period: 10,
        ..PmuConfig::default()
    };
    let e = start(bad).unwrap_err();
    assert!(e.to_string().contains("long period 10"), "{e}");
}

#[cfg(not(target_os = "linux"))]
#[test]
fn elsewhere_than_linux_start_says_the_platform_lacks_it() {
    let msg = start(PmuConfig::default()).unwrap_err().to_string();
    assert!(msg.contains("not available on this platform"), "{msg}");
    assert_eq!(available().unwrap_err().to_string(), msg);
    assert!(Counters::open(&[Event::Instructions]).is_err());
}

#[cfg(target_os = "linux")]
#[test]
fn without_a_pmu_start_names_the_cause_and_the_fix() {
    match available() {
        Ok(()) => println!(
            "SKIPPED without_a_pmu_start_names_the_cause_and_the_fix: this machine has a PMU"
        ),
        Err(e) => {
            let msg = start(PmuConfig::default()).unwrap_err().to_string();
            assert_eq!(msg, e.to_string());
            assert!(
                msg.contains("perf_event_paranoid")
                    || msg.contains("no hardware performance counters")
                    || msg.contains("denied"),
                "{msg}"
            );
        }
    }
}

/// The names reports leave out are the symbols of the functions they name: a rename breaks
/// this test, not silently the exclusion.
#[cfg(target_os = "linux")]
#[test]
fn named_functions_symbolise_under_their_constants() {
    let f = calibration_loop as fn(u64) -> u64 as usize as u64;
    std::hint::black_box(calibration_loop(3));
    let (objects, segments) = crate::buckets::discover();
    let object = segments
        .iter()
        .find(|g| g.start <= f && f < g.end)
        .expect("the loop lies in an executable segment")
        .object;
    let resolved = crate::symbolize::Symbolizer::new(&objects).lookup(object, f + 1);
    assert_eq!(
        (resolved.start, resolved.function.as_str()),
        (f, CALIBRATION_LOOP)
    );
}
