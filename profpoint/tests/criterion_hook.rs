//! The criterion hook: a profiled benchmark leaves its own points report (and heatmap dump)
//! in criterion's profile directory, the dump with the `heatmap` feature. Run by
//! `scripts/test-ci` with `--features criterion` and the sampler's.

use std::time::Duration;

#[profpoint::profile_point]
#[inline(never)]
fn hashing(n: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..n {
        h = (h ^ i).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[profpoint::profile_point]
fn not_in_the_benchmark() {}

#[test]
fn a_profiled_benchmark_writes_its_points_report_and_heatmap() {
    not_in_the_benchmark(); // before the benchmark: the hook's reset must drop it
    let dir = std::env::temp_dir().join(format!("profpoint-criterion-{}", std::process::id()));
    #[cfg(feature = "heatmap")]
    let profiler =
        profpoint::criterion::Profiler::with_heatmap(profpoint::heatmap::Config::new().hz(1000));
    #[cfg(not(feature = "heatmap"))]
    let profiler = profpoint::criterion::Profiler::new();
    let mut c = criterion::Criterion::default()
        .output_directory(&dir)
        .with_profiler(profiler)
        .profile_time(Some(Duration::from_millis(400)));
    c.bench_function("hashing", |b| {
        b.iter(|| hashing(std::hint::black_box(10_000)))
    });
    let profile = dir.join("hashing").join("profile");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(profile.join("profpoint.json")).unwrap()).unwrap();
    let point = |name: &str| {
        json["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap()
    };
    assert!(point("criterion_hook::hashing")["nr"].as_u64().unwrap() > 10);
    assert_eq!(
        point("criterion_hook::not_in_the_benchmark")["nr"],
        0,
        "reset at the start"
    );
    let table = std::fs::read_to_string(profile.join("profpoint.txt")).unwrap();
    assert!(table.contains("criterion_hook::hashing"), "{table}");
    #[cfg(feature = "heatmap")]
    {
        let dump = std::fs::read(profile.join("heatmap.dump")).unwrap();
        let heat = profpoint::heatmap::Profile::read_dump(&dump).unwrap();
        assert!(heat.total_samples() > 0);
    }
    #[cfg(not(feature = "heatmap"))]
    assert!(
        !profile.join("heatmap.dump").exists(),
        "no sampler without the heatmap feature"
    );
    std::fs::remove_dir_all(&dir).ok();
}
