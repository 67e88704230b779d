//! The HTTP side of the server: the accept thread that reads every request head itself (one
//! `poll(2)` over the listener and the connections), the caps, and the answer's bytes. What a
//! request is answered with is `endpoints.rs`'s.

use super::*;

/// Largest request head read.
pub(super) const MAX_HEAD: usize = 8 * 1024;
/// Most headers parsed.
pub(super) const MAX_HEADERS: usize = 32;
/// How long a connection has to deliver its whole request head, from its accept: past it, 408
/// and closed (however the bytes trickle in).
pub(super) const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// How long a connection accepted past [`ServeOptions::max_pending`] has to deliver its whole
/// request head (a scraper sends it at once); past it, 503.
pub(super) const OVERFLOW_READ: Duration = Duration::from_millis(200);
/// How long writing an answer may take, in all (`write_within`).
pub(super) const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How long a client may take no byte of its answer before it is given up (`write_within`):
/// a scraper reads at once; one that never reads would hold its thread to the deadline.
pub(super) const WRITE_STALL: Duration = Duration::from_secs(1);
/// Answers being written at once, in [`ServeOptions::max_connections`]: past them, new
/// requests are answered 503 as past the places.
pub(super) const WRITERS_PER_PLACE: usize = 4;

pub(super) struct Shared {
    pub(super) opts: ServeOptions,
    /// Requests being answered (their threads, from dispatch until their answer is built).
    pub(super) active: AtomicUsize,
    /// Answers being written (their threads, from the answer built until written or given
    /// up): out of the places, so that clients that do not read leave room for scrapes.
    pub(super) writing: AtomicUsize,
}

/// A response's bytes, shared by the requests a report thread's batch answers.
pub(super) type Body = Arc<[u8]>;

/// A connection whose request head is still arriving, held by the accept thread.
pub(super) struct Arriving {
    pub(super) stream: TcpStream,
    pub(super) head: Vec<u8>,
    /// When it is closed if its head has not come whole.
    pub(super) deadline: Instant,
    /// Accepted past [`ServeOptions::max_pending`]: a brief read ([`OVERFLOW_READ`]), then a 503.
    pub(super) over: bool,
}

/// What a connection's bytes so far make.
pub(super) enum Head {
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
pub(super) fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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
                        // Never on 0, 1 or 2 (a program that closed one): see `low_fds`.
                        #[cfg(unix)]
                        let stream = crate::runtime::low_fds::above_stdio_as(stream);
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
pub(super) fn wait_ready(
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
pub(super) fn wait_ready(
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
pub(super) fn read_more(c: &mut Arriving) -> Head {
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
pub(super) fn busy() -> Response {
    let mut r = Response::text("503 Service Unavailable", "busy; try again\n");
    r.extra.push(("Retry-After", "1".into()));
    r
}

/// Answers a short response from the accept thread, without blocking (a fresh connection's
/// send buffer takes it whole; one that does not is dropped), and closes the connection.
pub(super) fn answer_now(mut s: TcpStream, resp: &Response) {
    let mut bytes = head(resp);
    bytes.extend_from_slice(&resp.body);
    let _ = s.write(&bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
}

/// A whole request: answered on a thread of its own, up to [`ServeOptions::max_connections`]
/// at once; past them, 503 at once.
pub(super) fn dispatch(stream: TcpStream, head: Vec<u8>, shared: &Arc<Shared>) {
    // A request without the token, or for another `Host`, is answered here and now: it takes
    // no thread and no place among the connections answered at once, so a flood of them
    // costs a parse and a write each, and the scrapes that carry the token still find room.
    {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        if let Ok(httparse::Status::Complete(_)) = req.parse(&head)
            && let Some(refused) = gate(&req, &shared.opts)
        {
            answer_now(stream, &refused);
            return;
        }
    }
    // Relaxed: counts for caps; the thread's own decrements are all that matters.
    let writers = shared
        .opts
        .max_connections
        .saturating_mul(WRITERS_PER_PLACE);
    if shared.writing.load(Ordering::Relaxed) >= writers {
        answer_now(stream, &busy());
        return;
    }
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
        move || handle(stream, &head, &sh),
    );
    if spawned.is_err() {
        shared.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response.
pub(super) struct Response {
    pub(super) status: &'static str,
    pub(super) content_type: &'static str,
    pub(super) extra: Vec<(&'static str, String)>,
    pub(super) body: Body,
}

impl Response {
    pub(super) fn text(status: &'static str, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            extra: Vec::new(),
            body: body.into().into_bytes().into(),
        }
    }
}

/// The response's head.
pub(super) fn head(resp: &Response) -> Vec<u8> {
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
    out.into_bytes()
}

/// Answers a whole request head (read by the accept thread) on its own thread: the answer
/// built in its place among the connections, then written out of it (among the writers), its
/// body shared with the other requests of its report (no copy per client).
pub(super) fn handle(mut s: TcpStream, head_bytes: &[u8], shared: &Shared) {
    let _ = s.set_nonblocking(false);
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let (resp, head_only) = match req.parse(head_bytes) {
        Ok(httparse::Status::Complete(_)) => {
            (respond(&req, &shared.opts), req.method == Some("HEAD"))
        }
        // The accept thread parsed it whole already.
        _ => (Response::text("400 Bad Request", "bad request\n"), false),
    };
    // Relaxed (two): counts for caps. Writing first, then leaving the place: the thread is
    // always under one cap or the other.
    shared.writing.fetch_add(1, Ordering::Relaxed);
    shared.active.fetch_sub(1, Ordering::Relaxed);
    let body: &[u8] = if head_only { &[] } else { &resp.body };
    let _ = write_within(&mut s, &[&head(&resp), body], REQUEST_DEADLINE);
    shared.writing.fetch_sub(1, Ordering::Relaxed);
}

/// Writes `parts` to `s` in order, giving up once `deadline` has passed since the first byte
/// was offered, or when the client takes no byte for [`WRITE_STALL`]: a client that reads a
/// few bytes every few seconds would otherwise hold its thread for as long as the answer
/// lasts (each write has the time left, at most the stall, as its timeout). Whether it was
/// written whole.
pub(super) fn write_within(s: &mut TcpStream, parts: &[&[u8]], deadline: Duration) -> bool {
    use std::io::Write;
    let until = Instant::now() + deadline;
    for part in parts {
        let mut rest: &[u8] = part;
        while !rest.is_empty() {
            let left = until
                .saturating_duration_since(Instant::now())
                .min(WRITE_STALL);
            // A zero timeout is refused (and would mean none): at least a millisecond.
            if left.is_zero()
                || s.set_write_timeout(Some(left.max(Duration::from_millis(1))))
                    .is_err()
            {
                return false;
            }
            match s.write(rest) {
                Ok(0) => return false,
                Ok(n) => rest = &rest[n.min(rest.len())..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
    true
}

/// Equal, in time that depends on the lengths only.
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A client that reads a little now and then, as a slow scraper or an attacker does: the
    /// answer is given up at its deadline, not kept going as long as each write moves a few
    /// bytes (a timeout per write alone allowed that, and 32 such clients locked out every
    /// scrape). A client that reads gets the whole answer.
    #[test]
    fn an_answer_is_given_up_at_its_deadline_however_slowly_it_is_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let slow_done = done.clone();
        let slow = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            let mut b = vec![0u8; 64 << 10];
            let mut got = 0;
            // 64 KiB every 100 ms, until the server has given up: each of its writes moves
            // within a tenth of a second, so a timeout per write alone would let the 64 MiB
            // run for about 100 s.
            while !slow_done.load(std::sync::atomic::Ordering::Relaxed) {
                match c.read(&mut b) {
                    Ok(n) if n > 0 => got += n,
                    _ => break,
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            got
        });
        let (mut s, _) = listener.accept().unwrap();
        let big = vec![b'x'; 64 << 20];
        let deadline = Duration::from_secs(1);
        let t = Instant::now();
        assert!(
            !write_within(&mut s, &[&big], deadline),
            "64 MiB read slowly in time"
        );
        let took = t.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(s);
        assert!(took >= deadline, "{took:?}");
        // The deadline plus one write's timeout at most, not minutes: a loaded machine may
        // add seconds, never the answer's length.
        assert!(took < Duration::from_secs(20), "{took:?}");
        assert!(slow.join().unwrap() < big.len());

        let fast = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            let mut all = Vec::new();
            c.read_to_end(&mut all).unwrap();
            all.len()
        });
        let (mut s, _) = listener.accept().unwrap();
        let answer = vec![b'y'; 4 << 20];
        assert!(write_within(
            &mut s,
            &[&answer[..1000], &answer[1000..]],
            Duration::from_secs(60)
        ));
        drop(s);
        assert_eq!(fast.join().unwrap(), answer.len());
    }

    /// A client that takes nothing is given up after [`WRITE_STALL`], long before the
    /// deadline (it held its thread for the whole deadline).
    #[test]
    fn a_client_that_takes_nothing_is_given_up_at_the_stall() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let idle = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        let big = vec![b'x'; 64 << 20];
        let t = Instant::now();
        assert!(!write_within(&mut s, &[&big], Duration::from_secs(120)));
        let took = t.elapsed();
        assert!(took >= WRITE_STALL, "{took:?}");
        // The stall plus the buffers' filling, not the 120 s deadline: a loaded machine may
        // add seconds.
        assert!(took < Duration::from_secs(30), "{took:?}");
        drop(idle);
    }

    /// A stream whose socket buffer is set as small as the system allows (`SO_RCVBUF` for a
    /// client before it connects, `SO_SNDBUF` for an accepted stream), so that an answer of
    /// tens of KB does not fit in the two buffers.
    #[cfg(unix)]
    fn small_buffers(addr: std::net::SocketAddr) -> TcpStream {
        use std::os::fd::FromRawFd;
        let std::net::SocketAddr::V4(v4) = addr else {
            panic!("a v4 listener")
        };
        // SAFETY: a new socket whose descriptor is owned by the TcpStream made from it below
        // (or closed here on failure); `sa` is a valid sockaddr_in for the call's length.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0);
            let one: libc::c_int = 1;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                std::ptr::from_ref(&one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_port = v4.port().to_be();
            sa.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            let r = libc::connect(
                fd,
                std::ptr::from_ref(&sa).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            );
            if r != 0 {
                libc::close(fd);
                panic!("connect: {}", std::io::Error::last_os_error());
            }
            TcpStream::from_raw_fd(fd)
        }
    }

    #[cfg(unix)]
    fn small_send_buffer(s: &TcpStream) {
        use std::os::fd::AsRawFd;
        let one: libc::c_int = 1;
        // SAFETY: a valid descriptor and option value for the call's length.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                std::ptr::from_ref(&one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
    }

    /// The accepted end of `client`'s connection, with its request head read.
    #[cfg(unix)]
    fn accept_request(
        listener: &std::net::TcpListener,
        client: &mut TcpStream,
    ) -> (TcpStream, Vec<u8>) {
        use std::io::Write;
        let req = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
        client.write_all(req).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        let mut head = vec![0u8; req.len()];
        s.read_exact(&mut head).unwrap();
        (s, head)
    }

    /// An answer its client does not read leaves its place among the connections once it is
    /// built, so that the next request is answered, not refused 503 (one place here; 40 such
    /// clients held every place of a real server for the write's whole deadline); and the
    /// client that does not read is given up at the stall.
    #[cfg(unix)]
    #[test]
    fn an_answer_its_client_does_not_read_leaves_its_place() {
        let shared = Arc::new(Shared {
            opts: ServeOptions::new().max_connections(1),
            active: AtomicUsize::new(0),
            writing: AtomicUsize::new(0),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The page (25 KB) to a client that never reads.
        let mut idle = small_buffers(addr);
        let (s, head) = accept_request(&listener, &mut idle);
        small_send_buffer(&s);
        dispatch(s, head, &shared);
        let waiting = Instant::now();
        // Relaxed (here and below): the counts, read as the caps read them.
        while !(shared.writing.load(Ordering::Relaxed) == 1
            && shared.active.load(Ordering::Relaxed) == 0)
        {
            assert!(waiting.elapsed() < Duration::from_secs(30), "never writing");
            std::thread::sleep(Duration::from_millis(2));
        }
        // Still writing to the idle client (the stall is a second): a reading client now.
        let mut reader = TcpStream::connect(addr).unwrap();
        let (s, head) = accept_request(&listener, &mut reader);
        dispatch(s, head, &shared);
        let mut answer = Vec::new();
        reader.read_to_end(&mut answer).unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200 OK"),
            "{}",
            String::from_utf8_lossy(&answer[..answer.len().min(80)])
        );
        assert!(answer.len() > 20_000, "the page whole: {}", answer.len());
        // The idle client given up: its writer gone, its answer cut.
        while shared.writing.load(Ordering::Relaxed) != 0 {
            assert!(
                waiting.elapsed() < Duration::from_secs(60),
                "never given up"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        idle.set_nonblocking(true).unwrap();
        let mut got = Vec::new();
        let _ = idle.read_to_end(&mut got);
        assert!(got.len() < 20_000, "{}", got.len());
    }
}
