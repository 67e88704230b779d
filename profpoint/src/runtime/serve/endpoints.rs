//! What each endpoint answers (from the report thread's reports, `reports.rs`).

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
                body: m,
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
                body,
            },
            None => Response::text("500 Internal Server Error", "the report failed\n"),
        },
        _ => Response::text("404 Not Found", "no such page; see /\n"),
    }
}

/// The live page at `/`: one HTML document, its script and style inline, that polls
/// `/debug/profpoint?format=json` and draws the table and the flame graph in the browser.
pub(super) const PAGE: &str = include_str!("page.html");

/// The SHA-256 (base64) of the page's one inline script and of its one style sheet: its
/// policy lets the browser run that script and apply that sheet and no other, where
/// `'unsafe-inline'` let any inline script run, one a name slipping past the page's escaping
/// could bring. `tests/serve.rs` recomputes both from the page served (edit `page.html`, and
/// that test names the new values).
const PAGE_SCRIPT_SHA256: &str = "i85BX9GXZNjs8B7ioQf3FHAGViFLj6mCZNpGT9v94NY=";
const PAGE_STYLE_SHA256: &str = "LjWk+LKtqWiDNauJ6lQgIOBcoeQrYa1RlWun9gMHP84=";

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
                format!(
                    "default-src 'none'; script-src 'sha256-{PAGE_SCRIPT_SHA256}'; \
                     style-src 'sha256-{PAGE_STYLE_SHA256}'; connect-src 'self'; \
                     img-src 'self' blob: data:; base-uri 'none'; form-action 'none'; \
                     frame-ancestors 'none'"
                ),
            ),
            ("X-Content-Type-Options", "nosniff".into()),
            ("X-Frame-Options", "DENY".into()),
            ("Referrer-Policy", "no-referrer".into()),
        ],
        body: PAGE.as_bytes().into(),
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
    let json = |body: Body| Response {
        status: "200 OK",
        content_type: "application/json",
        extra: Vec::new(),
        body,
    };
    let Some(last) = last else {
        // The whole run's figures: the same bytes for every such request of the batch.
        return match format {
            None | Some("table") => Response {
                body: b.rendered("table", |r| r.to_table().into_bytes()),
                ..Response::text("200 OK", "")
            },
            Some("json") => json(b.rendered("json", |r| r.to_json().into_bytes())),
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
        Some("json") => json(r.to_json().into_bytes().into()),
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
            body: body.into(),
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
