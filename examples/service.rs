//! A small multi-threaded TCP service with annotated handlers, served live by profpoint
//! (feature `serve`), and a bounded load generator on loopback.
//!
//! ```text
//! cargo run --release -p profpoint-examples --features serve --example service -- --seconds 60
//! curl http://127.0.0.1:9464/debug/profpoint              # the table, live
//! curl http://127.0.0.1:9464/metrics                      # for Prometheus
//! curl 'http://127.0.0.1:9464/debug/profpoint?last=60s'   # about the last minute
//! ```
//!
//! The service answers one line per request: `hash N` (a little CPU) or `sort N` (more). Four
//! worker threads serve; the load generator sends `--clients` connections' worth of requests
//! (after `--delay` seconds without load) until `--seconds` have passed and prints how many of each were answered
//! (`load: hash H sort S`); the service stays up `--linger` more seconds without load (so a
//! scraper reads the final counts), then stops and prints the table at exit. With
//! `PROFPOINT_REPORT_EVERY=10s` it also writes the report every 10 s. `--odd-names 1` adds a
//! point whose name is HTML (a script, an image, entities), called ten times a second: the live
//! view's tests (scripts/live-view) check that the page and `profpoint top` show it as text.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

#[profpoint::profile_point]
fn handle_hash(n: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..n * 100 {
        h = (h ^ i).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[profpoint::profile_point]
fn handle_sort(n: u64) -> u64 {
    let mut v: Vec<u64> = (0..n * 50)
        .map(|i| i.wrapping_mul(2_654_435_761) % 1000)
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

#[profpoint::profile_point]
fn serve_connection(stream: TcpStream) -> std::io::Result<u64> {
    // One write per reply, sent at once (small writes would wait for Nagle's algorithm).
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut served = 0;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        let mut words = line.split_whitespace();
        let reply = match (words.next(), words.next().and_then(|n| n.parse().ok())) {
            (Some("hash"), Some(n)) => handle_hash(n),
            (Some("sort"), Some(n)) if n > 0 => handle_sort(n),
            _ => {
                out.write_all(b"error: expected `hash N` or `sort N`\n")?;
                continue;
            }
        };
        out.write_all(format!("{reply}\n").as_bytes())?;
        served += 1;
    }
    Ok(served)
}

fn arg(name: &str, default: u64) -> u64 {
    let mut args = std::env::args();
    while let Some(a) = args.next() {
        if a == name {
            let v = args.next().unwrap_or_default();
            return v.parse().unwrap_or_else(|_| {
                eprintln!("service: {name} {v:?}: expected a whole number");
                std::process::exit(2)
            });
        }
    }
    default
}

#[profpoint::main]
fn main() {
    let seconds = arg("--seconds", 10);
    let clients = arg("--clients", 4);
    let port = arg("--port", 9464);
    let linger = arg("--linger", 0);
    let delay = arg("--delay", 0);
    let odd_names = arg("--odd-names", 0) != 0;
    match profpoint::serve(&format!("127.0.0.1:{port}")) {
        Ok(s) => eprintln!(
            "service: live reports on http://{}/ (try /debug/profpoint and /metrics)",
            s.local_addr()
        ),
        Err(e) => eprintln!("service: no live reports: {e}"),
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().unwrap();
    // Four workers take accepted connections from a queue.
    let (tx, rx) = mpsc::channel::<TcpStream>();
    let rx = Arc::new(Mutex::new(rx));
    let total = Arc::new(AtomicU64::new(0));
    for _ in 0..4 {
        let rx = Arc::clone(&rx);
        let total = Arc::clone(&total);
        std::thread::spawn(move || {
            loop {
                let next = rx.lock().unwrap().recv();
                let Ok(stream) = next else { return };
                if let Ok(n) = serve_connection(stream) {
                    total.fetch_add(n, Ordering::Relaxed);
                }
            }
        });
    }
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            if tx.send(s).is_err() {
                return;
            }
        }
    });
    // `--delay`: serve without load first (a scraper sees the counters start from 0).
    std::thread::sleep(Duration::from_secs(delay));
    // The load: `clients` threads, each one connection after another, until the time is up.
    let stop = Arc::new(AtomicBool::new(false));
    let end = Instant::now() + Duration::from_secs(seconds);
    let sent = Arc::new(AtomicU64::new(0));
    let sorts = Arc::new(AtomicU64::new(0));
    let load: Vec<_> = (0..clients)
        .map(|c| {
            let stop = Arc::clone(&stop);
            let sent = Arc::clone(&sent);
            let sorts = Arc::clone(&sorts);
            std::thread::spawn(move || {
                let mut i = c;
                while !stop.load(Ordering::Relaxed) {
                    let Ok(s) = TcpStream::connect(addr) else {
                        return;
                    };
                    let _ = s.set_nodelay(true);
                    let mut w = s.try_clone().unwrap();
                    let mut r = BufReader::new(s);
                    let mut line = String::new();
                    for _ in 0..50 {
                        i = i.wrapping_add(7);
                        let req = if i % 5 == 0 { "sort" } else { "hash" };
                        let msg = format!("{req} {}\n", 20 + i % 80);
                        if w.write_all(msg.as_bytes()).is_err() {
                            return;
                        }
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        sent.fetch_add(1, Ordering::Relaxed);
                        if req == "sort" {
                            sorts.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        if odd_names {
            let _g = profpoint::profile_scope!(
                "<script>document.title='pwned'</script><img src=x onerror=alert(1)> &amp; &lt;b&gt;"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in load {
        let _ = t.join();
    }
    let (all, sort) = (sent.load(Ordering::Relaxed), sorts.load(Ordering::Relaxed));
    eprintln!("service: {all} requests answered in {seconds} s");
    println!("load: hash {} sort {sort}", all - sort);
    std::thread::sleep(Duration::from_secs(linger));
}
