//! The watcher thread (`heatmap-watcher`, with `SIGPROF` blocked so it never samples itself
//! nor gets `EINTR`): it finds threads and gives each what its source needs (`source.rs`),
//! hosts the windows' scans while it runs (`crate::threads`: one list of the threads for both),
//! ticks for the sources that need a clock (tgkill, wall mode), gives libraries loaded later
//! buckets of their own, and checks every 5 ms that the handler is still ours.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::handler::{self, TABLE};
use super::lock;
use super::shared::{Interval, Shared};
use crate::buckets::{self, Table, TableSet};
use crate::config::Mode;
use crate::profile::SourceUsed;
use crate::signal::Installed;
use crate::sys;
use crate::threads;

/// How often the watcher checks, at least, that the `SIGPROF` handler is still ours.
const DISPOSITION_CHECK: Duration = Duration::from_millis(5);

/// How soon the watcher looks for new threads again after a look that found threads started
/// or ended (the scan interval otherwise): short-lived threads are then found within about a
/// millisecond while they keep coming, at a cost only while they do (figures in
/// heatmap/NOTES.md, `tests/short_threads.rs`).
const CHURN_SCAN: Duration = Duration::from_millis(1);

/// The tgkill source's longest pause between looks while every thread is idle, in ticks.
const MAX_IDLE_TICKS: u32 = 8;

pub(super) struct Watcher {
    /// The set published last (by `start` or by this watcher).
    pub(super) set: Arc<TableSet>,
    pub(super) shared: Arc<Shared>,
    /// What makes the samples: each source's part is in `source.rs`.
    pub(super) source: SourceUsed,
    /// Wall mode: blocked threads are read from `/proc` at every tick too.
    pub(super) mode: Mode,
    /// Our handler, to notice a replacement.
    pub(super) installed: Installed,
    pub(super) pid: libc::pid_t,
    pub(super) period_ns: u64,
    pub(super) shift: u32,
    pub(super) scan_interval: Duration,
    /// The loader's (adds, subs) when `set` was built.
    pub(super) generation: (u64, u64),
    /// When the sampler started (for the time of a replaced handler).
    pub(super) started: Instant,
    /// The `setitimer` source: the interval of our timer.
    pub(super) itimer: Option<Interval>,
    /// When `Shared::covered_ns` was last brought up to date with the live threads.
    pub(super) covered_at: Instant,
}

/// What the watcher holds per thread.
#[derive(Default)]
pub(super) struct Tracked {
    /// The perf event, if any.
    pub(super) fd: Option<libc::c_int>,
    /// `/proc/self/task/TID/syscall`, kept open (wall mode).
    pub(super) syscall: Option<File>,
    /// The tgkill source: the thread's CPU time at the last look, and the CPU time it has run
    /// since its last sample (at most two periods: a late watcher sends one signal per tick,
    /// never a burst, and the debt it keeps is at most one period).
    pub(super) cpu_ns: u64,
    pub(super) owed_ns: u64,
    /// The tgkill source: the thread's CPU time when first seen.
    pub(super) first_cpu_ns: u64,
}

impl Tracked {
    /// CPU ns the thread ran while sampled (`fd`: its perf event's count; else the tgkill
    /// source's progress since first seen, as of the last look).
    pub(super) fn covered_ns(&self) -> u64 {
        match self.fd {
            Some(fd) => sys::read_count(fd).unwrap_or(0),
            None => self.cpu_ns.saturating_sub(self.first_cpu_ns),
        }
    }
}

impl Watcher {
    /// The thread's body: scans, ticks and checks until `stop` says so (or the handler is
    /// replaced: then it stops every source, records when, and waits for stop).
    pub(super) fn run(mut self, stop: mpsc::Receiver<()>, ready: mpsc::Sender<()>) {
        handler::block_here();
        let me = sys::gettid();
        // From now on the windows' scans are ours (`crate::threads`): one thread lists the
        // threads for both samplers.
        threads::host(true);
        let mut threads: HashMap<libc::pid_t, Tracked> = HashMap::new();
        self.scan(me, &mut threads);
        let _ = ready.send(());
        let replaced = self.watch(me, &mut threads, &stop);
        // No more scans here: a thread of `crate::threads` takes the windows' over.
        threads::host(false);
        for (_, t) in threads.drain() {
            self.close(&t);
        }
        // Relaxed: read by `finish` after joining this thread (join synchronises).
        let closed = self.shared.covered_closed_ns.load(Ordering::Relaxed);
        self.shared.covered_ns.store(closed, Ordering::Relaxed);
        if let Some(by) = replaced {
            // Every perf event is closed (above) and the tgkill source sends no more: stop our
            // timer too, if it is still ours, then wait for stop.
            self.shared.release_timer(self.itimer);
            self.shared.note_replaced(self.started.elapsed(), by);
            let _ = stop.recv();
        }
        let (user, sys) = super::rusage_ns(libc::RUSAGE_THREAD);
        // Relaxed: read by `finish` after joining this thread (join synchronises).
        self.shared.watcher_user_ns.store(user, Ordering::Relaxed);
        // Relaxed: as above.
        self.shared.watcher_sys_ns.store(sys, Ordering::Relaxed);
    }

    /// The loop: until a stop request (`None`) or a replaced handler (`Some(what replaced
    /// it)`), wakes for the next tick, scan or disposition check, whichever comes first.
    fn watch(
        &mut self,
        me: libc::pid_t,
        threads: &mut HashMap<libc::pid_t, Tracked>,
        stop: &mpsc::Receiver<()>,
    ) -> Option<libc::sighandler_t> {
        let mut buf = [0u8; 256];
        let tick = Duration::from_nanos(self.period_ns);
        let mut next_scan = Instant::now() + self.scan_interval;
        let mut next_tick = Instant::now() + tick;
        let mut idle = 1u32;
        let mut next_check = Instant::now() + DISPOSITION_CHECK;
        loop {
            let now = Instant::now();
            let wake = if self.ticks() {
                next_tick.min(next_scan)
            } else {
                next_scan
            }
            .min(next_check);
            match stop.recv_timeout(wake.saturating_duration_since(now)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // A stop request, or the sampler is gone.
                _ => return None,
            }
            // First, before any signal is sent: is the handler still ours? If the program
            // installed its own, our signals would reach it (and it may not expect them).
            if let Some(by) = self.installed.replaced() {
                return Some(by);
            }
            let now = Instant::now();
            next_check = now + DISPOSITION_CHECK;
            if self.ticks() && now >= next_tick {
                let ran = self.tick(threads, &mut buf);
                next_tick += tick;
                if next_tick < now {
                    // Fell behind by more than a tick: do not burst to catch up.
                    next_tick = now + tick;
                }
                // The tgkill source in CPU mode: while no thread runs, look half as often each
                // time, down to one look per MAX_IDLE_TICKS ticks (an idle program should not
                // pay a core's few percent); the first look that finds a thread running goes
                // back to every tick. A burst that starts meanwhile loses at most the samples
                // of those ticks beyond the two periods a thread may owe.
                if self.source == SourceUsed::Tgkill && self.mode != Mode::Wall {
                    idle = if ran {
                        1
                    } else {
                        (idle * 2).min(MAX_IDLE_TICKS)
                    };
                    next_tick += tick * (idle - 1);
                }
            }
            if now >= next_scan {
                // While threads come and go, look again soon: a short-lived thread is sampled
                // only once found. A stable set of threads goes back to the scan interval.
                let churn = self.scan(me, threads);
                next_scan = now
                    + if churn {
                        CHURN_SCAN.min(self.scan_interval)
                    } else {
                        self.scan_interval
                    };
            }
        }
    }

    /// Gives objects the loader added since the last look a chunk of buckets of their own.
    fn new_libraries(&mut self) {
        let generation = buckets::loader_generation();
        if generation == self.generation {
            return;
        }
        self.generation = generation;
        // Objects added or removed: a new module set for the unwinder (pinning new libraries
        // against dlclose), swapped in for the handler.
        if let Some(stacks) = &self.set.stacks {
            stacks.refresh_modules();
        }
        let (objects, segments) = buckets::discover();
        let known = |o: &buckets::ObjectFile| {
            self.set
                .chunks
                .iter()
                .flat_map(|c| c.objects.iter())
                .any(|k| k.path == o.path && k.bias == o.bias)
        };
        let mut new_objects = Vec::new();
        let mut index = vec![usize::MAX; objects.len()];
        for (i, o) in objects.iter().enumerate() {
            if !known(o) {
                index[i] = new_objects.len();
                new_objects.push(o.clone());
            }
        }
        if new_objects.is_empty() {
            return;
        }
        let new_segments: Vec<buckets::SegmentRange> = segments
            .into_iter()
            .filter(|s| index[s.object] != usize::MAX)
            .map(|s| buckets::SegmentRange {
                object: index[s.object],
                ..s
            })
            .collect();
        let mut chunks = self.set.chunks.clone();
        chunks.push(Arc::new(Table::new(new_objects, new_segments, self.shift)));
        let set = Arc::new(TableSet {
            chunks,
            other: Arc::clone(&self.set.other),
            stacks: self.set.stacks.clone(),
        });
        // Keep every set alive until stop, then publish: a handler may hold the old pointer.
        lock(&self.shared.sets).push(Arc::clone(&set));
        TABLE.publish(Arc::as_ptr(&set));
        self.set = set;
    }

    /// Lists `/proc/self/task`: opens events for new threads, closes those of exited ones.
    /// Returns whether any thread started or ended since the last look.
    fn scan(&mut self, me: libc::pid_t, threads: &mut HashMap<libc::pid_t, Tracked>) -> bool {
        self.new_libraries();
        let all = match threads::alive(0) {
            Ok(all) => all,
            Err(e) => {
                let mut first = self
                    .shared
                    .scan_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                first.get_or_insert_with(|| {
                    format!("cannot list /proc/self/task ({e}): threads were not given perf events")
                });
                return false;
            }
        };
        // One list for both samplers: the windows follow the scans we host.
        threads::hosted_scan(&all);
        let alive: Vec<libc::pid_t> = all.into_iter().filter(|&tid| tid != me).collect();
        let before = threads.len();
        threads.retain(|tid, t| {
            let keep = alive.binary_search(tid).is_ok();
            if !keep {
                self.close(t);
                if let Some(stacks) = &self.set.stacks {
                    stacks.thread_exited(*tid);
                }
            }
            keep
        });
        let mut churn = threads.len() != before;
        for tid in alive {
            if threads.contains_key(&tid) {
                continue;
            }
            churn = true;
            // Exited between the listing and now: nothing to sample.
            let Some(tracked) = self.track(tid) else {
                continue;
            };
            if let Some(stacks) = &self.set.stacks {
                stacks.thread_started(tid);
            }
            threads.insert(tid, tracked);
        }
        if let Some(stacks) = &self.set.stacks {
            stacks.maintain(|| TABLE.idle());
        }
        // The CPU covered so far, for snapshots: closed threads' plus live ones' (a read per
        // live thread, so at most once per scan interval, not at every churn look).
        if self.covered_at.elapsed() >= self.scan_interval {
            self.covered_at = Instant::now();
            let live: u64 = threads.values().map(Tracked::covered_ns).sum();
            // Relaxed: tallies; a snapshot reads them as of the last update.
            let closed = self.shared.covered_closed_ns.load(Ordering::Relaxed);
            self.shared
                .covered_ns
                .store(closed + live, Ordering::Relaxed);
        }
        churn
    }

    /// A thread is gone (or sampling stops): books the CPU it ran while sampled and closes its
    /// event.
    pub(super) fn close(&self, t: &Tracked) {
        // Relaxed: a tally (the watcher is its only writer).
        self.shared
            .covered_closed_ns
            .fetch_add(t.covered_ns(), Ordering::Relaxed);
        if let Some(fd) = t.fd {
            sys::disable_and_close(fd);
        }
    }

    pub(super) fn failed(&self, tid: libc::pid_t, e: &std::io::Error) {
        // A thread that exited between the listing and the open lost nothing.
        if !threads::exited(tid, e) {
            // Relaxed: a tally.
            self.shared.failed_threads.fetch_add(1, Ordering::Relaxed);
        }
    }
}
