//! `profpoint top ADDR`: a serving process's points in the terminal, refreshed in place, as
//! `top` shows processes. It reads what the live server's page reads
//! (`/debug/profpoint?format=json`, `http.rs`), one request at a time on a thread of its own
//! (so that the keys answer while a request waits), and draws with ratatui on crossterm
//! (`view.rs`). The terminal is restored on every exit: `q`, Esc, Ctrl-C (a key in raw mode),
//! an error, and a panic (ratatui's hook).

mod http;
mod signals;
pub(crate) mod view;

use clap::Args;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use view::{Link, SortKey, View};

/// `profpoint top`'s arguments.
#[derive(Debug, Args)]
#[command(
    long_about = "Shows a serving process's points in the terminal, refreshed in place \
                  (the process serves them: profpoint's `serve` feature, PROFPOINT_SERVE or \
                  profpoint::serve). Keys: t total, s self, c calls, 9 p99, r calls per second \
                  over the last refresh, n name (each sorts by it; i inverts the order), / a \
                  filter (a glob, * and ?; text without them matches anywhere in a name), space \
                  pauses, arrows and Page Up/Down scroll, q, Esc or Ctrl-C quits. A server that \
                  stops answering is named in the status line and the last table stays."
)]
pub(crate) struct TopArgs {
    /// The serving process: HOST:PORT or http://HOST:PORT (e.g. 127.0.0.1:9464)
    #[arg(value_name = "ADDR")]
    addr: String,
    /// The server's token (sent as `Authorization: Bearer`); PROFPOINT_SERVE_TOKEN when not given
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Seconds between refreshes (0.2 to 3600)
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, value_parser = seconds)]
    every: f64,
    /// The first order: total, self, calls, p99, rate (calls per second) or name
    #[arg(long, value_name = "KEY", default_value = "total", value_parser = SortKey::parse)]
    sort: SortKey,
    /// Show only points whose name matches (a glob, or text found anywhere in the name)
    #[arg(long, value_name = "GLOB", default_value = "")]
    filter: String,
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.2..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: expected seconds from 0.2 to 3600")),
    }
}

/// What the request thread sends the screen.
enum Fetched {
    Report(Box<profpoint_report::Report>),
    Failed(String),
}

pub(crate) fn top(a: TopArgs, max_input: u64) -> Result<ExitCode, String> {
    let (host, addrs) = http::parse_addr(&a.addr)?;
    let token = a
        .token
        .or_else(|| std::env::var("PROFPOINT_SERVE_TOKEN").ok())
        .filter(|t| !t.is_empty());
    if let Some(t) = &token
        && t.chars().any(char::is_control)
    {
        return Err("the token has a control character, which no header can carry".into());
    }
    let target = http::Target {
        host: host.clone(),
        addrs,
        token,
    };
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(
            "standard output is not a terminal: top draws a screen (for the figures as text, \
             curl ADDR/debug/profpoint)"
                .into(),
        );
    }
    let paused = Arc::new(AtomicBool::new(false));
    let wake = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let (tx, rx) = mpsc::channel::<Fetched>();
    {
        let paused = Arc::clone(&paused);
        let wake = Arc::clone(&wake);
        let every = Duration::from_secs_f64(a.every);
        std::thread::Builder::new()
            .name("top-fetch".into())
            .spawn(move || fetch_loop(&target, every, max_input, &paused, &wake, &tx))
            .map_err(|e| format!("cannot start the request thread: {e}"))?;
    }
    let mut view = View::new(host, a.sort, a.filter, a.every);
    signals::catch();
    let mut terminal =
        ratatui::try_init().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let result = run(&mut terminal, &mut view, &rx, &paused, &wake);
    ratatui::restore();
    signals::end_by_the_signal_caught();
    result.map(|()| ExitCode::SUCCESS)
}

/// One request every `every` while not paused; a request that fails is tried again after the
/// same wait. A key that resumes wakes it at once.
fn fetch_loop(
    t: &http::Target,
    every: Duration,
    max: u64,
    paused: &AtomicBool,
    wake: &(std::sync::Mutex<bool>, std::sync::Condvar),
    tx: &mpsc::Sender<Fetched>,
) {
    loop {
        // Relaxed: a flag read once a refresh.
        if !paused.load(Ordering::Relaxed) {
            let got = http::get(t, "/debug/profpoint?format=json", max).and_then(|body| {
                let text = String::from_utf8(body)
                    .map_err(|_| "the answer is not UTF-8 text".to_string())?;
                profpoint_report::Report::from_json(&text)
                    .map(Box::new)
                    .map_err(|e| format!("the answer is not a report: {e}"))
            });
            let msg = match got {
                Ok(r) => Fetched::Report(r),
                Err(e) => Fetched::Failed(e),
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
        let (lock, cv) = wake;
        let mut woken = lock.lock().unwrap_or_else(|e| e.into_inner());
        if !*woken {
            woken = cv
                .wait_timeout(woken, every)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *woken = false;
    }
}

fn now_hms() -> String {
    // Local time without a time-zone crate: libc's localtime_r.
    #[cfg(unix)]
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()) as libc::time_t;
        // SAFETY: a zeroed `tm` is a valid value for localtime_r to overwrite; both pointers
        // are live for the call.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if !unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
            return format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
        }
    }
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02} UTC", s / 3600 % 24, s / 60 % 60, s % 60)
}

fn run(
    terminal: &mut ratatui::DefaultTerminal,
    view: &mut View,
    rx: &mpsc::Receiver<Fetched>,
    paused: &AtomicBool,
    wake: &(std::sync::Mutex<bool>, std::sync::Condvar),
) -> Result<(), String> {
    let mut dirty = true;
    let mut last_ok: Option<String> = None;
    loop {
        if signals::caught().is_some() {
            return Ok(());
        }
        while let Ok(m) = rx.try_recv() {
            match m {
                Fetched::Report(r) => {
                    view.update(*r);
                    let at = now_hms();
                    last_ok = Some(at.clone());
                    view.link = Link::Live(at);
                }
                Fetched::Failed(why) => view.link = Link::Gone(why, last_ok.clone()),
            }
            dirty = true;
        }
        if dirty {
            terminal
                .draw(|f| view.draw(f))
                .map_err(|e| format!("cannot draw: {e}"))?;
            dirty = false;
        }
        if !event::poll(Duration::from_millis(100)).map_err(|e| format!("terminal: {e}"))? {
            continue;
        }
        let ev = event::read().map_err(|e| format!("terminal: {e}"))?;
        dirty = true;
        let Event::Key(k) = ev else { continue };
        if k.kind != KeyEventKind::Press {
            continue;
        }
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return Ok(());
        }
        if let Some(t) = &mut view.typing {
            match k.code {
                KeyCode::Enter => {
                    view.filter = std::mem::take(t);
                    view.typing = None;
                    view.scroll = 0;
                }
                KeyCode::Esc => view.typing = None,
                KeyCode::Backspace => {
                    t.pop();
                }
                KeyCode::Char(c) if t.chars().count() < 200 => t.push(c),
                _ => {}
            }
            continue;
        }
        let key = |v: &mut View, s: SortKey| {
            v.key = s;
            v.scroll = 0;
            v.resort();
        };
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
            KeyCode::Char('t') => key(view, SortKey::Total),
            KeyCode::Char('s') => key(view, SortKey::SelfTime),
            KeyCode::Char('c') => key(view, SortKey::Calls),
            KeyCode::Char('9' | 'p') => key(view, SortKey::P99),
            KeyCode::Char('r') => key(view, SortKey::Rate),
            KeyCode::Char('n') => key(view, SortKey::Name),
            KeyCode::Char('i') => {
                view.reverse = !view.reverse;
                view.resort();
            }
            KeyCode::Char('/') => view.typing = Some(view.filter.clone()),
            KeyCode::Char(' ') => {
                view.paused = !view.paused;
                // Relaxed: read by the request thread at its next turn.
                paused.store(view.paused, Ordering::Relaxed);
                if !view.paused {
                    let (lock, cv) = wake;
                    *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
                    cv.notify_one();
                }
            }
            KeyCode::Down => view.scroll = view.scroll.saturating_add(1),
            KeyCode::Up => view.scroll = view.scroll.saturating_sub(1),
            KeyCode::PageDown => view.scroll = view.scroll.saturating_add(20),
            KeyCode::PageUp => view.scroll = view.scroll.saturating_sub(20),
            KeyCode::Home => view.scroll = 0,
            _ => {}
        }
    }
}
