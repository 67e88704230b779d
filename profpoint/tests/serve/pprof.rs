//! The pprof endpoints read as `go tool pprof` and Parca read them: `/debug/pprof/profile`,
//! a gzip'd CPU profile of the next seconds with the hot function on top, and the points'
//! own pprof.

use super::*;

#[cfg(feature = "heatmap")]
#[profpoint::profile_point]
#[inline(never)]
fn hot_spin(mut x: u64) -> u64 {
    for i in 0..20_000u64 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// The cumulative value of sample type `ty` per function name in a pprof profile (each sample
/// counted once per function anywhere in its stack), and its total over the samples.
fn pprof_samples_by_function(pb: &[u8], ty: &str) -> (std::collections::HashMap<String, u64>, u64) {
    use common::pb::{pb_fields, repeated_varints};
    let top = pb_fields(pb);
    let strings: Vec<String> = top
        .iter()
        .filter(|f| f.0 == 6)
        .map(|f| String::from_utf8_lossy(&f.3).into_owned())
        .collect();
    // sample_type (1): ValueType { type (1), unit (2) }.
    let index = top
        .iter()
        .filter(|f| f.0 == 1)
        .position(|f| {
            pb_fields(&f.3)
                .iter()
                .any(|g| g.0 == 1 && strings[g.2 as usize] == ty)
        })
        .unwrap_or_else(|| panic!("no sample type {ty}"));
    // function (5): id (1), name (2); location (4): id (1), line (4) { function_id (1) }.
    let mut function_name = std::collections::HashMap::new();
    for f in top.iter().filter(|f| f.0 == 5) {
        let g = pb_fields(&f.3);
        let id = g.iter().find(|x| x.0 == 1).map_or(0, |x| x.2);
        let name = g.iter().find(|x| x.0 == 2).map_or(0, |x| x.2);
        function_name.insert(id, strings[name as usize].clone());
    }
    let mut location_function = std::collections::HashMap::new();
    for f in top.iter().filter(|f| f.0 == 4) {
        let g = pb_fields(&f.3);
        let id = g.iter().find(|x| x.0 == 1).map_or(0, |x| x.2);
        if let Some(line) = g.iter().find(|x| x.0 == 4) {
            let fid = pb_fields(&line.3)
                .iter()
                .find(|x| x.0 == 1)
                .map_or(0, |x| x.2);
            location_function.insert(id, fid);
        }
    }
    // sample (2): location_id (1, packed), value (2, packed).
    let (mut out, mut total) = (std::collections::HashMap::new(), 0);
    for f in top.iter().filter(|f| f.0 == 2) {
        let g = pb_fields(&f.3);
        let locs = repeated_varints(&g, 1);
        let values = repeated_varints(&g, 2);
        let v = values.get(index).copied().unwrap_or(0);
        total += v;
        // Once per sample, wherever the function is in its stack.
        let mut names: Vec<String> = locs
            .iter()
            .map(|loc| {
                location_function
                    .get(loc)
                    .and_then(|fid| function_name.get(fid))
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            *out.entry(name).or_insert(0) += v;
        }
    }
    (out, total)
}

/// What a pprof profile says of itself: its sample types and default, its period's type and
/// value, its duration, and the most locations a sample has.
#[derive(Debug)]
// Without the sampler, only the points' profile is read.
#[cfg_attr(not(feature = "heatmap"), allow(dead_code))]
struct PprofHead {
    sample_types: Vec<(String, String)>,
    default_sample_type: String,
    period_type: (String, String),
    period: u64,
    duration_nanos: u64,
    deepest: usize,
}

fn pprof_head(pb: &[u8]) -> PprofHead {
    use common::pb::{pb_fields, repeated_varints};
    let top = pb_fields(pb);
    let strings: Vec<String> = top
        .iter()
        .filter(|f| f.0 == 6)
        .map(|f| String::from_utf8_lossy(&f.3).into_owned())
        .collect();
    // ValueType { type (1), unit (2) }.
    let value_type = |b: &[u8]| {
        let g = pb_fields(b);
        let s = |n| g.iter().find(|x| x.0 == n).map_or(0, |x| x.2) as usize;
        (strings[s(1)].clone(), strings[s(2)].clone())
    };
    let varint = |n| top.iter().find(|f| f.0 == n).map_or(0, |f| f.2);
    PprofHead {
        sample_types: top
            .iter()
            .filter(|f| f.0 == 1)
            .map(|f| value_type(&f.3))
            .collect(),
        default_sample_type: strings[varint(14) as usize].clone(),
        period_type: top
            .iter()
            .find(|f| f.0 == 11)
            .map(|f| value_type(&f.3))
            .unwrap_or_default(),
        period: varint(12),
        duration_nanos: varint(10),
        deepest: top
            .iter()
            .filter(|f| f.0 == 2)
            .map(|f| repeated_varints(&pb_fields(&f.3), 1).len())
            .max()
            .unwrap_or(0),
    }
}

/// The body of a raw answer, gunzipped, once its head says 200.
fn gzip_body(raw: &[u8]) -> Vec<u8> {
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..at]);
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let gz = &raw[at + 4..];
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    let mut pb = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut pb)
        .unwrap();
    pb
}

/// `/debug/pprof/profile?seconds=2` is a CPU profile as Go's `net/http/pprof` serves one, so
/// `go tool pprof`, Parca and Pyroscope read it with no flag: `samples/count` then
/// `cpu/nanoseconds`, cpu the default, `period_type` cpu/nanoseconds and `period` the
/// sampling interval, `duration_nanos` the window, samples with their stacks, the hot
/// function on top, and no points' figures; one at a time (429), bad durations refused (400).
#[cfg(feature = "heatmap")]
#[test]
fn a_cpu_profile_is_gzip_pprof_with_the_hot_function_on_top() {
    let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
    static STOP: AtomicBool = AtomicBool::new(false);
    let burner = std::thread::spawn(|| {
        let mut x = 1;
        while !STOP.load(Ordering::Relaxed) {
            x = hot_spin(x);
        }
        x
    });
    assert!(get(addr, "/debug/pprof/profile?seconds=0").starts_with("HTTP/1.1 400 "));
    assert!(get(addr, "/debug/pprof/profile?seconds=61").starts_with("HTTP/1.1 400 "));
    let first = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(b"GET /debug/pprof/profile?seconds=2 HTTP/1.1\r\n\r\n")
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        out
    });
    // While it runs (2 s), a second one is refused.
    std::thread::sleep(Duration::from_millis(300));
    let second = get(addr, "/debug/pprof/profile?seconds=1");
    assert!(second.starts_with("HTTP/1.1 429 "), "{second}");
    let raw = first.join().unwrap();
    STOP.store(true, Ordering::Relaxed);
    burner.join().unwrap();
    if raw.starts_with(b"HTTP/1.1 503 ") {
        println!(
            "SKIPPED: the sampler cannot run here: {}",
            String::from_utf8_lossy(&raw)
        );
        return;
    }
    let pb = gzip_body(&raw);
    let h = pprof_head(&pb);
    let ty = |k: &str, u: &str| (k.to_string(), u.to_string());
    assert_eq!(
        h.sample_types,
        [ty("samples", "count"), ty("cpu", "nanoseconds")],
        "{h:?}"
    );
    assert_eq!(h.default_sample_type, "cpu", "{h:?}");
    assert_eq!(h.period_type, ty("cpu", "nanoseconds"), "{h:?}");
    // The default rate's interval: between 10 us and 1 s.
    assert!((10_000..=1_000_000_000).contains(&h.period), "{h:?}");
    // The 2 s window, not the process's age (generous: a loaded machine sleeps late).
    assert!(
        (1_900_000_000..=10_000_000_000).contains(&h.duration_nanos),
        "{h:?}"
    );
    let stacks_off = std::env::var("PROFPOINT_STACKS")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0"));
    if !heatmap::stacks::AVAILABLE {
        println!(
            "SKIPPED: stacks in the profile: not available on this platform (x86_64 Linux only)"
        );
    } else if stacks_off {
        println!("SKIPPED: stacks in the profile: PROFPOINT_STACKS turns them off");
    } else {
        assert!(h.deepest > 1, "no sample has a stack: {h:?}");
    }
    let (by_fn, total) = pprof_samples_by_function(&pb, "samples");
    let (cpu_by_fn, cpu_total) = pprof_samples_by_function(&pb, "cpu");
    assert_eq!(cpu_total, total * h.period);
    for (f, n) in &by_fn {
        assert_eq!(cpu_by_fn[f], n * h.period, "{f}");
    }
    // No points' figures: the points are /debug/pprof/points.
    assert!(
        !h.sample_types
            .iter()
            .any(|(k, _)| k == "self" || k == "calls"),
        "{h:?}"
    );
    // The hot function is in most samples' stacks (as their leaf or its caller).
    let hot = by_fn
        .iter()
        .filter(|(name, _)| name.contains("hot_spin"))
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0);
    assert!(total > 0, "{by_fn:?}");
    assert!(hot * 2 > total, "{hot} of {total}: {by_fn:?}");
}

/// `/debug/pprof/points`: the points' calls, self and total time since the start as gzip pprof,
/// self time the default, one sample per point; listed on the index page.
#[test]
fn the_points_have_a_pprof_of_their_own() {
    let addr = server();
    let mut x = 0;
    for _ in 0..777 {
        x = served(x);
    }
    assert!(get(addr, "/").contains("/debug/pprof/points"));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /debug/pprof/points HTTP/1.1\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let pb = gzip_body(&raw);
    let h = pprof_head(&pb);
    let ty = |k: &str, u: &str| (k.to_string(), u.to_string());
    assert_eq!(
        h.sample_types,
        [
            ty("calls", "count"),
            ty("self", "nanoseconds"),
            ty("total", "nanoseconds")
        ],
        "{h:?}"
    );
    assert_eq!(h.default_sample_type, "self", "{h:?}");
    let (calls, _) = pprof_samples_by_function(&pb, "calls");
    let served_calls = calls
        .iter()
        .find(|(name, _)| name.ends_with("serve::served"))
        .map(|(_, n)| *n);
    assert!(served_calls.is_some_and(|n| n >= 777), "{calls:?}");
    assert!(x > 0);
}
