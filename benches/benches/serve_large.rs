//! The live server with 20,000 points (feature `serve`):
//!
//! cargo bench -p profpoint-benches --features serve --bench serve_large
//!
//! - `/metrics` of 20,000 points: the whole answer at the client (send to last byte), median
//!   of 10, against its limit, with the process's CPU a request;
//! - many requests of the JSON at once: all answered, how many distinct answers (reports)
//!   they got, the wall time until the last and the process's CPU;
//! - 40 clients that send a request and never read: a scrape's median beside them, and
//!   how many of 10 were answered 200;
//! - a flood of 32 clients without the token at a server with one: at least 99% of 100
//!   scrapes with the token answered, the flood's requests and the process's CPU share
//!   meanwhile.
//!
//! Under `cargo test --benches` it only checks that it runs (a few requests, no verdicts).

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    use profpoint_benches::thousand_points as thousand;

    thousand!(k00);
    thousand!(k01);
    thousand!(k02);
    thousand!(k03);
    thousand!(k04);
    thousand!(k05);
    thousand!(k06);
    thousand!(k07);
    thousand!(k08);
    thousand!(k09);
    thousand!(k10);
    thousand!(k11);
    thousand!(k12);
    thousand!(k13);
    thousand!(k14);
    thousand!(k15);
    thousand!(k16);
    thousand!(k17);
    thousand!(k18);
    thousand!(k19);

    /// Every one of the 20,000 points called once.
    fn touch_all() {
        for f in [
            k00::touch,
            k01::touch,
            k02::touch,
            k03::touch,
            k04::touch,
            k05::touch,
            k06::touch,
            k07::touch,
            k08::touch,
            k09::touch,
            k10::touch,
            k11::touch,
            k12::touch,
            k13::touch,
            k14::touch,
            k15::touch,
            k16::touch,
            k17::touch,
            k18::touch,
            k19::touch,
        ] {
            f();
        }
    }

    /// One request; the status line's code and the body's length (0, 0 when the connection
    /// failed or was closed without an answer).
    fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, usize) {
        let (code, body) = get_body(addr, path, token);
        (code, body.len())
    }

    /// One request; the status line's code and the body (0 and nothing when the connection
    /// failed or was closed without an answer).
    fn get_body(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, Vec<u8>) {
        let Ok(mut s) = TcpStream::connect(addr) else {
            return (0, Vec::new());
        };
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        if s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n").as_bytes())
            .is_err()
        {
            return (0, Vec::new());
        }
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let code = std::str::from_utf8(out.get(9..12).unwrap_or_default())
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(Vec::new(), |i| out[i + 4..].to_vec());
        (code, body)
    }

    /// The calling thread's CPU time.
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub(crate) fn main() {
        let quick = !std::env::args().any(|a| a == "--bench");
        profpoint::set_budget(None);
        touch_all();
        let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
        let points = profpoint::snapshot().points.len();
        let mut targets = profpoint_benches::Targets::default();

        // 1. /metrics alone.
        let n = if quick { 2 } else { 10 };
        get(addr, "/metrics", None);
        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
        let mut bytes = 0;
        for _ in 0..n {
            let c = profpoint_benches::process_cpu();
            let t = Instant::now();
            let (code, b) = get(addr, "/metrics", None);
            wall.push(t.elapsed().as_secs_f64() * 1e3);
            cpu.push(
                profpoint_benches::process_cpu()
                    .saturating_sub(c)
                    .as_secs_f64()
                    * 1e3,
            );
            assert_eq!(code, 200);
            bytes = b;
        }
        let single_cpu = median(&mut cpu);
        let single_wall = median(&mut wall);
        println!(
            "/metrics: {points} points, {:.1} MB, {single_wall:.1} ms to the last byte, {single_cpu:.1} ms of the process's CPU (medians of {n})",
            bytes as f64 / 1e6
        );
        if !quick {
            targets.target("/metrics of 20,000 points", single_wall, 200.0, "ms");
        }

        // The table of the same points.
        let mut table = Vec::new();
        let mut table_bytes = 0;
        for _ in 0..n {
            let t = Instant::now();
            let (code, b) = get(addr, "/debug/profpoint", None);
            table.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(code, 200);
            table_bytes = b;
        }
        let table_ms = median(&mut table);
        println!(
            "/debug/profpoint (the table): {:.1} MB, {table_ms:.1} ms to the last byte (median of {n})",
            table_bytes as f64 / 1e6
        );
        if !quick {
            targets.target("the table of 20,000 points", table_ms, 1000.0, "ms");
        }

        // 2. 32 requests at once.
        let k = 32;
        let barrier = Arc::new(Barrier::new(k + 1));
        let c = profpoint_benches::process_cpu();
        let handles: Vec<_> = (0..k)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    b.wait();
                    let t = Instant::now();
                    // The JSON: it holds its report's wall time, so two reports never answer
                    // the same bytes (the exposition of idle points would).
                    let (code, body) = get_body(addr, "/debug/profpoint?format=json", None);
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    std::hash::Hash::hash(&body, &mut h);
                    ((code, std::hash::Hasher::finish(&h)), t.elapsed())
                })
            })
            .collect();
        barrier.wait();
        let t = Instant::now();
        let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all = t.elapsed().as_secs_f64() * 1e3;
        let burst_cpu = profpoint_benches::process_cpu()
            .saturating_sub(c)
            .as_secs_f64()
            * 1e3;
        let ok = got.iter().filter(|((code, _), _)| *code == 200).count();
        let slowest = got
            .iter()
            .map(|(_, d)| d.as_secs_f64() * 1e3)
            .fold(0.0, f64::max);
        let mut distinct: Vec<u64> = got.iter().map(|((_, h), _)| *h).collect();
        distinct.sort_unstable();
        distinct.dedup();
        println!(
            "32 JSON requests at once: {ok} of {k} answered 200 from {} distinct answers (reports), the last after {all:.0} ms (slowest {slowest:.0} ms), {burst_cpu:.0} ms of the process's CPU, the 32 clients' reading included",
            distinct.len(),
        );
        if !quick {
            targets.target(
                "32 requests at once: reports built for them",
                distinct.len() as f64,
                3.0,
                "",
            );
        }

        // 3. 40 clients that never read.
        let mut idle: Vec<TcpStream> = (0..40)
            .filter_map(|_| {
                let mut s = TcpStream::connect(addr).ok()?;
                s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    .ok()?;
                Some(s)
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let (mut beside, mut answered) = (Vec::new(), 0);
        for _ in 0..n {
            let t = Instant::now();
            let (code, _) = get(addr, "/metrics", None);
            beside.push(t.elapsed().as_secs_f64() * 1e3);
            answered += usize::from(code == 200);
        }
        idle.clear();
        println!(
            "beside 40 clients that never read: {answered} of {n} scrapes answered 200, median {:.0} ms (alone {single_wall:.0} ms)",
            median(&mut beside)
        );
        if !quick {
            targets.target(
                "scrapes answered beside 40 clients that never read",
                -100.0 * answered as f64 / n as f64,
                -100.0,
                "% (negated: all)",
            );
        }

        // 4. A flood without the token.
        let token = "bench-token";
        let guarded = profpoint::serve_with(
            "127.0.0.1:0",
            profpoint::ServeOptions::new().token(Some(token.into())),
        )
        .unwrap()
        .local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flooded = Arc::new(AtomicU64::new(0));
        let c = profpoint_benches::process_cpu();
        let mine = thread_cpu();
        let flood: Vec<_> = (0..32)
            .map(|_| {
                let (stop, flooded) = (stop.clone(), flooded.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        get(guarded, "/metrics", None);
                        flooded.fetch_add(1, Ordering::Relaxed);
                    }
                    thread_cpu()
                })
            })
            .collect();
        let scrapes = if quick { 3 } else { 100 };
        let t = Instant::now();
        let mut legit = 0;
        for _ in 0..scrapes {
            legit +=
                usize::from(get(guarded, "/debug/profpoint?format=json", Some(token)).0 == 200);
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        let clients: Duration = flood
            .into_iter()
            .map(|f| f.join().unwrap())
            .sum::<Duration>()
            + thread_cpu().saturating_sub(mine);
        let secs = t.elapsed().as_secs_f64();
        let all = profpoint_benches::process_cpu().saturating_sub(c);
        // The server's share: the process's CPU less its client threads' own.
        let server = all.saturating_sub(clients).as_secs_f64();
        println!(
            "flood of 32 without the token: {legit} of {scrapes} scrapes with it answered 200 over {secs:.1} s, {} flood requests; the server's threads used {:.0}% of a core (the process, its 33 clients included, {:.0}%)",
            flooded.load(Ordering::Relaxed),
            100.0 * server / secs,
            100.0 * all.as_secs_f64() / secs
        );
        if !quick {
            targets.target(
                "scrapes answered during a flood without the token",
                -100.0 * legit as f64 / scrapes as f64,
                -99.0,
                "% (negated: at least 99)",
            );
        }
        targets.finish();
    }
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIPPED: the server's benches measure Linux");
}
