//! Live reports over HTTP (feature `serve`): a service that never exits shows its
//! points while it runs, to a person (the live page at `/`, `page.html`: the table, a filter
//! and a flame graph in the browser, polling the JSON; and `/debug/profpoint`'s table), to
//! Prometheus (`/metrics`), to
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
//!   endpoints show function names and timings. A server on loopback answers only requests
//!   whose `Host` is a loopback name or address (`localhost`, 127.0.0.0/8, `[::1]`, any port;
//!   `421` otherwise): a page whose name a rebinding DNS points at 127.0.0.1 gets nothing. An
//!   optional bearer token (scheme matched in any case) is compared in constant time; a
//!   token that cannot be used (not UTF-8, empty, a control character, over 4,096 bytes)
//!   means no server and one line why (`ServeError::Token` in code). A request refused by
//!   either check is answered by the accept thread itself (`gate`): no thread, no place among
//!   [`ServeOptions::max_connections`], nothing built, so a flood without the token leaves
//!   room for the scrapes that carry it. One rule for every server of the process: the token given in code
//!   ([`ServeOptions::token`]) if any, else `PROFPOINT_SERVE_TOKEN` if set, whether the server
//!   was started by `PROFPOINT_SERVE` or by [`serve`] in code. The page alone (`/`) also takes
//!   it as `?token=` in its address, since a browser opening a link sends no header; its script
//!   sends it as the header on every request it makes. A server that listens beyond
//!   loopback without a token says so in one line on stderr.
//! - The server's own threads make no point calls: nothing of it appears in the user's table.
//! - Reports are built on one long-lived thread, `profpoint-serve-report` (`reports.rs`; a
//!   fresh connection thread paid several times as much: BENCHMARKS.md, "Live server"), one at a time, each for every request that
//!   waited while the one before was built (and each rendering made once for them): a burst
//!   of scrapes costs two builds, not one each, and no answer holds figures older than its
//!   request. An answer leaves its place among the connections once built and is written
//!   among the writers (four per place; past them, `503`), its body shared with the other
//!   requests of its report; a client that takes no byte for 1 s, or has not its whole
//!   answer in 5 s, is given up, so clients that never read leave room for scrapes.
//!   Between requests it keeps a report every 10 s for
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
//!   why. Needs the `heatmap` feature (off by default); without it, `501`.
//! - `/debug/pprof/points`: the points' figures since the process started as gzip pprof, one
//!   flat sample per point with `calls/count`, `self/nanoseconds` (the default) and
//!   `total/nanoseconds` (`Report::to_pprof`, without the sampler's rows).
//!
//! `scripts/test-engines` checks all this with a real Prometheus server and `go tool pprof`.

mod conn;
mod endpoints;
mod reports;

use crate::report::{Interval, Report, ReportOptions};
use conn::*;
use endpoints::*;
use reports::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    public: bool,
    token: Option<String>,
    /// Set by [`serve_with`]: the listener is on a loopback address (the `Host` check).
    loopback: bool,
    max_connections: usize,
    max_pending: usize,
    max_profile_seconds: u64,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            public: false,
            token: None,
            loopback: true,
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

    /// Requires `Authorization: Bearer TOKEN` on every request (the scheme in any case, as
    /// HTTP says). Without one (`None`, or not called), the server takes
    /// `PROFPOINT_SERVE_TOKEN` when it is set: that variable guards every server of the
    /// process. A token that cannot be sent (empty, a control character or a space at either
    /// end, over 4,096 bytes: half the request head's limit) makes [`serve_with`] fail with [`ServeError::Token`]: no server
    /// runs without the token it was given.
    pub fn token(mut self, token: Option<String>) -> ServeOptions {
        self.token = token;
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
    /// The token (given in code, or `PROFPOINT_SERVE_TOKEN`) cannot be used: why.
    Token(String),
}

/// The longest token a server takes, in bytes: half the request head's limit (8 KiB), which
/// leaves room for the request line and the other headers of a request that carries it.
pub(crate) const MAX_TOKEN: usize = conn::MAX_HEAD / 2;

/// Why `token` (named `what`) cannot be a server's token, `None` when it can: a client must be
/// able to send it whole in an `Authorization` header within the request head's limit.
fn token_unusable(what: &str, token: &str) -> Option<String> {
    let expected = format!(
        "expected 1 to {MAX_TOKEN} bytes of UTF-8 text without control characters or spaces at either end"
    );
    let why = if token.is_empty() {
        "is empty".to_string()
    } else if token.len() > MAX_TOKEN {
        format!(
            "is {} bytes long, more than a request head of {} bytes can carry",
            token.len(),
            conn::MAX_HEAD
        )
    } else if token.chars().any(char::is_control) {
        "has a control character, which no header can carry".to_string()
    } else if token.trim() != token {
        "has a space at one end, which a header's value drops".to_string()
    } else {
        return None;
    };
    Some(format!("{what} {why} ({expected}; its value is not shown)"))
}

/// The token of a server given `given` in code: that one, else `PROFPOINT_SERVE_TOKEN` if
/// set; an error naming which and why when it cannot be used (not UTF-8, or
/// [`token_unusable`]).
fn the_token(given: Option<String>) -> Result<Option<String>, ServeError> {
    if let Some(t) = given {
        return match token_unusable("the token given in code (ServeOptions::token)", &t) {
            Some(why) => Err(ServeError::Token(why)),
            None => Ok(Some(t)),
        };
    }
    // Read here, not through `env::var`: a value that is not UTF-8 is no reason to serve
    // without a token, and a secret is not printed.
    const NAME: &str = "PROFPOINT_SERVE_TOKEN";
    match std::env::var_os(NAME) {
        None => Ok(None),
        Some(v) => match v.into_string() {
            Err(_) => Err(ServeError::Token(format!(
                "{NAME} is not UTF-8 (expected 1 to {MAX_TOKEN} bytes of UTF-8 text; its value is not shown)"
            ))),
            Ok(t) => match token_unusable(NAME, &t) {
                Some(why) => Err(ServeError::Token(why)),
                None => Ok(Some(t)),
            },
        },
    }
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
            ServeError::Token(why) => write!(f, "{why}"),
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
    // The process's token guards every server that was given none in code; one that cannot
    // be used means no server, before anything listens.
    opts.token = the_token(opts.token.take())?;
    opts.loopback = sock.ip().is_loopback();
    let listener = TcpListener::bind(sock).map_err(|e| ServeError::Bind(sock, e))?;
    // Never on 0, 1 or 2: see `low_fds`.
    #[cfg(unix)]
    let listener = crate::runtime::low_fds::above_stdio_as(listener);
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Bind(sock, e))?;
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
        writing: AtomicUsize::new(0),
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
    // An address, never a name to look up: the initialiser runs before `main`, maybe under
    // the loader lock, and a resolver's timeout would hold the program's start.
    let Some(literal) = address_without_lookup(addr.trim()) else {
        crate::diag::warn_line!(
            "profpoint: PROFPOINT_SERVE=\"{}\": expected IP:PORT or localhost:PORT (a host \
             name is not looked up at start, which could wait on DNS before main); no server",
            crate::env::shown(&addr, crate::env::SHOWN_MAX)
        );
        return;
    };
    // The token: `serve_with` takes PROFPOINT_SERVE_TOKEN, as for a server started in code.
    let opts = ServeOptions::new().public(public);
    match serve_with(&literal.to_string(), opts) {
        Ok(s) => crate::diag::warn_line!(
            "profpoint: serving live reports on http://{} (PROFPOINT_SERVE)",
            s.local_addr()
        ),
        // The value once: an address that does not parse is in the error's own text; a
        // token's error names its variable.
        Err(e @ (ServeError::Address(..) | ServeError::Token(..))) => {
            crate::diag::warn_line!("profpoint: PROFPOINT_SERVE: {e}; no server")
        }
        Err(e) => crate::diag::warn_line!(
            "profpoint: PROFPOINT_SERVE=\"{}\": {e}; no server",
            crate::env::shown(&addr, crate::env::SHOWN_MAX)
        ),
    }
}

/// `text` as a socket address without a name lookup: `IP:PORT`, `[IPv6]:PORT`, or
/// `localhost:PORT` (127.0.0.1).
fn address_without_lookup(text: &str) -> Option<SocketAddr> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Some(a);
    }
    let port = text.strip_prefix("localhost:")?.parse::<u16>().ok()?;
    Some(SocketAddr::from(([127, 0, 0, 1], port)))
}

#[cfg(test)]
mod address_tests {
    use super::*;

    #[test]
    fn addresses_from_the_environment_are_never_looked_up() {
        let parsed = |t: &str| address_without_lookup(t).map(|a| a.to_string());
        assert_eq!(parsed("127.0.0.1:9464").as_deref(), Some("127.0.0.1:9464"));
        assert_eq!(parsed("[::1]:0").as_deref(), Some("[::1]:0"));
        assert_eq!(parsed("localhost:9464").as_deref(), Some("127.0.0.1:9464"));
        for name in [
            "somehost:9464",
            "example.com:80",
            "localhost",
            "localhost:x",
            ":9464",
        ] {
            assert_eq!(parsed(name), None, "{name}");
        }
    }
}
