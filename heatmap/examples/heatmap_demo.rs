//! A demo workload for the heatmap sampler: four functions with different CPU budgets on two
//! threads, sampled at `HEATMAP_HZ` (default 1000) in CPU mode; prints the top 10 on stderr
//! and writes a dump to the path given as the first argument (default `heatmap.hm`).
//!
//! `scripts/compare_with_perf.sh` runs it under `perf record` to check our shares against
//! perf's on the same run.

#[cfg(target_os = "linux")]
mod linux {
    use profpoint_test_support::cpu::thread_cpu;
    use std::hint::black_box;
    use std::time::Duration;

    /// Runs `f` repeatedly until it has used `budget` of this thread's CPU.
    fn for_cpu(budget: Duration, mut f: impl FnMut() -> u64) -> u64 {
        let end = thread_cpu() + budget;
        let mut acc = 0u64;
        while thread_cpu() < end {
            acc = acc.wrapping_add(f());
        }
        acc
    }

    #[inline(never)]
    fn matmul(n: usize) -> u64 {
        let a: Vec<f64> = (0..n * n).map(|i| (i % 7) as f64).collect();
        let b: Vec<f64> = (0..n * n).map(|i| (i % 5) as f64).collect();
        let mut c = vec![0.0f64; n * n];
        for i in 0..n {
            for k in 0..n {
                let aik = a[i * n + k];
                for j in 0..n {
                    c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
        black_box(c[n + 1]) as u64
    }

    #[inline(never)]
    fn fnv_hash(data: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        black_box(h)
    }

    #[inline(never)]
    fn sieve(n: usize) -> u64 {
        let mut composite = vec![false; n + 1];
        let mut count = 0u64;
        for i in 2..=n {
            if !composite[i] {
                count += 1;
                let mut j = i * i;
                while j <= n {
                    composite[j] = true;
                    j += i;
                }
            }
        }
        black_box(count)
    }

    #[inline(never)]
    fn collatz(limit: u64) -> u64 {
        let mut longest = 0;
        for start in 1..limit {
            let mut x = start;
            let mut steps = 0;
            while x != 1 {
                x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
                steps += 1;
            }
            longest = longest.max(steps);
        }
        black_box(longest)
    }

    pub(super) fn main() {
        let out = std::env::args()
            .nth(1)
            .unwrap_or_else(|| "heatmap.hm".to_owned());
        // The rate from HEATMAP_HZ (the demo's own variable; the crate reads none).
        let mut config = profpoint_heatmap::Config::default();
        if let Ok(v) = std::env::var("HEATMAP_HZ") {
            match v.trim().parse::<u32>() {
                Ok(hz) if (1..=profpoint_heatmap::MAX_HZ).contains(&hz) => config = config.hz(hz),
                _ => {
                    eprintln!(
                        "heatmap_demo: HEATMAP_HZ={v:?}: expected a sampling rate in Hz between 1 \
                         and {}",
                        profpoint_heatmap::MAX_HZ
                    );
                    std::process::exit(2)
                }
            }
        }
        let sampler = profpoint_heatmap::start(config).unwrap_or_else(|e| {
            eprintln!("heatmap_demo: {e}");
            std::process::exit(1)
        });
        let data: Vec<u8> = (0..1 << 16).map(|i: u32| (i * 31) as u8).collect();
        let ms = Duration::from_millis;
        // Budgets: thread 1 = 1200 ms matmul + 400 ms sieve; thread 2 = 800 ms hash + 400 ms collatz.
        let t = std::thread::spawn(move || {
            for_cpu(ms(800), || fnv_hash(&data)) ^ for_cpu(ms(400), || collatz(20_000))
        });
        let x = for_cpu(ms(1200), || matmul(96)) ^ for_cpu(ms(400), || sieve(200_000));
        black_box(x ^ t.join().unwrap());
        let profile = sampler.stop();
        profpoint_heatmap::print_profile_heatmap_nr(&profile, 10);
        let mut f = std::fs::File::create(&out).expect("create the dump file");
        profile.write_dump(&mut f).expect("write the dump");
        eprintln!("heatmap_demo: dump written to {out}");
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIPPED heatmap_demo: the samplers it demonstrates run on Linux only");
}
