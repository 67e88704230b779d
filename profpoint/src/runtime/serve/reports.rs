//! The report thread: it builds every report the endpoints answer from, one for all the
//! requests that waited together, and keeps the history for `?last=`.

use super::*;

/// How often the history keeps a report, and how many it keeps.
const HISTORY_EVERY: Duration = Duration::from_secs(10);
const HISTORY_KEPT: usize = 13;

/// Reports kept for `?last=` (oldest first), with when each was taken.
pub(super) static HISTORY: Mutex<Vec<(Instant, Report)>> = Mutex::new(Vec::new());

/// A job for the report thread: it answers from the batch's report.
type Job = Box<dyn FnOnce(&Batch) + Send>;

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
/// a fresh connection thread cost several times as much (its allocations met fresh pages:
/// BENCHMARKS.md, "Live server", has the figure).
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
