//! The one request `profpoint top` makes: `GET /debug/profpoint?format=json` on a serving
//! process, over plain HTTP/1.1, bounded in time (connect, then the whole answer) and in size.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Where a serving process listens, and what `top` sends it.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `HOST:PORT` as given (the request's `Host`).
    pub(crate) host: String,
    /// Its addresses (resolved once, at start).
    pub(crate) addrs: Vec<SocketAddr>,
    /// `Authorization: Bearer` with this, when set.
    pub(crate) token: Option<String>,
}

/// How long connecting may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the whole answer may take, from the connect.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// `ADDR` as `top` takes it: `HOST:PORT`, or `http://HOST:PORT` with an optional `/` after;
/// one line naming the value and what was expected otherwise.
pub(crate) fn parse_addr(addr: &str) -> Result<(String, Vec<SocketAddr>), String> {
    let expected = "expected HOST:PORT or http://HOST:PORT, e.g. 127.0.0.1:9464";
    let bare = addr.strip_prefix("http://").unwrap_or(addr);
    let bare = bare.strip_suffix('/').unwrap_or(bare);
    if addr.starts_with("https://") {
        return Err(format!(
            "{addr:?}: the live server speaks plain HTTP, not https ({expected})"
        ));
    }
    if bare.is_empty() || bare.contains('/') || !bare.contains(':') {
        return Err(format!("{addr:?}: {expected}"));
    }
    let addrs: Vec<SocketAddr> = bare
        .to_socket_addrs()
        .map_err(|e| format!("{addr:?}: {e} ({expected})"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("{addr:?}: resolves to no address ({expected})"));
    }
    Ok((bare.to_string(), addrs))
}

/// Gets `path` from the target: the body of a `200` answer, else one line why (the status
/// and the server's first line, a timeout, a refused connection, an answer over `max` bytes).
pub(crate) fn get(t: &Target, path: &str, max: u64) -> Result<Vec<u8>, String> {
    let start = Instant::now();
    let mut last = String::from("no address");
    let mut stream = None;
    for a in &t.addrs {
        match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {a}: {e}"),
        }
    }
    let mut s = stream.ok_or(last)?;
    let auth = t
        .token
        .as_ref()
        .map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: profpoint-top\r\nAccept: application/json\r\n{auth}Connection: close\r\n\r\n",
        t.host
    );
    let left = |what: &str| -> Result<Duration, String> {
        let l = ANSWER_TIMEOUT.saturating_sub(start.elapsed());
        if l.is_zero() {
            Err(format!(
                "no whole answer within {} s ({what})",
                ANSWER_TIMEOUT.as_secs()
            ))
        } else {
            Ok(l)
        }
    };
    s.set_write_timeout(Some(left("sending")?))
        .map_err(|e| e.to_string())?;
    s.write_all(req.as_bytes())
        .map_err(|e| format!("cannot send the request: {e}"))?;
    // The head is at most 64 KiB; the body at most `max`.
    let cap = max.saturating_add(64 << 10);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        s.set_read_timeout(Some(left("reading")?))
            .map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() as u64 > cap {
                    return Err(format!(
                        "the answer is over {max} bytes (--max-input-size raises the limit)"
                    ));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                left("reading")?;
            }
            Err(e) => return Err(format!("reading the answer: {e}")),
        }
    }
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(if buf.is_empty() {
            "the server closed the connection without an answer".into()
        } else {
            "the answer is not HTTP (no end of its head)".into()
        });
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let status = head.lines().next().unwrap_or("");
    let code = status.split_whitespace().nth(1).unwrap_or("");
    let body = buf.split_off(end + 4);
    if code != "200" {
        let first = String::from_utf8_lossy(&body);
        let first = first.lines().next().unwrap_or("").trim();
        let hint = if code == "401" {
            " (give the server's token: --token, or PROFPOINT_SERVE_TOKEN)"
        } else {
            ""
        };
        return Err(format!(
            "the server answered {}{}{hint}",
            status.split_once(' ').map_or(status, |(_, s)| s),
            if first.is_empty() {
                String::new()
            } else {
                format!(": {}", super::view::printable(first, 120))
            }
        ));
    }
    // A length that says more than came is a cut answer.
    if let Some(len) = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())
            .flatten()
    }) && body.len() < len
    {
        return Err(format!(
            "the answer was cut: {} of {len} bytes came",
            body.len()
        ));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_what_is_refused() {
        let (host, addrs) = parse_addr("127.0.0.1:9464").unwrap();
        assert_eq!(host, "127.0.0.1:9464");
        assert_eq!(addrs[0].port(), 9464);
        assert_eq!(
            parse_addr("http://127.0.0.1:80/").unwrap().0,
            "127.0.0.1:80"
        );
        for bad in ["", "127.0.0.1", "https://127.0.0.1:1", "http://a:1/metrics"] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains("expected HOST:PORT"), "{bad}: {e}");
        }
    }

    /// A whole answer, one past the cap and a refusal: the body, the cap's line, the status
    /// with what to do; the request carries the token.
    #[test]
    fn answers_are_bounded() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let t = Target {
            host: a.to_string(),
            addrs: vec![a],
            token: Some("k".into()),
        };
        let server = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for answer in [
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
                [b"HTTP/1.1 200 OK\r\n\r\n".to_vec(), vec![b'x'; 300 << 10]].concat(),
                b"HTTP/1.1 401 Unauthorized\r\n\r\na bearer token is required\n".to_vec(),
            ] {
                let (mut c, _) = l.accept().unwrap();
                let mut req = [0u8; 1024];
                let n = c.read(&mut req).unwrap();
                seen.push(String::from_utf8_lossy(&req[..n]).into_owned());
                let _ = c.write_all(&answer);
            }
            seen
        });
        assert_eq!(get(&t, "/x", 1000).unwrap(), b"hello");
        let e = get(&t, "/x", 1000).unwrap_err();
        assert!(e.contains("over 1000 bytes"), "{e}");
        let e = get(&t, "/x", 1000).unwrap_err();
        assert!(e.contains("401") && e.contains("--token"), "{e}");
        let seen = server.join().unwrap();
        assert!(seen[0].starts_with("GET /x HTTP/1.1\r\n"), "{}", seen[0]);
        assert!(
            seen[0].contains("Authorization: Bearer k\r\n"),
            "{}",
            seen[0]
        );
    }
}
