//! Live reports over HTTP (feature `serve`): every endpoint, the loopback default,
//! the token, and hostile clients (garbage, half requests, oversized heads, 1,000 connections)
//! that get an error or are dropped, and never stall the application or other requests.

mod common;
#[path = "serve/pprof.rs"]
mod pprof;

use sha2::Digest;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[profpoint::profile_point]
#[inline(never)]
fn served(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).wrapping_add(1))
}

/// One server for the tests that need no special options.
fn server() -> SocketAddr {
    static S: OnceLock<SocketAddr> = OnceLock::new();
    *S.get_or_init(|| {
        profpoint::set_budget(None);
        profpoint::serve("127.0.0.1:0").unwrap().local_addr()
    })
}

/// Sends `raw` and reads the answer until the server closes (10 s at most).
fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn get(addr: SocketAddr, path: &str) -> String {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes(),
    )
}

fn body(resp: &str) -> &str {
    resp.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[test]
fn every_endpoint_answers() {
    let addr = server();
    let mut x = 0;
    for _ in 0..1234 {
        x = served(x);
    }
    let index = get(addr, "/");
    assert!(index.starts_with("HTTP/1.1 200 OK\r\n"), "{index}");
    for link in ["/metrics", "/debug/profpoint", "format=json", "last=60s"] {
        assert!(index.contains(link), "{index}");
    }
    let m = get(addr, "/metrics");
    assert!(m.starts_with("HTTP/1.1 200 OK\r\n"), "{m}");
    assert!(m.contains("Content-Type: text/plain; version=0.0.4"), "{m}");
    assert!(m.contains("# TYPE profpoint_calls_total counter"), "{m}");
    let calls = body(&m)
        .lines()
        .find(|l| l.starts_with("profpoint_calls_total{") && l.contains("serve::served\""))
        .expect("a series for the point");
    let n: f64 = calls.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 1234.0, "{calls}");
    assert!(
        body(&m).contains(&format!(
            "profpoint_run_info{{pid=\"{}\"",
            std::process::id()
        )),
        "{m}"
    );
    let t = get(addr, "/debug/profpoint");
    assert!(
        t.contains("Profile Points") && t.contains("serve::served"),
        "{t}"
    );
    let j = get(addr, "/debug/profpoint?format=json");
    assert!(j.contains("Content-Type: application/json"), "{j}");
    let v: serde_json::Value = serde_json::from_str(body(&j)).unwrap();
    let nr = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "serve::served")
        .unwrap()["nr"]
        .as_u64()
        .unwrap();
    assert!(nr >= 1234);
    // The last-minute view: an interval (from the history's first report to now).
    let l = get(addr, "/debug/profpoint?last=60s&format=json");
    let v: serde_json::Value = serde_json::from_str(body(&l)).unwrap();
    assert!(v["interval"]["to_ns"].as_u64().unwrap() > 0, "{l}");
    assert!(get(addr, "/debug/profpoint?last=60s").contains("Interval 0: "));
    // Errors, each with its status.
    assert!(get(addr, "/nothing").starts_with("HTTP/1.1 404 "));
    assert!(get(addr, "/debug/profpoint?format=xml").starts_with("HTTP/1.1 400 "));
    assert!(get(addr, "/debug/profpoint?last=soon").starts_with("HTTP/1.1 400 "));
    let post = exchange(addr, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
    let head = exchange(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n") && body(&head).is_empty());
}

#[test]
fn only_loopback_unless_asked() {
    let e = profpoint::serve("0.0.0.0:0").unwrap_err();
    assert!(matches!(e, profpoint::ServeError::NotLoopback(_)), "{e}");
    assert!(e.to_string().contains("not a loopback address"), "{e}");
    let e = profpoint::serve("no such host:80").unwrap_err();
    assert!(e.to_string().contains("expected HOST:PORT"), "{e}");
    let s =
        profpoint::serve_with("0.0.0.0:0", profpoint::ServeOptions::new().public(true)).unwrap();
    let port = s.local_addr().port();
    let r = get(SocketAddr::from(([127, 0, 0, 1], port)), "/metrics");
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
}

#[test]
fn a_token_is_required_when_set() {
    let s = profpoint::serve_with(
        "127.0.0.1:0",
        profpoint::ServeOptions::new().token(Some("s3cret".into())),
    )
    .unwrap();
    let a = s.local_addr();
    let r = get(a, "/metrics");
    assert!(r.starts_with("HTTP/1.1 401 "), "{r}");
    assert!(r.contains("WWW-Authenticate: Bearer"), "{r}");
    let wrong = exchange(
        a,
        b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer s3cre7\r\n\r\n",
    );
    assert!(wrong.starts_with("HTTP/1.1 401 "), "{wrong}");
    let ok = exchange(
        a,
        b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n",
    );
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
}

/// The live page at `/`: one document whose script and style are inline, that names no other
/// site and whose policy lets it load nothing and connect nowhere but the server (the browser
/// test, scripts/live-view, watches every request it makes). Names reach it only as text:
/// its script never writes HTML (a `<script>` in a point's name is shown, not run).
#[test]
fn the_page_is_whole_and_keeps_to_itself() {
    let r = get(server(), "/");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    let (head, page) = r.split_once("\r\n\r\n").unwrap();
    assert!(
        head.contains("Content-Type: text/html; charset=utf-8"),
        "{head}"
    );
    let csp = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Security-Policy: "))
        .expect("a Content-Security-Policy");
    for part in [
        "default-src 'none'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(head.contains("Referrer-Policy: no-referrer"), "{head}");
    assert!(head.contains("X-Content-Type-Options: nosniff"), "{head}");
    assert!(page.starts_with("<!doctype html>") && page.trim_end().ends_with("</html>"));
    assert!(page.contains("<script>") && page.contains("<style>"));
    for external in ["http:", "https:", "//cdn", " src=", "@import", "url("] {
        assert!(!page.contains(external), "the page names {external:?}");
    }
    let script = &page[page.find("<script>").unwrap()..page.find("</script>").unwrap()];
    for writes_html in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
    ] {
        assert!(
            !script.contains(writes_html),
            "the script uses {writes_html}"
        );
    }
    assert!(script.contains("/debug/profpoint?format=json"));
    // The policy runs this script and applies this style sheet, and no other inline one.
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    for (tag, what) in [("script", "script-src"), ("style", "style-src")] {
        let open = format!("<{tag}>");
        let from = page.find(&open).unwrap() + open.len();
        let to = page.find(&format!("</{tag}>")).unwrap();
        assert_eq!(page.matches(&open).count(), 1, "one inline {tag}");
        let hash = base64(&sha2::Sha256::digest(&page.as_bytes()[from..to]));
        let want = format!("{what} 'sha256-{hash}'");
        assert!(
            csp.contains(&want),
            "the policy does not name the page's {tag} (set its constant in endpoints.rs to {hash}): {csp}"
        );
    }
}

/// Standard base64 with padding (what a policy's hash source is written in).
fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// With a token, the page is served to a request that carries it, as the header or, for the
/// page alone (a browser opening a link sends no header), as `?token=` in its address,
/// decoded as the page's own script reads it; every other address wants the header. The page
/// sends the token as the header on every request it makes.
#[test]
fn the_page_is_covered_by_the_token() {
    let token = "s3 cr+t/%";
    let a = profpoint::serve_with(
        "127.0.0.1:0",
        profpoint::ServeOptions::new().token(Some(token.into())),
    )
    .unwrap()
    .local_addr();
    let bare = get(a, "/");
    assert!(bare.starts_with("HTTP/1.1 401 "), "{bare}");
    assert!(body(&bare).contains("/?token=TOKEN"), "{bare}");
    assert!(!bare.contains("<script>"), "{bare}");
    let encoded = "s3+cr%2Bt%2F%25";
    let ok = get(a, &format!("/?token={encoded}"));
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
    assert!(body(&ok).contains("<script>"));
    let also = get(a, &format!("/?x=1&token={encoded}&y=2"));
    assert!(also.starts_with("HTTP/1.1 200 OK"), "{also}");
    for wrong in ["s3+cr%2Bt%2F", "s3%20cr+t/%25", "", "s3+cr%2Bt%2F%25%25"] {
        let r = get(a, &format!("/?token={wrong}"));
        assert!(r.starts_with("HTTP/1.1 401 "), "{wrong}: {r}");
    }
    for other in ["/metrics", "/debug/profpoint?format=json"] {
        let sep = if other.contains('?') { '&' } else { '?' };
        let r = get(a, &format!("{other}{sep}token={encoded}"));
        assert!(r.starts_with("HTTP/1.1 401 "), "{other}: {r}");
        let r = exchange(
            a,
            format!(
                "GET {other} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\r\n"
            )
            .as_bytes(),
        );
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{other}: {r}");
    }
    let header = exchange(
        a,
        format!("GET / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\r\n")
            .as_bytes(),
    );
    assert!(header.starts_with("HTTP/1.1 200 OK"), "{header}");
    let page = body(&header);
    assert!(page.contains("get(\"token\")") && page.contains("Authorization: \"Bearer \" + token"));
}

#[test]
fn bad_requests_get_an_error() {
    let addr = server();
    let g = exchange(addr, b"\x00\x01garbage\xff\r\n\r\n");
    assert!(g.starts_with("HTTP/1.1 400 "), "{g}");
    let mut many = String::from("GET / HTTP/1.1\r\n");
    for i in 0..40 {
        many.push_str(&format!("X-{i}: y\r\n"));
    }
    many.push_str("\r\n");
    let r = exchange(addr, many.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
    let big = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(9000));
    let r = exchange(addr, big.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431 "), "{r}");
}

/// Half requests and 1,000 connections at once: the application's own thread keeps running,
/// other requests get an answer (200, or 503 while the cap is full) at once, the
/// server's threads stay within its cap, and once the hostile connections go everything is
/// served again.
#[test]
fn hostile_clients_never_stall_the_application_or_other_requests() {
    // A server of its own: filling its cap must not disturb the other tests' server.
    let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
    // The application: a thread calling a point all along.
    static STOP: AtomicBool = AtomicBool::new(false);
    static DONE: AtomicU64 = AtomicU64::new(0);
    let app = std::thread::spawn(|| {
        let mut x = 0;
        while !STOP.load(Ordering::Relaxed) {
            x = served(x);
            DONE.fetch_add(1, Ordering::Relaxed);
        }
    });
    let threads = || -> usize {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .map(|n| n.trim().parse().unwrap())
            })
            .unwrap_or(0)
    };
    let before_threads = threads();
    // Half requests that never finish, and bare connections that send nothing.
    let mut held = Vec::new();
    for i in 0..1000 {
        match TcpStream::connect(addr) {
            Ok(mut s) => {
                if i % 2 == 0 {
                    let _ = s.write_all(b"GET /metrics HT");
                }
                held.push(s);
            }
            Err(e) => panic!("connection {i}: {e}"),
        }
    }
    // Meanwhile: the application goes on, and a request is answered within a second.
    let app_before = DONE.load(Ordering::Relaxed);
    let t = Instant::now();
    let r = get(addr, "/metrics");
    let took = t.elapsed();
    assert!(
        r.starts_with("HTTP/1.1 200 OK") || r.starts_with("HTTP/1.1 503 "),
        "{r}"
    );
    // Well under the 5 s a half request may take to arrive (a loaded machine may
    // take a while to schedule the server's threads; a stall would be 5 s or more).
    assert!(took < Duration::from_secs(4), "answered in {took:?}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        DONE.load(Ordering::Relaxed) > app_before,
        "the application stalled"
    );
    // The server's threads: its cap (32) more than before, whatever the connections (and a
    // few for the other tests of this binary, when they run in this process at the same time).
    let during = threads();
    assert!(
        during <= before_threads + 32 + 8,
        "{during} threads with 1,000 connections (before {before_threads})"
    );
    drop(held);
    // Once they are gone (and the half requests timed out: 5 s at most), 200 again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = get(addr, "/metrics");
        if r.starts_with("HTTP/1.1 200 OK") {
            break;
        }
        assert!(Instant::now() < deadline, "never served again: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
    STOP.store(true, Ordering::Relaxed);
    app.join().unwrap();
}

/// `PROFPOINT_SERVE` starts a server in any program built with the feature; it says where.
#[test]
fn profpoint_serve_starts_a_server() {
    if let Some(port_file) = std::env::var_os("PROFPOINT_SERVE_CHILD") {
        // The child: keep running until the parent has read /metrics, marked by the file.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !std::path::Path::new(&port_file).exists() && Instant::now() < deadline {
            served(1);
            std::thread::sleep(Duration::from_millis(5));
        }
        return;
    }
    let done = std::env::temp_dir().join(format!("profpoint-serve-done-{}", std::process::id()));
    std::fs::remove_file(&done).ok();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "profpoint_serve_starts_a_server", "--nocapture"])
        .env("PROFPOINT_SERVE_CHILD", &done)
        .env("PROFPOINT_SERVE", "127.0.0.1:0")
        // With the heatmap running for the whole process: every report carries it (each
        // request symbolises it on its connection's thread), and a profile request is refused.
        .env("PROFPOINT_HEATMAP", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    // The line saying where (other lines, e.g. the heatmap's, may come first).
    let mut line = String::new();
    while !line.starts_with("profpoint: serving live reports on http://") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0,
            "no line saying where it serves"
        );
    }
    let url = line
        .strip_prefix("profpoint: serving live reports on http://")
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"));
    let addr: SocketAddr = url.parse().unwrap();
    let m = get(addr, "/metrics");
    let j = get(addr, "/debug/profpoint?format=json&last=10s");
    let p = get(addr, "/debug/pprof/profile?seconds=1");
    std::fs::write(&done, b"").unwrap();
    assert!(child.wait().unwrap().success());
    std::fs::remove_file(&done).ok();
    assert!(m.starts_with("HTTP/1.1 200 OK"), "{m}");
    assert!(m.contains("serve::served"), "{m}");
    let v: serde_json::Value = serde_json::from_str(body(&j)).unwrap();
    assert_eq!(v["heatmap"].is_object(), cfg!(feature = "heatmap"), "{j}");
    assert!(v["interval"].is_object(), "{j}");
    if cfg!(feature = "heatmap") {
        assert!(p.starts_with("HTTP/1.1 409 "), "{p}");
        assert!(p.contains("already runs for the whole process"), "{p}");
    } else {
        // No sampler in this build: said, whatever PROFPOINT_HEATMAP asks.
        assert!(p.starts_with("HTTP/1.1 501 "), "{p}");
        assert!(p.contains("`heatmap` feature is off"), "{p}");
    }
}

/// Runs this test binary again as a child for test `name`, with `env` (and without
/// `PROFPOINT_SERVE_TOKEN` unless given): returns it once it has printed the addresses of
/// its servers (a line `addrs: A B...`), with those addresses. The child waits for the file
/// `done` before it exits.
fn serving_child(
    name: &str,
    env: &[(&str, &str)],
    done: &std::path::Path,
) -> (std::process::Child, Vec<SocketAddr>) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--nocapture"])
        .env("PROFPOINT_SERVE_CHILD", done)
        .env_remove("PROFPOINT_SERVE_TOKEN")
        .env_remove("PROFPOINT_SERVE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("addrs:") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0,
            "no addresses from the child"
        );
    }
    let addrs = line["addrs:".len()..]
        .split_whitespace()
        .map(|a| a.parse().unwrap())
        .collect();
    // The rest of its output (libtest's lines) is read, so it never writes into a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, addrs)
}

/// In the child: prints its servers' addresses, then waits (60 s at most) for the parent's file.
fn child_serves(addrs: &[SocketAddr]) {
    let list: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
    println!("addrs: {}", list.join(" "));
    let done = std::env::var_os("PROFPOINT_SERVE_CHILD").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::path::Path::new(&done).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn done_file(what: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("profpoint-{what}-{}", std::process::id()));
    std::fs::remove_file(&p).ok();
    p
}

/// One token rule for every server: `PROFPOINT_SERVE_TOKEN` guards a server started in code by
/// `profpoint::serve()` (401 without it, 200 with it); a server given its own token in code
/// takes that one instead.
#[test]
fn the_token_variable_guards_a_server_started_in_code() {
    if std::env::var_os("PROFPOINT_SERVE_CHILD").is_some() {
        let plain = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
        let own = profpoint::serve_with(
            "127.0.0.1:0",
            profpoint::ServeOptions::new().token(Some("own".into())),
        )
        .unwrap()
        .local_addr();
        child_serves(&[plain, own]);
        return;
    }
    let done = done_file("token");
    let (mut child, addrs) = serving_child(
        "the_token_variable_guards_a_server_started_in_code",
        &[("PROFPOINT_SERVE_TOKEN", "from-env")],
        &done,
    );
    let with = |a, t: &str| {
        exchange(
            a,
            format!("GET /metrics HTTP/1.1\r\nAuthorization: Bearer {t}\r\n\r\n").as_bytes(),
        )
    };
    let bare = get(addrs[0], "/metrics");
    let good = with(addrs[0], "from-env");
    let own_bare = get(addrs[1], "/metrics");
    let own_env = with(addrs[1], "from-env");
    let own_good = with(addrs[1], "own");
    std::fs::write(&done, b"").unwrap();
    assert!(child.wait().unwrap().success());
    std::fs::remove_file(&done).ok();
    assert!(bare.starts_with("HTTP/1.1 401 "), "{bare}");
    assert!(good.starts_with("HTTP/1.1 200 OK"), "{good}");
    assert!(own_bare.starts_with("HTTP/1.1 401 "), "{own_bare}");
    assert!(own_env.starts_with("HTTP/1.1 401 "), "{own_env}");
    assert!(own_good.starts_with("HTTP/1.1 200 OK"), "{own_good}");
}

/// A server beyond loopback without a token says so, one line each: one started by
/// `PROFPOINT_SERVE` with `PROFPOINT_SERVE_PUBLIC=1`, one started in code; a public server
/// with a token says nothing.
#[test]
fn a_public_server_without_a_token_warns_once() {
    if std::env::var_os("PROFPOINT_SERVE_CHILD").is_some() {
        let public = profpoint::ServeOptions::new().public(true);
        let bare = profpoint::serve_with("0.0.0.0:0", public.clone())
            .unwrap()
            .local_addr();
        let guarded = profpoint::serve_with("0.0.0.0:0", public.token(Some("t".into())))
            .unwrap()
            .local_addr();
        child_serves(&[bare, guarded]);
        return;
    }
    let done = done_file("public");
    let (mut child, addrs) = serving_child(
        "a_public_server_without_a_token_warns_once",
        &[
            ("PROFPOINT_SERVE", "0.0.0.0:0"),
            ("PROFPOINT_SERVE_PUBLIC", "1"),
        ],
        &done,
    );
    std::fs::write(&done, b"").unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    std::fs::remove_file(&done).ok();
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("beyond loopback without a token"))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings
            .iter()
            .any(|l| l.contains(&format!(":{} ", addrs[0].port()))),
        "{err}"
    );
    assert!(
        !warnings
            .iter()
            .any(|l| l.contains(&format!(":{} ", addrs[1].port()))),
        "{err}"
    );
    assert_eq!(err.matches("serving live reports on").count(), 1, "{err}");
}

/// Slowloris: 300 connections each sending a request head one byte every 1.5 s. Meanwhile a
/// `/metrics` request is answered at once (printed; the bench's target is 1 s, this test's
/// bound 5 s so a loaded machine does not fail it), the application's thread goes on, and no
/// thread is added
/// per slow connection. Three seconds of it (a slow connection is held 5 s).
#[test]
fn slow_clients_cannot_lock_out_a_scrape() {
    let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
    let head = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nUser-Agent: slow\r\n\r\n";
    let threads = || -> usize {
        let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    let before_threads = threads();
    let mut slow: Vec<TcpStream> = (0..300)
        .map(|i| TcpStream::connect(addr).unwrap_or_else(|e| panic!("slow connection {i}: {e}")))
        .collect();
    let opened = Instant::now();
    let start = Instant::now();
    let mut sent = 0;
    let mut worst = Duration::ZERO;
    let mut answered = 0;
    while start.elapsed() < Duration::from_secs(3) {
        // One byte on each slow connection every 1.5 s.
        if start.elapsed() >= Duration::from_millis(1500) * sent as u32 {
            for s in &mut slow {
                let _ = s.write_all(&head[sent..sent + 1]);
            }
            sent += 1;
        }
        let t = Instant::now();
        let r = get(addr, "/metrics");
        let took = t.elapsed();
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        worst = worst.max(took);
        answered += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let during = threads();
    println!(
        "/metrics beside 300 slow connections: {answered} answered, the slowest in {worst:?}; \
         threads {before_threads} -> {during}"
    );
    assert!(worst < Duration::from_secs(5), "the slowest in {worst:?}");
    assert!(
        during <= before_threads + 8,
        "{during} threads with 300 slow connections (before {before_threads})"
    );
    // The last slow connection is still held (within its 5 s): not answered, not closed.
    let s = slow.last_mut().unwrap();
    if opened.elapsed() < Duration::from_secs(4) {
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut b = [0u8; 1];
        assert!(
            matches!(s.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut),
            "a slow connection was not held"
        );
    } else {
        println!("not checked that a slow connection is held: the run took too long");
    }
}

/// Past the cap of connections whose request is still arriving: a connection that sends half
/// a request is read and answered 503 within a moment (the whole answer reaches the client,
/// no reset), and one that sends a whole request is answered as usual. A slow connection is
/// answered 408 once its 5 s have passed.
#[test]
fn connections_past_the_cap_get_a_503_not_a_reset() {
    let addr = profpoint::serve_with("127.0.0.1:0", profpoint::ServeOptions::new().max_pending(8))
        .unwrap()
        .local_addr();
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HT").unwrap();
            s
        })
        .collect();
    // Let the server accept them all before the next ones come.
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let over: Vec<std::thread::JoinHandle<std::io::Result<String>>> = (0..6)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr)?;
                s.set_read_timeout(Some(Duration::from_secs(10)))?;
                s.write_all(b"GET /metrics HTTP/1.1\r\nX-Half: ")?;
                let mut out = Vec::new();
                s.read_to_end(&mut out)?;
                Ok(String::from_utf8_lossy(&out).into_owned())
            })
        })
        .collect();
    for h in over {
        let r = h.join().unwrap().expect("an answer, not a reset");
        assert!(r.starts_with("HTTP/1.1 503 "), "{r}");
        assert!(r.contains("Retry-After: 1"), "{r}");
    }
    let took = t.elapsed();
    println!("six connections past the cap answered 503 in {took:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    // A whole request past the cap is answered.
    let m = get(addr, "/metrics");
    assert!(m.starts_with("HTTP/1.1 200 OK"), "{m}");
    // The held ones: 408 after their 5 s.
    let mut s = held.into_iter().next().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let r = String::from_utf8_lossy(&out);
    assert!(r.starts_with("HTTP/1.1 408 "), "{r}");
}

/// A client that closes its side once its request is sent (`shutdown(SHUT_WR)`) is answered.
#[test]
fn a_half_closed_client_is_answered() {
    let addr = server();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let r = String::from_utf8_lossy(&out);
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
}

/// A `PROFPOINT_SERVE` that is no address, 100 KB long with an escape sequence: one line, the
/// value in it once, escaped and cut (it was printed whole, twice).
#[test]
fn a_bad_serve_address_is_one_short_line() {
    if std::env::var_os("PROFPOINT_SERVE_CHILD").is_some() {
        child_serves(&[]);
        return;
    }
    let done = done_file("bad-address");
    let value = format!("\u{1b}[2J{}:1", "h".repeat(100_000));
    let (mut child, _) = serving_child(
        "a_bad_serve_address_is_one_short_line",
        &[("PROFPOINT_SERVE", &value)],
        &done,
    );
    std::fs::write(&done, b"").unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    std::fs::remove_file(&done).ok();
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("PROFPOINT_SERVE"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    let l = lines[0];
    println!("{} characters: {l}", l.chars().count());
    assert!(l.chars().count() <= 250, "{l}");
    assert!(!l.chars().any(char::is_control), "{l:?}");
    assert!(l.contains("\"\\u{1b}[2Jhhh"), "{l}");
    assert_eq!(l.matches("\\u{1b}").count(), 1, "{l}");
}

/// A program started with stdin, stdout or stderr closed and `PROFPOINT_SERVE` set runs as
/// without profpoint: the listener never takes the free descriptor (the Rust runtime puts
/// `/dev/null` there after profpoint's initialiser), nor does the signal thread's pipe or
/// the exit report's file, so none of 0, 1 and 2 is a socket or a pipe of profpoint's, and
/// the program's own `println!` and `eprintln!` work (the listener on 1 made `println!`
/// panic: exit 101).
#[cfg(unix)]
#[test]
fn a_closed_standard_descriptor_stays_the_programs() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("PROFPOINT_SERVE_CHILD").is_some() {
        for fd in 0..3 {
            // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: fstat of a descriptor number into a live stat.
            assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0, "fd {fd} is closed");
            assert_ne!(
                st.st_mode & libc::S_IFMT,
                libc::S_IFSOCK,
                "fd {fd} is a socket"
            );
            // The parent's stdio are pipes: a closed one is /dev/null now, a device.
            let expected = if std::env::var("PROFPOINT_TEST_CLOSED").unwrap() == fd.to_string() {
                libc::S_IFCHR
            } else {
                libc::S_IFIFO
            };
            assert_eq!(st.st_mode & libc::S_IFMT, expected, "fd {fd}");
        }
        println!("the program's own line");
        eprintln!("the program's own error line");
        return;
    }
    let report = std::env::temp_dir().join(format!("profpoint-closed-{}.json", std::process::id()));
    for closed in 0..3 {
        std::fs::remove_file(&report).ok();
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "a_closed_standard_descriptor_stays_the_programs",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PROFPOINT_SERVE_CHILD", "1")
        .env("PROFPOINT_TEST_CLOSED", closed.to_string())
        .env("PROFPOINT_SERVE", "127.0.0.1:0")
        .env("PROFPOINT_REPORT", format!("json:{}", report.display()))
        .env_remove("PROFPOINT_SERVE_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        // SAFETY: only close(2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::close(closed);
                Ok(())
            });
        }
        let o = cmd.output().unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(
            o.status.success(),
            "fd {closed} closed: {:?}\n{out}\n{err}",
            o.status
        );
        if closed != 1 {
            assert!(
                out.contains("the program's own line"),
                "fd {closed} closed: {out}"
            );
        }
        if closed != 2 {
            assert!(
                err.contains("the program's own error line"),
                "fd {closed} closed: {err}"
            );
            assert!(err.contains("profpoint: serving live reports on"), "{err}");
        }
        assert!(report.exists(), "fd {closed} closed: no report");
    }
    std::fs::remove_file(&report).ok();
}

/// The `Authorization` scheme is matched in any case, as HTTP says (RFC 7235): `bearer` and
/// `BEARER` with one or more spaces pass; another scheme with the right token does not.
#[test]
fn the_bearer_scheme_is_matched_in_any_case() {
    let a = profpoint::serve_with(
        "127.0.0.1:0",
        profpoint::ServeOptions::new().token(Some("s3cret".into())),
    )
    .unwrap()
    .local_addr();
    let with = |value: &str| {
        exchange(
            a,
            format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: {value}\r\n\r\n")
                .as_bytes(),
        )
    };
    for value in ["bearer s3cret", "BEARER s3cret", "Bearer   s3cret"] {
        let r = with(value);
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{value}: {r}");
    }
    for value in ["Basic s3cret", "Bearers3cret", "s3cret"] {
        let r = with(value);
        assert!(r.starts_with("HTTP/1.1 401 "), "{value}: {r}");
    }
}

/// A server on loopback answers only a loopback `Host` (DNS rebinding: a page of another site
/// whose name resolves to 127.0.0.1 sends that name): `evil.example` gets 421, before the
/// token is looked at; `localhost`, 127.x and `[::1]` with any port, or no `Host`, are
/// answered. A server bound beyond loopback answers any `Host`.
#[test]
fn a_loopback_server_answers_only_a_loopback_host() {
    let a = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
    let host = |addr, h: &str| {
        exchange(
            addr,
            format!("GET /metrics HTTP/1.1\r\nHost: {h}\r\n\r\n").as_bytes(),
        )
    };
    for h in [
        "evil.example",
        "evil.example:80",
        "localhost.evil.example",
        "127.0.0.1.evil.example",
        "[::2]:80",
        "10.0.0.1",
    ] {
        let r = host(a, h);
        assert!(r.starts_with("HTTP/1.1 421 "), "{h}: {r}");
    }
    for h in [
        "localhost",
        "LOCALHOST:9464",
        "127.0.0.1",
        &format!("127.0.0.1:{}", a.port()),
        "127.1.2.3:80",
        "[::1]",
        "[::1]:9464",
    ] {
        let r = host(a, h);
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{h}: {r}");
    }
    let none = exchange(a, b"GET /metrics HTTP/1.0\r\n\r\n");
    assert!(none.starts_with("HTTP/1.1 200 OK"), "{none}");
    let public = profpoint::serve_with(
        "0.0.0.0:0",
        profpoint::ServeOptions::new()
            .public(true)
            .token(Some("t".into())),
    )
    .unwrap()
    .local_addr();
    let r = exchange(
        SocketAddr::from(([127, 0, 0, 1], public.port())),
        b"GET /metrics HTTP/1.1\r\nHost: reports.example:9464\r\nAuthorization: Bearer t\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
}

/// A token given in code that cannot be used (empty, over 4,096 bytes, a control character)
/// starts no server: `serve_with` says why (an empty one served without any token before).
#[test]
fn an_unusable_token_in_code_starts_no_server() {
    for (token, why) in [
        (String::new(), "is empty"),
        ("t".repeat(5_000), "is 5000 bytes long"),
        ("a\r\nb".to_string(), "control character"),
    ] {
        match profpoint::serve_with(
            "127.0.0.1:0",
            profpoint::ServeOptions::new().token(Some(token.clone())),
        ) {
            Ok(s) => panic!("{why}: a server on {}", s.local_addr()),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("the token given in code"), "{e}");
                assert!(e.contains(why), "{e}");
                assert!(
                    !token.is_empty() && !e.contains(&token) || token.is_empty(),
                    "{e}"
                );
            }
        }
    }
}

/// A `PROFPOINT_SERVE_TOKEN` that cannot be used (not UTF-8, empty, longer than a request
/// head can carry) means no server at all, from `PROFPOINT_SERVE` nor in code, and one line
/// on stderr naming the variable and what was expected, without the secret (the server ran
/// and answered every request without a token before).
#[cfg(unix)]
#[test]
fn an_unusable_token_variable_means_no_server() {
    use std::os::unix::ffi::OsStrExt;
    if std::env::var_os("PROFPOINT_SERVE_CHILD").is_some() {
        match profpoint::serve("127.0.0.1:0") {
            Ok(s) => println!("code: served on {}", s.local_addr()),
            Err(e) => println!("code: {e}"),
        }
        return;
    }
    let long = "t".repeat(9_000);
    let cases: [(&std::ffi::OsStr, &str); 3] = [
        (std::ffi::OsStr::from_bytes(b"s3cr\xffet"), "is not UTF-8"),
        (std::ffi::OsStr::new(""), "is empty"),
        (std::ffi::OsStr::new(&long), "is 9000 bytes long"),
    ];
    for (value, why) in cases {
        let o = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "an_unusable_token_variable_means_no_server",
                "--nocapture",
            ])
            .env("PROFPOINT_SERVE_CHILD", "1")
            .env("PROFPOINT_SERVE", "127.0.0.1:0")
            .env("PROFPOINT_SERVE_TOKEN", value)
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{why}: {err}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("profpoint:"))
            .collect();
        assert_eq!(lines.len(), 1, "{why}: {err}");
        assert!(lines[0].contains("PROFPOINT_SERVE_TOKEN"), "{}", lines[0]);
        assert!(lines[0].contains(why), "{}", lines[0]);
        assert!(
            lines[0].contains("expected 1 to 4096 bytes"),
            "{}",
            lines[0]
        );
        assert!(lines[0].ends_with("no server"), "{}", lines[0]);
        assert!(
            !lines[0].contains("s3cr") && !lines[0].contains("ttt"),
            "{}",
            lines[0]
        );
        let code = out.lines().find(|l| l.starts_with("code: ")).unwrap_or("");
        assert!(code.contains("PROFPOINT_SERVE_TOKEN"), "{why}: {out}");
    }
}

/// A flood of requests without the token (8 clients in a loop) against a server answering 2
/// requests at once: every scrape that carries the token is answered 200, none 503, since a
/// request without it is answered 401 by the accept thread and takes no place among those
/// answered at once (each took one for its 401, and scrapes met 503).
#[test]
fn a_flood_without_the_token_leaves_room_for_scrapes() {
    let a = profpoint::serve_with(
        "127.0.0.1:0",
        profpoint::ServeOptions::new()
            .token(Some("s3cret".into()))
            .max_connections(2),
    )
    .unwrap()
    .local_addr();
    let stop = AtomicBool::new(false);
    let flooded = AtomicU64::new(0);
    let (ok, busy, other) = std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let r = get(a, "/metrics");
                    // 503: past the cap (the flood's own requests took the places).
                    assert!(
                        r.starts_with("HTTP/1.1 401 ")
                            || r.starts_with("HTTP/1.1 503 ")
                            || r.is_empty(),
                        "{r}"
                    );
                    flooded.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // The flood under way before the scrapes.
        let until = Instant::now() + Duration::from_secs(10);
        while flooded.load(Ordering::Relaxed) < 100 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (mut ok, mut busy, mut other) = (0, 0, Vec::new());
        for _ in 0..100 {
            let r = exchange(
                a,
                b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer s3cret\r\n\r\n",
            );
            if r.starts_with("HTTP/1.1 200 OK") {
                ok += 1;
            } else if r.starts_with("HTTP/1.1 503 ") {
                busy += 1;
            } else {
                other.push(r);
            }
        }
        stop.store(true, Ordering::Relaxed);
        (ok, busy, other)
    });
    println!(
        "scrapes beside a flood without the token ({} requests): {ok} x 200, {busy} x 503",
        flooded.load(Ordering::Relaxed)
    );
    assert!(other.is_empty(), "{other:?}");
    assert_eq!((ok, busy), (100, 0));
}
