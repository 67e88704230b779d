//! The live server against slow clients (feature `serve`):
//!
//! cargo bench -p profpoint-benches --features serve --bench serve_slowloris
//!
//! Interleaved rounds in one run, quiet and under attack: the attack is 300 connections each
//! sending a request head one byte every 1.5 s (slowloris), opened at the start of its round.
//! In every round a scraper requests `/metrics` every 100 ms (its latency: median and slowest,
//! the target 1 s under attack), and the application's thread calls an annotated function in
//! a loop (its rate: the attack's cost to the host, the target within noise).
//!
//! Under `cargo test --benches` it only checks that it runs (one short pair of rounds).

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    #[profpoint::profile_point]
    #[inline(never)]
    fn work(x: u64) -> u64 {
        let mut y = x;
        for i in 0..64 {
            y = std::hint::black_box(y.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        y
    }

    fn scrape(addr: SocketAddr) -> Duration {
        let t = Instant::now();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let took = t.elapsed();
        assert!(
            out.starts_with(b"HTTP/1.1 200 OK"),
            "{}",
            String::from_utf8_lossy(&out[..out.len().min(200)])
        );
        took
    }

    struct Round {
        rate: f64,
        median: Duration,
        slowest: Duration,
        scrapes: usize,
    }

    /// One round of `len`: the application's calls per second and the scrapes' latencies, with
    /// `attackers` slow connections held.
    fn round(addr: SocketAddr, calls: &AtomicU64, len: Duration, attackers: usize) -> Round {
        let head = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nUser-Agent: slow\r\n\r\n";
        let mut slow: Vec<TcpStream> = (0..attackers)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let start = Instant::now();
        let calls_before = calls.load(Ordering::Relaxed);
        let mut sent = 0;
        let mut lat = Vec::new();
        while start.elapsed() < len {
            if !slow.is_empty() && start.elapsed() >= Duration::from_millis(1500) * sent as u32 {
                for s in &mut slow {
                    let _ = s.write_all(&head[sent..sent + 1]);
                }
                sent += 1;
            }
            lat.push(scrape(addr));
            std::thread::sleep(Duration::from_millis(100));
        }
        let rate =
            (calls.load(Ordering::Relaxed) - calls_before) as f64 / start.elapsed().as_secs_f64();
        lat.sort_unstable();
        Round {
            rate,
            median: lat[lat.len() / 2],
            slowest: lat[lat.len() - 1],
            scrapes: lat.len(),
        }
    }

    pub(crate) fn main() {
        let full = std::env::args().any(|a| a == "--bench");
        let (pairs, len) = if full {
            (3, Duration::from_secs(4))
        } else {
            (1, Duration::from_millis(500))
        };
        profpoint::set_budget(None);
        let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU64::new(0));
        let app = {
            let (stop, calls) = (Arc::clone(&stop), Arc::clone(&calls));
            std::thread::spawn(move || {
                let mut x = 1;
                while !stop.load(Ordering::Relaxed) {
                    x = work(x);
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                x
            })
        };
        let mut quiet = Vec::new();
        let mut attacked = Vec::new();
        for _ in 0..pairs {
            quiet.push(round(addr, &calls, len, 0));
            attacked.push(round(addr, &calls, len, 300));
            // The attack's connections closed: let the server see them go.
            std::thread::sleep(Duration::from_millis(200));
        }
        stop.store(true, Ordering::Relaxed);
        app.join().unwrap();
        for (name, rounds) in [("quiet", &quiet), ("300 slow connections", &attacked)] {
            for r in rounds.iter() {
                println!(
                    "{name:>22}: application {:.2} M calls/s; /metrics median {:.2} ms, slowest \
                     {:.2} ms ({} scrapes)",
                    r.rate / 1e6,
                    r.median.as_secs_f64() * 1e3,
                    r.slowest.as_secs_f64() * 1e3,
                    r.scrapes
                );
            }
        }
        let med = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let q = med(quiet.iter().map(|r| r.rate).collect());
        let a = med(attacked.iter().map(|r| r.rate).collect());
        let slowest = attacked.iter().map(|r| r.slowest).max().unwrap();
        println!(
            "application under attack: {:+.2}% (medians of {pairs} rounds each); slowest scrape \
             under attack {:.2} ms (target 1000 ms)",
            (a / q - 1.0) * 100.0,
            slowest.as_secs_f64() * 1e3
        );
        if full {
            assert!(slowest < Duration::from_secs(1), "slowest {slowest:?}");
        }
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIPPED serve_slowloris: Linux only");
}
