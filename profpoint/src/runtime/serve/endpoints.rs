//! What each endpoint answers, and the report thread that builds every report they serve
//! (with the history kept for `?last=`).

use super::*;

/// The credentials of an `Authorization` value of the `Bearer` scheme (the scheme's name in
/// any case, RFC 7235; one or more spaces after it), `None` for any other.
pub(super) fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim_start_matches(' '))
}

/// Whether a `Host` value names this machine's loopback: `localhost`, an address of
/// 127.0.0.0/8 or `[::1]`, each with or without a port.
pub(super) fn loopback_host(value: &[u8]) -> bool {
    let Ok(v) = std::str::from_utf8(value) else {
        return false;
    };
    let v = v.trim();
    // `[::1]` or `[::1]:PORT`.
    if let Some(rest) = v.strip_prefix('[') {
        let Some((addr, port)) = rest.split_once(']') else {
            return false;
        };
        let port_ok = port.is_empty()
            || port
                .strip_prefix(':')
                .is_some_and(|p| p.parse::<u16>().is_ok());
        return port_ok
            && addr
                .parse::<std::net::Ipv6Addr>()
                .is_ok_and(|a| a.is_loopback());
    }
    let name = match v.rsplit_once(':') {
        Some((name, port)) if port.parse::<u16>().is_ok() => name,
        Some(_) => return false,
        None => v,
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

/// How often the history keeps a report, and how many it keeps.
const HISTORY_EVERY: Duration = Duration::from_secs(10);
const HISTORY_KEPT: usize = 13;

/// The answer to a request that may not be served, `None` for one that may: the `Host` check
/// (421), then the token (401). Cheap, and nothing built: the accept thread asks it first.
pub(super) fn gate(req: &httparse::Request<'_, '_>, opts: &ServeOptions) -> Option<Response> {
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    // DNS rebinding: a page of another site whose name now resolves to 127.0.0.1 reaches a
    // loopback server from the user's browser, which sends that site's name as `Host`. A
    // server on loopback answers only a loopback name or address (a request without `Host`
    // comes from no browser); one bound beyond loopback answers any (docs/reports.md).
    if opts.loopback
        && let Some(host) = header("host")
        && !loopback_host(host)
    {
        return Some(Response::text(
            "421 Misdirected Request",
            "a server on loopback answers only Host localhost, 127.0.0.0/8 or [::1]\n",
        ));
    }
    if let Some(token) = &opts.token {
        let given = header("authorization")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(bearer)
            .unwrap_or("");
        // The page alone may carry the token in its address (`/?token=TOKEN`): a browser
        // opening a link sends no header. The page then sends it as a header on every
        // request it makes, so no other address ever holds it.
        let target = req.path.unwrap_or("/");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let in_query = (path == "/")
            .then(|| query_param(query, "token"))
            .flatten()
            .unwrap_or_default();
        let ok = constant_time_eq(given.as_bytes(), token.as_bytes())
            || (path == "/" && constant_time_eq(in_query.as_bytes(), token.as_bytes()));
        if !ok {
            let why = if path == "/" {
                "this page needs the server's token: open it as /?token=TOKEN\n"
            } else {
                "a bearer token is required\n"
            };
            let mut r = Response::text("401 Unauthorized", why);
            r.extra.push(("WWW-Authenticate", "Bearer".into()));
            return Some(r);
        }
    }
    None
}

pub(super) fn respond(req: &httparse::Request<'_, '_>, opts: &ServeOptions) -> Response {
    if let Some(refused) = gate(req, opts) {
        return refused;
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
        "/" => page(),
        "/metrics" => match on_report_thread(|b| b.rendered("metrics", metrics)) {
            Some(m) => Response {
                status: "200 OK",
                content_type: "text/plain; version=0.0.4; charset=utf-8",
                extra: Vec::new(),
                body: m.to_vec(),
            },
            None => Response::text("500 Internal Server Error", "the report failed\n"),
        },
        "/debug/profpoint" => {
            let (format, last) = (
                param("format").map(String::from),
                param("last").map(String::from),
            );
            on_report_thread(move |b| debug_profpoint(b, format.as_deref(), last.as_deref()))
                .unwrap_or_else(|| {
                    Response::text("500 Internal Server Error", "the report failed\n")
                })
        }
        "/debug/pprof/profile" => pprof_profile(param("seconds"), opts.max_profile_seconds),
        "/debug/pprof/points" => match on_report_thread(|b| b.rendered("pprof", points_pprof)) {
            Some(body) => Response {
                status: "200 OK",
                content_type: "application/octet-stream",
                extra: vec![(
                    "Content-Disposition",
                    "attachment; filename=\"points.pb.gz\"".into(),
                )],
                body: body.to_vec(),
            },
            None => Response::text("500 Internal Server Error", "the report failed\n"),
        },
        _ => Response::text("404 Not Found", "no such page; see /\n"),
    }
}

/// The live page at `/`: one HTML document, its script and style inline, that polls
/// `/debug/profpoint?format=json` and draws the table and the flame graph in the browser.
pub(super) const PAGE: &str = include_str!("page.html");

/// The page's answer, with the headers that keep it to itself: its policy lets it load nothing
/// and connect nowhere but this server (so it works offline, and a name in the report that
/// slipped past the page's escaping could still fetch nothing), lets no other site frame it,
/// and sends no `Referer` (a token given in its address stays there).
pub(super) fn page() -> Response {
    Response {
        status: "200 OK",
        content_type: "text/html; charset=utf-8",
        extra: vec![
            (
                "Content-Security-Policy",
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src 'self' blob: data:; base-uri 'none'; \
                 form-action 'none'; frame-ancestors 'none'"
                    .into(),
            ),
            ("X-Content-Type-Options", "nosniff".into()),
            ("X-Frame-Options", "DENY".into()),
            ("Referrer-Policy", "no-referrer".into()),
        ],
        body: PAGE.as_bytes().to_vec(),
    }
}

/// The value of `name` in a query string (`a=1&token=x`), decoded as a browser's
/// `URLSearchParams` encodes it (`+` a space, `%XX` a byte); `None` when absent or not UTF-8.
pub(super) fn query_param(query: &str, name: &str) -> Option<String> {
    let raw = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)?
        .1;
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

pub(super) fn collect() -> Report {
    crate::report::collect(&ReportOptions::default())
}

/// `/metrics`: the report's exposition, and one series naming the run.
pub(super) fn metrics(r: &Report) -> Vec<u8> {
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
    o.into_bytes()
}

pub(super) fn debug_profpoint(b: &Batch, format: Option<&str>, last: Option<&str>) -> Response {
    let json = |body: Vec<u8>| Response {
        status: "200 OK",
        content_type: "application/json",
        extra: Vec::new(),
        body,
    };
    let Some(last) = last else {
        // The whole run's figures: the same bytes for every such request of the batch.
        return match format {
            None | Some("table") => Response {
                body: b.rendered("table", |r| r.to_table().into_bytes()).to_vec(),
                ..Response::text("200 OK", "")
            },
            Some("json") => json(b.rendered("json", |r| r.to_json().into_bytes()).to_vec()),
            Some(other) => Response::text(
                "400 Bad Request",
                format!("format={other:?}: expected table or json\n"),
            ),
        };
    };
    let Ok(age) = crate::env::parse_every(last) else {
        return Response::text(
            "400 Bad Request",
            format!("last={last:?}: expected a duration with its unit (e.g. 60s, 2m)\n"),
        );
    };
    // The last `age`: a copy of the batch's report with its interval.
    let mut r = b.report.clone();
    r.interval = Some(history_interval(&r, age));
    match format {
        None | Some("table") => Response::text("200 OK", r.to_table()),
        Some("json") => json(r.to_json().into_bytes()),
        Some(other) => Response::text(
            "400 Bad Request",
            format!("format={other:?}: expected table or json\n"),
        ),
    }
}

/// `/debug/pprof/profile`: the sampler's profile of the next `seconds`, with its stacks, as
/// Go's `net/http/pprof` answers it (gzip pprof, `samples/count` and `cpu/nanoseconds`): no
/// points in it (they are `/debug/pprof/points`).
pub(super) fn pprof_profile(seconds: Option<&str>, max: u64) -> Response {
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
pub(super) fn points_pprof(r: &Report) -> Vec<u8> {
    #[cfg(feature = "heatmap")]
    if r.heatmap.is_some() {
        let mut r = r.clone();
        r.heatmap = None;
        return r.to_pprof();
    }
    r.to_pprof()
}

/// Reports kept for `?last=` (oldest first), with when each was taken.
pub(super) static HISTORY: Mutex<Vec<(Instant, Report)>> = Mutex::new(Vec::new());

/// A job for the report thread: it answers from the batch's report.
type Job = Box<dyn FnOnce(&Batch) + Send>;

/// A rendering's bytes, shared by the requests of a batch.
type Body = std::sync::Arc<[u8]>;

/// One report shared by every request the report thread took together (those that waited
/// while the report before was built), with each rendering made once for all of them: 32
/// scrapes at once cost one build and one exposition, not 32. Each request's report is built
/// after it arrived, so an answer never holds figures older than its request.
pub(super) struct Batch {
    pub(super) report: Report,
    made: std::cell::RefCell<Vec<(&'static str, Body)>>,
}

impl Batch {
    pub(super) fn new(report: Report) -> Batch {
        Batch {
            report,
            made: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The rendering `key` of the report, made by `make` for the first request that asks.
    pub(super) fn rendered(
        &self,
        key: &'static str,
        make: impl FnOnce(&Report) -> Vec<u8>,
    ) -> Body {
        if let Some((_, b)) = self.made.borrow().iter().find(|(k, _)| *k == key) {
            return b.clone();
        }
        let b: Body = make(&self.report).into();
        self.made.borrow_mut().push((key, b.clone()));
        b
    }
}

/// The report thread's queue (set once it runs).
pub(super) static WORKER: std::sync::OnceLock<std::sync::mpsc::Sender<Job>> =
    std::sync::OnceLock::new();

/// Starts the report thread, `profpoint-serve-report`, once: it builds every report the
/// endpoints answer with (one at a time, each shared by the requests waiting for it), and
/// keeps the history for `?last=` between requests. One long-lived thread: a report built on
/// a fresh connection thread cost 3x as much (its allocations met fresh pages:
/// BENCHMARKS.md, "Live server").
pub(super) fn history_start() {
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

/// At most this many requests answered from one report (the connections' cap bounds them
/// anyway): a bound on the batch's list, not a limit a client meets.
const BATCH_MAX: usize = 256;

pub(super) fn report_thread(rx: std::sync::mpsc::Receiver<Job>) {
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
            Ok(job) => {
                // Every request waiting now shares the report built next.
                let mut jobs = vec![job];
                while jobs.len() < BATCH_MAX
                    && let Ok(j) = rx.try_recv()
                {
                    jobs.push(j);
                }
                // A report or a job that panics answers nothing (its connection gets a 500:
                // the job's sender is dropped); the thread goes on.
                let Ok(batch) = std::panic::catch_unwind(|| Batch::new(collect())) else {
                    continue;
                };
                for job in jobs {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&batch)));
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs `f` on the report thread with the report it builds next and returns what `f` made
/// (`None` if either panicked); on the calling thread, with a report of its own, when there
/// is no report thread.
pub(super) fn on_report_thread<T: Send + 'static>(
    f: impl FnOnce(&Batch) -> T + Send + 'static,
) -> Option<T> {
    let Some(worker) = WORKER.get() else {
        return Some(f(&Batch::new(collect())));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let job: Job = Box::new(move |b| {
        let _ = tx.send(f(b));
    });
    worker.send(job).ok()?;
    rx.recv().ok()
}

/// The interval from the kept report closest to `age` ago (the oldest when none is that old)
/// to `now`.
pub(super) fn history_interval(now: &Report, age: Duration) -> Interval {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests that wait while a report is built share the next one: held busy by a first
    /// job, the report thread answers the 31 requests queued meanwhile from one report and
    /// one rendering, built after they all arrived.
    #[test]
    fn requests_waiting_together_share_one_report() {
        history_start();
        let worker = WORKER.get().expect("the report thread runs");
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
        let first: Job = Box::new(move |_| {
            let _ = held_tx.send(());
            let _ = hold_rx.recv();
        });
        worker.send(first).unwrap();
        held_rx.recv().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let queued_at = Instant::now();
        for _ in 0..31 {
            let tx = tx.clone();
            let job: Job = Box::new(move |b| {
                let body = b.rendered("metrics", metrics);
                let _ = tx.send((body, b.report.wall_ns));
            });
            worker.send(job).unwrap();
        }
        drop(tx);
        hold_tx.send(()).unwrap();
        let got: Vec<_> = rx.iter().collect();
        assert_eq!(got.len(), 31, "every request answered");
        assert!(
            got.iter().all(|(b, _)| Arc::ptr_eq(b, &got[0].0)),
            "one rendering for all"
        );
        assert!(
            got.iter().all(|(_, w)| *w == got[0].1),
            "one report for all"
        );
        // Built after the requests arrived: its wall time covers the moment they queued.
        let since_start = crate::clock::info()
            .to_ns(crate::clock::now().saturating_sub(crate::clock::origin().0));
        let queued_ns = since_start.saturating_sub(queued_at.elapsed().as_nanos() as u64);
        assert!(got[0].1 >= queued_ns, "{} < {queued_ns}", got[0].1);
    }
}
