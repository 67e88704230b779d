//! Live reports over HTTP (feature `serve`): a service that never exits shows its
//! points while it runs, to a person (`/debug/profpoint`), to Prometheus (`/metrics`), to
//! whatever reads JSON (`/debug/profpoint?format=json`) and to pprof's readers
//! (`/debug/pprof/profile`, `/debug/pprof/points`).
//!
//! # Mechanism
//! - [`serve`] (or `PROFPOINT_SERVE=127.0.0.1:PORT` at start-up) binds a listener and starts one
//!   accept thread, `profpoint-serve`. It reads every connection's request head itself, without
//!   blocking (one `poll(2)` over the listener and the connections, non-blocking sockets), and
//!   gives each whole request a thread of its own (`profpoint-http`, 8 MiB of stack reserved:
//!   a report symbolises the heatmap when it runs), up to [`ServeOptions::max_connections`] at
//!   once (default 32; past it a whole request is answered `503`). No async runtime: the
//!   application needs none. All these threads block the program's signals
//!   (`threads::spawn_quiet`).
//! - Slow clients cannot lock out a scrape: a connection has 5 s from its accept to deliver its
//!   whole request head, however the bytes trickle in (then `408`, closed), and holds one
//!   descriptor and at most 8 KiB meanwhile, no thread. [`ServeOptions::max_pending`]
//!   connections (a quarter of the descriptor limit, 64 to 1024) are held so; past it a
//!   connection has 200 ms to send its whole head (a scraper sends it at once: it is
//!   answered), else its bytes are read and it is answered `503` (not reset); past a quarter
//!   more, new connections wait in the system's listen queue. 300 connections sending a byte
//!   each 1.5 s leave a `/metrics` request answered in milliseconds (BENCHMARKS.md, "Slow
//!   clients").
//! - The request is parsed by `httparse` (hyper's parser), HTTP/1.x, `GET` and `HEAD` only, one
//!   request per connection (`Connection: close`). Bounds: 8 KiB of request head, 32 headers,
//!   5 s to arrive; past them `431` or `408`.
//! - Loopback only unless [`ServeOptions::public`] (or `PROFPOINT_SERVE_PUBLIC=1`) asks: the
//!   endpoints show function names and timings. An optional bearer token is compared in
//!   constant time. One rule for every server of the process: the token given in code
//!   ([`ServeOptions::token`]) if any, else `PROFPOINT_SERVE_TOKEN` if set, whether the server
//!   was started by `PROFPOINT_SERVE` or by [`serve`] in code. A server that listens beyond
//!   loopback without a token says so in one line on stderr.
//! - The server's own threads make no point calls: nothing of it appears in the user's table.
//! - Reports are built on one long-lived thread, `profpoint-serve-report` (a fresh connection
//!   thread paid 3x for it), one at a time; between requests it keeps a report every 10 s for
//!   the last 2 minutes, for `/debug/profpoint?last=60s`: the answer is the report now with its `interval` since the
//!   kept report closest to that age (the interval's exact bounds are in it).
//!
//! - `/debug/pprof/profile?seconds=N` (default 10, at most [`ServeOptions::max_profile_seconds`],
//!   default 60): runs the heatmap sampler for N seconds and answers what Go's
//!   `net/http/pprof` answers, a CPU profile of those N seconds as gzip pprof
//!   (`profpoint_report::cpu_pprof`): sample types `samples/count` and `cpu/nanoseconds`
//!   (cpu the default), `period_type` cpu/nanoseconds, `period` the sampling interval,
//!   `duration_nanos` the window, each sample the sampler's stack (`PROFPOINT_STACKS`; flat
//!   rows where stacks are off or unavailable). So `go tool pprof URL`, Parca and Pyroscope
//!   read it with no flag. No points' figures are in it. One at a time: a second request
//!   meanwhile gets `429`; while the heatmap already runs for the whole process, `409` (its
//!   profile is in every report); where the sampler cannot start, `503` and one line saying
//!   why. Needs the `heatmap` feature (default); without it, `501`.
//! - `/debug/pprof/points`: the points' figures since the process started as gzip pprof, one
//!   flat sample per point with `calls/count`, `self/nanoseconds` (the default) and
//!   `total/nanoseconds` (`Report::to_pprof`, without the sampler's rows).
//!
//! `scripts/test-engines` checks all this with a real Prometheus server and `go tool pprof`.

use crate::report::{Interval, Report, ReportOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// Most headers parsed.
const MAX_HEADERS: usize = 32;
/// How long a connection has to deliver its whole request head, from its accept: past it, 408
/// and closed (however the bytes trickle in).
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// How long a connection accepted past [`ServeOptions::max_pending`] has to deliver its whole
/// request head (a scraper sends it at once); past it, 503.
const OVERFLOW_READ: Duration = Duration::from_millis(200);
/// How long writing an answer may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How often the history keeps a report, and how many it keeps.
const HISTORY_EVERY: Duration = Duration::from_secs(10);
const HISTORY_KEPT: usize = 13;

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    public: bool,
    token: Option<String>,
    max_connections: usize,
    max_pending: usize,
    max_profile_seconds: u64,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            public: false,
            token: None,
            max_connections: 32,
            max_pending: default_max_pending(),
            max_profile_seconds: 60,
        }
    }
}

impl ServeOptions {
    /// Loopback only, no token, 32 connections at once.
    pub fn new() -> ServeOptions {
        ServeOptions::default()
    }

    /// Allows an address other than loopback (the endpoints show function names and
    /// timings to whoever can connect).
    pub fn public(mut self, yes: bool) -> ServeOptions {
        self.public = yes;
        self
    }

    /// Requires `Authorization: Bearer TOKEN` on every request. Without one (`None`, or not
    /// called), the server takes `PROFPOINT_SERVE_TOKEN` when it is set: that variable guards
    /// every server of the process.
    pub fn token(mut self, token: Option<String>) -> ServeOptions {
        self.token = token.filter(|t| !t.is_empty());
        self
    }

    /// The longest `/debug/pprof/profile?seconds=N` accepted (at least 1; default 60).
    pub fn max_profile_seconds(mut self, s: u64) -> ServeOptions {
        self.max_profile_seconds = s.max(1);
        self
    }

    /// Requests answered at once, each on a thread of its own (at least 1; default 32); more
    /// whole requests are answered 503.
    pub fn max_connections(mut self, n: usize) -> ServeOptions {
        self.max_connections = n.max(1);
        self
    }

    /// Connections whose request is still arriving, held at once (at least 1; default a
    /// quarter of the process's descriptor limit, from 64 to 1024). Past it a connection has
    /// 200 ms to send its whole request (then answered as any other), else it is answered 503;
    /// past a quarter more, new connections wait in the system's queue.
    pub fn max_pending(mut self, n: usize) -> ServeOptions {
        self.max_pending = n.max(1);
        self
    }
}

/// A quarter of the process's soft descriptor limit, from 64 to 1024: slow clients never hold
/// more of the host's descriptors than that.
fn default_max_pending() -> usize {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the limit into a live, writable rlimit.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            return usize::try_from(lim.rlim_cur / 4)
                .unwrap_or(1024)
                .clamp(64, 1024);
        }
    }
    256
}

/// Why [`serve`] could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The address does not parse or resolve.
    Address(String, String),
    /// Not a loopback address, and [`ServeOptions::public`] was not asked for.
    NotLoopback(SocketAddr),
    /// The listener could not be bound.
    Bind(SocketAddr, std::io::Error),
    /// Its thread could not start.
    Thread(std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Address(a, why) => {
                write!(
                    f,
                    "\"{}\" is not an address to listen on (expected HOST:PORT, e.g. 127.0.0.1:9464): {}",
                    crate::env::shown(a, 40),
                    crate::env::shown(why, crate::env::SHOWN_MAX)
                )
            }
            ServeError::NotLoopback(a) => write!(
                f,
                "{a} is not a loopback address: the endpoints show function names and timings to whoever connects; \
                 ask for it explicitly (PROFPOINT_SERVE_PUBLIC=1, or ServeOptions::public(true))"
            ),
            ServeError::Bind(a, e) => write!(f, "cannot listen on {a}: {e}"),
            ServeError::Thread(e) => write!(f, "cannot start the server's thread: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// A running server (it runs for the life of the process).
#[derive(Debug, Clone)]
pub struct Server {
    addr: SocketAddr,
}

impl Server {
    /// The address it listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Starts a server on `addr` (`127.0.0.1:9464`; port 0 picks one) with default options.
pub fn serve(addr: &str) -> Result<Server, ServeError> {
    serve_with(addr, ServeOptions::default())
}

/// Starts a server on `addr` with `opts`.
pub fn serve_with(addr: &str, mut opts: ServeOptions) -> Result<Server, ServeError> {
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| ServeError::Address(addr.to_string(), e.to_string()))?
        .next()
        .ok_or_else(|| ServeError::Address(addr.to_string(), "it resolves to nothing".into()))?;
    if !sock.ip().is_loopback() && !opts.public {
        return Err(ServeError::NotLoopback(sock));
    }
    let listener = TcpListener::bind(sock).map_err(|e| ServeError::Bind(sock, e))?;
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Bind(sock, e))?;
    // The process's token guards every server that was given none in code.
    if opts.token.is_none() {
        opts = opts.token(crate::env::var("PROFPOINT_SERVE_TOKEN"));
    }
    if !sock.ip().is_loopback() && opts.token.is_none() {
        crate::diag::warn_line!(
            "profpoint: serving {local} beyond loopback without a token: whoever can connect \
             reads function names and timings (set PROFPOINT_SERVE_TOKEN)"
        );
    }
    history_start();
    let shared = Arc::new(Shared {
        opts,
        active: AtomicUsize::new(0),
    });
    crate::threads::spawn_quiet(
        std::thread::Builder::new()
            .name("profpoint-serve".into())
            .stack_size(128 * 1024),
        move || accept_loop(listener, shared),
    )
    .map_err(ServeError::Thread)?;
    Ok(Server { addr: local })
}

/// Starts the server `PROFPOINT_SERVE` asks for (the initialiser; never waits for it).
pub(crate) fn start_from_env() {
    let Some(addr) = crate::env::var("PROFPOINT_SERVE") else {
        return;
    };
    let public = match crate::env::var("PROFPOINT_SERVE_PUBLIC") {
        None => false,
        Some(v) => match crate::env::parse_bool("PROFPOINT_SERVE_PUBLIC", &v) {
            Ok(b) => b,
            Err(e) => {
                crate::env::warn(&e, "0 (loopback only)");
                false
            }
        },
    };
    // The token: `serve_with` takes PROFPOINT_SERVE_TOKEN, as for a server started in code.
    let opts = ServeOptions::new().public(public);
    match serve_with(addr.trim(), opts) {
        Ok(s) => crate::diag::warn_line!(
            "profpoint: serving live reports on http://{} (PROFPOINT_SERVE)",
            s.local_addr()
        ),
        // The value once: an address that does not parse is in the error's own text.
        Err(e @ ServeError::Address(..)) => {
            crate::diag::warn_line!("profpoint: PROFPOINT_SERVE: {e}; no server")
        }
        Err(e) => crate::diag::warn_line!(
            "profpoint: PROFPOINT_SERVE=\"{}\": {e}; no server",
            crate::env::shown(&addr, crate::env::SHOWN_MAX)
        ),
    }
}

struct Shared {
    opts: ServeOptions,
    /// Requests being answered (their threads).
    active: AtomicUsize,
}

/// A connection whose request head is still arriving, held by the accept thread.
struct Arriving {
    stream: TcpStream,
    head: Vec<u8>,
    /// When it is closed if its head has not come whole.
    deadline: Instant,
    /// Accepted past [`ServeOptions::max_pending`]: a brief read ([`OVERFLOW_READ`]), then a 503.
    over: bool,
}

/// What a connection's bytes so far make.
enum Head {
    /// Not whole yet.
    Partial,
    /// A whole request head (parsed again by the thread that answers it).
    Whole,
    /// An answer without a request: 400 or 431.
    Refused(Response),
    /// Closed by the client (or failed): nothing to answer.
    Gone,
}

/// The accept thread: accepts, reads every connection's request head without blocking (one
/// `poll(2)` over them all), closes the ones whose head does not come whole within
/// [`HEAD_DEADLINE`], and hands each whole request to a thread of its own.
fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let _ = listener.set_nonblocking(true);
    let pending_cap = shared.opts.max_pending;
    let overflow_cap = (pending_cap / 4).clamp(8, 64);
    let mut conns: Vec<Arriving> = Vec::new();
    loop {
        let now = Instant::now();
        // Past their deadline: 408 (a slow request), or 503 (past the cap, not whole in time).
        let mut i = 0;
        while i < conns.len() {
            if conns[i].deadline <= now {
                let mut c = conns.swap_remove(i);
                if c.over {
                    // What it sent is read first: unread bytes at close would reset the
                    // connection before the client reads the 503.
                    let _ = read_more(&mut c);
                    answer_now(c.stream, &busy());
                } else {
                    answer_now(
                        c.stream,
                        &Response::text("408 Request Timeout", "request too slow\n"),
                    );
                }
            } else {
                i += 1;
            }
        }
        let room = conns.len() < pending_cap + overflow_cap;
        let next = conns.iter().map(|c| c.deadline).min();
        let (listener_ready, ready) = wait_ready(&listener, room, &conns, next);
        // Backwards: `swap_remove` brings in a connection already looked at.
        for i in (0..conns.len()).rev() {
            if !ready[i] {
                continue;
            }
            match read_more(&mut conns[i]) {
                Head::Partial => {}
                Head::Gone => {
                    conns.swap_remove(i);
                }
                Head::Refused(resp) => answer_now(conns.swap_remove(i).stream, &resp),
                Head::Whole => {
                    let c = conns.swap_remove(i);
                    dispatch(c.stream, c.head, &shared);
                }
            }
        }
        if listener_ready {
            // Every connection waiting, while there is room; the rest stay queued in the
            // kernel's backlog until there is.
            while conns.len() < pending_cap + overflow_cap {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(true);
                        let reading = conns.iter().filter(|c| !c.over).count();
                        let over = reading >= pending_cap;
                        let now = Instant::now();
                        conns.push(Arriving {
                            stream,
                            head: Vec::new(),
                            deadline: now + if over { OVERFLOW_READ } else { HEAD_DEADLINE },
                            over,
                        });
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        // Out of descriptors or a connection reset before accept: wait a little.
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                }
            }
        }
    }
}

/// Waits until the listener (when `accepting`) or a connection has something to read, or until
/// `until`: which of them are ready (the listener, then each of `conns`).
#[cfg(unix)]
fn wait_ready(
    listener: &TcpListener,
    accepting: bool,
    conns: &[Arriving],
    until: Option<Instant>,
) -> (bool, Vec<bool>) {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(conns.len() + 1);
    fds.push(libc::pollfd {
        // A negative descriptor is skipped by poll: not accepting while there is no room.
        fd: if accepting { listener.as_raw_fd() } else { -1 },
        events: libc::POLLIN,
        revents: 0,
    });
    fds.extend(conns.iter().map(|c| libc::pollfd {
        fd: c.stream.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }));
    let timeout = until.map_or(-1, |t| {
        // Rounded up: a deadline is never met by waking a millisecond early, over and over.
        let left = t.saturating_duration_since(Instant::now());
        left.as_micros().div_ceil(1000).min(60_000) as libc::c_int
    });
    // SAFETY: `fds` is a live, writable array of `fds.len()` pollfd values; poll writes only
    // their `revents`.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
    if n <= 0 {
        // Timed out or interrupted (EINTR): the caller looks at its deadlines again.
        return (false, vec![false; conns.len()]);
    }
    let ready = |p: &libc::pollfd| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    (ready(&fds[0]), fds[1..].iter().map(ready).collect())
}

/// Elsewhere (no `poll` here): the listener and every connection are tried each 10 ms (none of
/// them blocks).
#[cfg(not(unix))]
fn wait_ready(
    _listener: &TcpListener,
    accepting: bool,
    conns: &[Arriving],
    until: Option<Instant>,
) -> (bool, Vec<bool>) {
    let left = until.map_or(Duration::from_millis(10), |t| {
        t.saturating_duration_since(Instant::now())
    });
    std::thread::sleep(left.min(Duration::from_millis(10)));
    (accepting, vec![true; conns.len()])
}

/// Reads what the connection has sent (without blocking) and says what its head is now.
fn read_more(c: &mut Arriving) -> Head {
    let mut chunk = [0u8; 2048];
    // The client closed its side: what it sent before may still be a whole request (a client
    // may half-close after its request).
    let mut eof = false;
    loop {
        let room = MAX_HEAD - c.head.len();
        if room == 0 {
            break;
        }
        let want = room.min(chunk.len());
        match c.stream.read(&mut chunk[..want]) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => c.head.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Head::Gone,
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(&c.head) {
        Ok(httparse::Status::Complete(_)) => Head::Whole,
        Ok(httparse::Status::Partial) if c.head.len() == MAX_HEAD => Head::Refused(Response::text(
            "431 Request Header Fields Too Large",
            format!("the request head is over {MAX_HEAD} bytes\n"),
        )),
        // Half a request and nothing more to come.
        Ok(httparse::Status::Partial) if eof => Head::Gone,
        Ok(httparse::Status::Partial) => Head::Partial,
        Err(httparse::Error::TooManyHeaders) => Head::Refused(Response::text(
            "431 Request Header Fields Too Large",
            format!("more than {MAX_HEADERS} headers\n"),
        )),
        Err(e) => Head::Refused(Response::text("400 Bad Request", format!("{e}\n"))),
    }
}

/// The answer to a connection past a cap.
fn busy() -> Response {
    let mut r = Response::text("503 Service Unavailable", "busy; try again\n");
    r.extra.push(("Retry-After", "1".into()));
    r
}

/// Answers a short response from the accept thread, without blocking (a fresh connection's
/// send buffer takes it whole; one that does not is dropped), and closes the connection.
fn answer_now(mut s: TcpStream, resp: &Response) {
    let _ = s.write(&encode(resp, false));
    let _ = s.shutdown(std::net::Shutdown::Write);
}

/// A whole request: answered on a thread of its own, up to [`ServeOptions::max_connections`]
/// at once; past them, 503 at once.
fn dispatch(stream: TcpStream, head: Vec<u8>, shared: &Arc<Shared>) {
    // Relaxed: a count for a cap; the thread's own decrement is all that matters.
    if shared.active.fetch_add(1, Ordering::Relaxed) >= shared.opts.max_connections {
        shared.active.fetch_sub(1, Ordering::Relaxed);
        answer_now(stream, &busy());
        return;
    }
    let sh = Arc::clone(shared);
    // A thread that cannot start drops its connection, closed unanswered.
    let spawned = crate::threads::spawn_quiet(
        // 8 MiB (reserved, touched as used): a report symbolises the heatmap's functions
        // (DWARF, inlined frames) when it runs, which needs far more than a small stack.
        std::thread::Builder::new()
            .name("profpoint-http".into())
            .stack_size(8 << 20),
        move || {
            handle(stream, &head, &sh.opts);
            sh.active.fetch_sub(1, Ordering::Relaxed);
        },
    );
    if spawned.is_err() {
        shared.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response.
struct Response {
    status: &'static str,
    content_type: &'static str,
    extra: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Response {
    fn text(status: &'static str, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            extra: Vec::new(),
            body: body.into().into_bytes(),
        }
    }
}

/// The response's bytes: its head, and its body unless `head_only`.
fn encode(resp: &Response, head_only: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n",
        resp.status,
        resp.content_type,
        resp.body.len()
    );
    for (k, v) in &resp.extra {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head_only {
        bytes.extend_from_slice(&resp.body);
    }
    bytes
}

/// Answers a whole request head (read by the accept thread) on its own thread.
fn handle(mut s: TcpStream, head: &[u8], opts: &ServeOptions) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(REQUEST_DEADLINE));
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let (resp, head_only) = match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => (respond(&req, opts), req.method == Some("HEAD")),
        // The accept thread parsed it whole already.
        _ => (Response::text("400 Bad Request", "bad request\n"), false),
    };
    let _ = s.write_all(&encode(&resp, head_only));
    let _ = s.flush();
}

/// Equal, in time that depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn respond(req: &httparse::Request<'_, '_>, opts: &ServeOptions) -> Response {
    if let Some(token) = &opts.token {
        let given = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("authorization"))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
            let mut r = Response::text("401 Unauthorized", "a bearer token is required\n");
            r.extra.push(("WWW-Authenticate", "Bearer".into()));
            return r;
        }
    }
    if !matches!(req.method, Some("GET" | "HEAD")) {
        let mut r = Response::text("405 Method Not Allowed", "GET or HEAD only\n");
        r.extra.push(("Allow", "GET, HEAD".into()));
        return r;
    }
    let target = req.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    };
    match path {
        "/" => Response {
            status: "200 OK",
            content_type: "text/html; charset=utf-8",
            extra: Vec::new(),
            body: INDEX.as_bytes().to_vec(),
        },
        "/metrics" => match on_report_thread(metrics) {
            Some(m) => Response {
                status: "200 OK",
                content_type: "text/plain; version=0.0.4; charset=utf-8",
                extra: Vec::new(),
                body: m.into_bytes(),
            },
            None => Response::text("500 Internal Server Error", "the report failed\n"),
        },
        "/debug/profpoint" => {
            let (format, last) = (
                param("format").map(String::from),
                param("last").map(String::from),
            );
            on_report_thread(move || debug_profpoint(format.as_deref(), last.as_deref()))
                .unwrap_or_else(|| {
                    Response::text("500 Internal Server Error", "the report failed\n")
                })
        }
        "/debug/pprof/profile" => pprof_profile(param("seconds"), opts.max_profile_seconds),
        "/debug/pprof/points" => match on_report_thread(points_pprof) {
            Some(body) => Response {
                status: "200 OK",
                content_type: "application/octet-stream",
                extra: vec![(
                    "Content-Disposition",
                    "attachment; filename=\"points.pb.gz\"".into(),
                )],
                body,
            },
            None => Response::text("500 Internal Server Error", "the report failed\n"),
        },
        _ => Response::text("404 Not Found", "no such page; see /\n"),
    }
}

const INDEX: &str = "<!doctype html>\n<html><head><title>profpoint</title></head><body>\n\
<h1>profpoint</h1>\n<ul>\n\
<li><a href=\"/metrics\">/metrics</a>: the points and tracepoint hits in Prometheus's text format (counters, latency summaries, run labels)</li>\n\
<li><a href=\"/debug/profpoint\">/debug/profpoint</a>: the points table now, as at exit</li>\n\
<li><a href=\"/debug/profpoint?format=json\">/debug/profpoint?format=json</a>: the whole report as JSON (docs/report-schema.md)</li>\n\
<li><a href=\"/debug/pprof/profile?seconds=10\">/debug/pprof/profile?seconds=10</a>: a CPU profile of the next 10 s with its stacks (the heatmap sampler), gzip pprof as Go's: <code>go tool pprof URL</code></li>\n\
<li><a href=\"/debug/pprof/points\">/debug/pprof/points</a>: the points' calls, self and total time since the start, gzip pprof (self time the default)</li>\n\
<li><a href=\"/debug/profpoint?last=60s\">/debug/profpoint?last=60s</a>: the table with the calls of about the last minute (up to 2 minutes, in 10 s steps; add &amp;format=json)</li>\n\
</ul>\n</body></html>\n";

fn collect() -> Report {
    crate::report::collect(&ReportOptions::default())
}

/// `/metrics`: the report's exposition, and one series naming the run.
fn metrics() -> String {
    let r = collect();
    let mut o = r.to_prometheus();
    let label = crate::report::prometheus::label;
    o.push_str("# HELP profpoint_run_info The profiled process: its id, command and start time (Unix seconds).\n");
    o.push_str("# TYPE profpoint_run_info gauge\n");
    o.push_str(&format!(
        "profpoint_run_info{{pid=\"{}\",command=\"{}\",start_unix_s=\"{}\"}} 1\n",
        r.run.pid,
        label(&r.run.command.join(" ")),
        r.run.start_unix_ns / 1_000_000_000
    ));
    o
}

fn debug_profpoint(format: Option<&str>, last: Option<&str>) -> Response {
    let mut r = collect();
    if let Some(last) = last {
        let age = match crate::env::parse_every(last) {
            Ok(d) => d,
            Err(_) => {
                return Response::text(
                    "400 Bad Request",
                    format!("last={last:?}: expected a duration with its unit (e.g. 60s, 2m)\n"),
                );
            }
        };
        r.interval = Some(history_interval(&r, age));
    }
    match format {
        None | Some("table") => Response::text("200 OK", r.to_table()),
        Some("json") => Response {
            status: "200 OK",
            content_type: "application/json",
            extra: Vec::new(),
            body: r.to_json().into_bytes(),
        },
        Some(other) => Response::text(
            "400 Bad Request",
            format!("format={other:?}: expected table or json\n"),
        ),
    }
}

/// `/debug/pprof/profile`: the sampler's profile of the next `seconds`, with its stacks, as
/// Go's `net/http/pprof` answers it (gzip pprof, `samples/count` and `cpu/nanoseconds`): no
/// points in it (they are `/debug/pprof/points`).
fn pprof_profile(seconds: Option<&str>, max: u64) -> Response {
    let secs = match seconds.map(str::parse::<u64>) {
        None => 10,
        Some(Ok(n)) if (1..=max).contains(&n) => n,
        Some(_) => {
            return Response::text(
                "400 Bad Request",
                format!(
                    "seconds={:?}: expected a whole number of seconds from 1 to {max}\n",
                    seconds.unwrap_or_default()
                ),
            );
        }
    };
    #[cfg(feature = "heatmap")]
    {
        use crate::sampling::ProfileError;
        static BUSY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        // AcqRel: one profile at a time.
        if BUSY.swap(true, Ordering::AcqRel) {
            return Response::text(
                "429 Too Many Requests",
                "a profile is being taken; one at a time\n",
            );
        }
        // On a thread of the usual 8 MiB stack: symbolising the profile (DWARF, inlined
        // frames) and the compressor's state need far more stack than a connection thread has.
        let made = crate::threads::spawn_quiet(
            std::thread::Builder::new()
                .name("profpoint-profile".into())
                .stack_size(8 << 20),
            move || {
                let w = crate::sampling::profile_for(Duration::from_secs(secs))?;
                let run = crate::report::run_info();
                let program = run.command.first().map_or("", String::as_str);
                // Gzipped, once.
                Ok(profpoint_report::cpu_pprof(
                    &w.report,
                    program,
                    w.start_unix_ns,
                    w.duration_ns,
                ))
            },
        )
        .map_err(|e| ProfileError::Unavailable(format!("cannot start the profile's thread: {e}")))
        .and_then(|t| {
            t.join()
                .unwrap_or_else(|_| Err(ProfileError::Unavailable("the profile panicked".into())))
        });
        BUSY.store(false, Ordering::Release);
        let body = match made {
            Ok(b) => b,
            Err(ProfileError::Taken(why)) => {
                return Response::text("409 Conflict", format!("{why}\n"));
            }
            Err(ProfileError::Unavailable(why)) => {
                return Response::text("503 Service Unavailable", format!("{why}\n"));
            }
        };
        Response {
            status: "200 OK",
            content_type: "application/octet-stream",
            extra: vec![(
                "Content-Disposition",
                "attachment; filename=\"profile.pb.gz\"".into(),
            )],
            body,
        }
    }
    #[cfg(not(feature = "heatmap"))]
    {
        let _ = secs;
        Response::text(
            "501 Not Implemented",
            "this build has no sampler (profpoint's `heatmap` feature is off)\n",
        )
    }
}

/// `/debug/pprof/points`: the points' figures since the process started (calls, self and total
/// time, self the default) as gzip pprof, one flat sample per point (`Report::to_pprof`);
/// the sampler's rows are left out (they are `/debug/pprof/profile`).
fn points_pprof() -> Vec<u8> {
    let r = collect();
    #[cfg(feature = "heatmap")]
    let r = Report { heatmap: None, ..r };
    r.to_pprof()
}

/// Reports kept for `?last=` (oldest first), with when each was taken.
static HISTORY: Mutex<Vec<(Instant, Report)>> = Mutex::new(Vec::new());

/// A job for the report thread.
type Job = Box<dyn FnOnce() + Send>;

/// The report thread's queue (set once it runs).
static WORKER: std::sync::OnceLock<std::sync::mpsc::Sender<Job>> = std::sync::OnceLock::new();

/// Starts the report thread, `profpoint-serve-report`, once: it builds every report the
/// endpoints answer with (one at a time), and keeps the history for `?last=` between
/// requests. One long-lived thread: a report built on a fresh connection thread cost 3x as
/// much (its allocations met fresh pages: BENCHMARKS.md, "Live server").
fn history_start() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let spawned = crate::threads::spawn_quiet(
            // As a main thread: its reports may symbolise the heatmap.
            std::thread::Builder::new()
                .name("profpoint-serve-report".into())
                .stack_size(8 << 20),
            move || report_thread(rx),
        );
        if spawned.is_ok() {
            let _ = WORKER.set(tx);
        }
    });
}

fn report_thread(rx: std::sync::mpsc::Receiver<Job>) {
    let mut next = Instant::now();
    loop {
        let now = Instant::now();
        if now >= next {
            let r = collect();
            let mut h = HISTORY.lock().unwrap_or_else(|e| e.into_inner());
            h.push((Instant::now(), r));
            if h.len() > HISTORY_KEPT {
                h.remove(0);
            }
            next = now + HISTORY_EVERY;
            continue;
        }
        match rx.recv_timeout(next - now) {
            // A job that panics answers nothing (its connection gets a 500); the thread goes on.
            Ok(job) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs `f` on the report thread and returns what it made (`None` if it panicked); on the
/// calling thread when there is no report thread.
fn on_report_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let Some(worker) = WORKER.get() else {
        return Some(f());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    worker.send(job).ok()?;
    rx.recv().ok()
}

/// The interval from the kept report closest to `age` ago (the oldest when none is that old)
/// to `now`.
fn history_interval(now: &Report, age: Duration) -> Interval {
    let h = HISTORY.lock().unwrap_or_else(|e| e.into_inner());
    let at = Instant::now();
    let from = h
        .iter()
        .min_by_key(|(t, _)| {
            let a = at.duration_since(*t);
            a.abs_diff(age)
        })
        .map(|(_, r)| r);
    Interval::between(from, now, 0)
}
