//! The targets for the live server (feature `serve`):
//!
//! cargo bench -p profpoint-benches --features serve --bench serve_targets
//!
//! - a scrape of 1,000 points: the server's time under 5 ms (the first byte of `/metrics` at
//!   the client, median over 50 requests on loopback: the server builds the whole answer
//!   before writing, so this is its time plus a round trip); printed with the whole transfer
//!   and where the time goes (a bare request, the report and its exposition on this thread);
//! - the application's throughput while scraped every second: within 1% of unscraped
//!   (interleaved 1 s rounds, medians);
//! - a 2 s `/debug/pprof/profile` costs the application no more than the heatmap sampler itself
//!   at the same rate (interleaved 2 s rounds: none, the heatmap started directly, a profile
//!   request; the profile's cost within 1.5 points of the heatmap's).
//!
//! Under `cargo test --benches` it only checks that it runs (short rounds, no verdicts).

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// Ten points in a module of their own, and a function that calls each once.
    use profpoint_benches::ten_points as ten;

    ten!(m0);
    ten!(m1);
    ten!(m2);
    ten!(m3);
    ten!(m4);
    ten!(m5);
    ten!(m6);
    ten!(m7);
    ten!(m8);
    ten!(m9);
    ten!(m10);
    ten!(m11);
    ten!(m12);
    ten!(m13);
    ten!(m14);
    ten!(m15);
    ten!(m16);
    ten!(m17);
    ten!(m18);
    ten!(m19);
    ten!(m20);
    ten!(m21);
    ten!(m22);
    ten!(m23);
    ten!(m24);
    ten!(m25);
    ten!(m26);
    ten!(m27);
    ten!(m28);
    ten!(m29);
    ten!(m30);
    ten!(m31);
    ten!(m32);
    ten!(m33);
    ten!(m34);
    ten!(m35);
    ten!(m36);
    ten!(m37);
    ten!(m38);
    ten!(m39);
    ten!(m40);
    ten!(m41);
    ten!(m42);
    ten!(m43);
    ten!(m44);
    ten!(m45);
    ten!(m46);
    ten!(m47);
    ten!(m48);
    ten!(m49);
    ten!(m50);
    ten!(m51);
    ten!(m52);
    ten!(m53);
    ten!(m54);
    ten!(m55);
    ten!(m56);
    ten!(m57);
    ten!(m58);
    ten!(m59);
    ten!(m60);
    ten!(m61);
    ten!(m62);
    ten!(m63);
    ten!(m64);
    ten!(m65);
    ten!(m66);
    ten!(m67);
    ten!(m68);
    ten!(m69);
    ten!(m70);
    ten!(m71);
    ten!(m72);
    ten!(m73);
    ten!(m74);
    ten!(m75);
    ten!(m76);
    ten!(m77);
    ten!(m78);
    ten!(m79);
    ten!(m80);
    ten!(m81);
    ten!(m82);
    ten!(m83);
    ten!(m84);
    ten!(m85);
    ten!(m86);
    ten!(m87);
    ten!(m88);
    ten!(m89);
    ten!(m90);
    ten!(m91);
    ten!(m92);
    ten!(m93);
    ten!(m94);
    ten!(m95);
    ten!(m96);
    ten!(m97);
    ten!(m98);
    ten!(m99);

    /// Every one of the 1,000 points called once.
    fn touch_all() {
        m0::touch();
        m1::touch();
        m2::touch();
        m3::touch();
        m4::touch();
        m5::touch();
        m6::touch();
        m7::touch();
        m8::touch();
        m9::touch();
        m10::touch();
        m11::touch();
        m12::touch();
        m13::touch();
        m14::touch();
        m15::touch();
        m16::touch();
        m17::touch();
        m18::touch();
        m19::touch();
        m20::touch();
        m21::touch();
        m22::touch();
        m23::touch();
        m24::touch();
        m25::touch();
        m26::touch();
        m27::touch();
        m28::touch();
        m29::touch();
        m30::touch();
        m31::touch();
        m32::touch();
        m33::touch();
        m34::touch();
        m35::touch();
        m36::touch();
        m37::touch();
        m38::touch();
        m39::touch();
        m40::touch();
        m41::touch();
        m42::touch();
        m43::touch();
        m44::touch();
        m45::touch();
        m46::touch();
        m47::touch();
        m48::touch();
        m49::touch();
        m50::touch();
        m51::touch();
        m52::touch();
        m53::touch();
        m54::touch();
        m55::touch();
        m56::touch();
        m57::touch();
        m58::touch();
        m59::touch();
        m60::touch();
        m61::touch();
        m62::touch();
        m63::touch();
        m64::touch();
        m65::touch();
        m66::touch();
        m67::touch();
        m68::touch();
        m69::touch();
        m70::touch();
        m71::touch();
        m72::touch();
        m73::touch();
        m74::touch();
        m75::touch();
        m76::touch();
        m77::touch();
        m78::touch();
        m79::touch();
        m80::touch();
        m81::touch();
        m82::touch();
        m83::touch();
        m84::touch();
        m85::touch();
        m86::touch();
        m87::touch();
        m88::touch();
        m89::touch();
        m90::touch();
        m91::touch();
        m92::touch();
        m93::touch();
        m94::touch();
        m95::touch();
        m96::touch();
        m97::touch();
        m98::touch();
        m99::touch();
    }

    /// The application's work: one annotated call of ~1 us.
    #[profpoint::profile_point]
    #[inline(never)]
    fn request(x: u64) -> u64 {
        let mut h = x;
        for i in 0..300u64 {
            h = std::hint::black_box(h.wrapping_mul(0x0000_0100_0000_01b3) ^ i);
        }
        h
    }

    /// Calls of `request` in `d`.
    fn throughput(d: Duration) -> f64 {
        let start = Instant::now();
        let mut n = 0u64;
        let mut x = 1;
        while start.elapsed() < d {
            for _ in 0..1000 {
                x = request(x);
            }
            n += 1000;
        }
        std::hint::black_box(x);
        n as f64 / start.elapsed().as_secs_f64()
    }

    fn get(addr: SocketAddr, path: &str) -> Vec<u8> {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes())
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        out
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub(crate) fn main() {
        let quick = !std::env::args().any(|a| a == "--bench");
        // The budget would change the point's mode under the measurement.
        profpoint::set_budget(None);
        touch_all();
        let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
        let mut targets = profpoint_benches::Targets::default();

        // 1. The scrape of 1,000 points.
        let points = profpoint::snapshot().points.len();
        let mut ms = Vec::new();
        let mut bytes = 0;
        for _ in 0..if quick { 3 } else { 50 } {
            let t = Instant::now();
            bytes = get(addr, "/metrics").len();
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let scrape = median(ms);
        // Where the time goes: the report, then its exposition.
        let (mut collect_ms, mut render_ms) = (Vec::new(), Vec::new());
        for _ in 0..if quick { 3 } else { 50 } {
            let t = Instant::now();
            let r = profpoint::snapshot();
            collect_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(r.to_prometheus());
            render_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let mut conn_ms = Vec::new();
        for _ in 0..if quick { 3 } else { 50 } {
            let t = Instant::now();
            std::hint::black_box(get(addr, "/nothing"));
            conn_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "   a request that builds nothing (404): {:.3} ms",
            median(conn_ms)
        );
        let mut first_ms = Vec::new();
        for _ in 0..if quick { 3 } else { 50 } {
            let t = Instant::now();
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
            let mut buf = [0u8; 1];
            s.read_exact(&mut buf).unwrap();
            first_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).unwrap();
        }
        let first_byte = median(first_ms);
        println!("   /metrics to its first byte: {first_byte:.2} ms");
        println!(
            "   of which: the report {:.2} ms, its exposition {:.2} ms (medians)",
            median(collect_ms),
            median(render_ms)
        );
        println!("== /metrics with {points} points: {bytes} bytes, median {scrape:.2} ms");

        // 2. Throughput while scraped every second, interleaved with unscraped rounds.
        let round = Duration::from_millis(if quick { 50 } else { 1000 });
        let rounds = if quick { 2 } else { 15 };
        let scraping = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let scraper = {
            let (scraping, stop) = (Arc::clone(&scraping), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if scraping.load(Ordering::Relaxed) {
                        let _ = get(addr, "/metrics");
                    }
                    std::thread::sleep(Duration::from_secs(1).min(round));
                }
            })
        };
        let (mut plain, mut scraped) = (Vec::new(), Vec::new());
        throughput(round); // warm
        for _ in 0..rounds {
            scraping.store(false, Ordering::Relaxed);
            plain.push(throughput(round));
            scraping.store(true, Ordering::Relaxed);
            scraped.push(throughput(round));
        }
        stop.store(true, Ordering::Relaxed);
        scraper.join().unwrap();
        let (p, s) = (median(plain), median(scraped));
        let scrape_cost = (p - s) / p * 100.0;
        println!(
            "== throughput: unscraped {p:.0}/s, scraped every second {s:.0}/s ({scrape_cost:+.2}%)"
        );

        // 3. A profile request against the heatmap itself, same rate (1 kHz), interleaved.
        let round = Duration::from_millis(if quick { 100 } else { 2000 });
        let rounds = if quick { 1 } else { 7 };
        let (mut none, mut heat, mut prof) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            none.push(throughput(round));
            let sampler = heatmap_start();
            heat.push(throughput(round));
            drop(sampler.map(|s| s.stop()));
            let secs = round.as_secs().max(1);
            let client = std::thread::spawn(move || {
                get(addr, &format!("/debug/pprof/profile?seconds={secs}"))
            });
            // Let the request start the sampler first.
            std::thread::sleep(Duration::from_millis(20));
            prof.push(throughput(round));
            let answer = client.join().unwrap();
            assert!(
                answer.starts_with(b"HTTP/1.1 200 OK"),
                "the profile request failed"
            );
        }
        let n = median(none);
        let heat_cost = (n - median(heat)) / n * 100.0;
        let prof_cost = (n - median(prof)) / n * 100.0;
        println!(
            "== throughput cost: heatmap at 1 kHz {heat_cost:+.2}%, a profile request {prof_cost:+.2}%"
        );

        if quick {
            println!("(quick run: no verdicts)");
            return;
        }
        // The figure is the server's time: the server builds the whole answer before
        // its first byte, so the first byte at the client is that time plus a loopback round
        // trip (0.13-0.17 ms above); the full transfer of ~1 MB is printed above.
        targets.target(
            "a scrape of 1,000 points: server time (first byte), median",
            first_byte,
            5.0,
            "ms",
        );
        targets.target(
            "throughput lost while scraped every second",
            scrape_cost,
            1.0,
            "%",
        );
        targets.target(
            "a profile request's cost over the heatmap's own",
            prof_cost - heat_cost,
            1.5,
            "points",
        );
        targets.finish();
    }

    fn heatmap_start() -> Option<profpoint::heatmap::Sampler> {
        profpoint::heatmap::start(profpoint::heatmap::Config::default()).ok()
    }
}

fn main() {
    #[cfg(target_os = "linux")]
    linux::main();
    #[cfg(not(target_os = "linux"))]
    println!("SKIPPED serve_targets: profpoint's benches measure its Linux build");
}
