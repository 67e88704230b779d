//! The sampler: sources of samples, the watcher thread, and start/stop.
//!
//! # Sources
//!
//! CPU samples are `SIGPROF`s handled by `signal.rs`. The preferred source is one perf
//! software event per thread (`task-clock`, `sample_period = 1e9 / hz` ns, user space only as
//! `perf_event_paranoid` 2 requires), its overflow signal routed by `F_SETOWN_EX`/`F_SETSIG` to
//! that very thread: each thread is sampled exactly at `hz` per second of its own user-space
//! CPU time (measured here: 1 kHz +0.4%, 10 kHz +5.6%), and since the overflow only fires while
//! the thread runs in user space, a signal never lands on a thread blocked in a system call.
//! When `perf_event_open` is refused (paranoid 3, seccomp, old kernel) and the source is
//! [`Source::Auto`], `setitimer(ITIMER_PROF)` takes over: it needs no per-thread set-up but
//! delivers at most the kernel tick (250 Hz here); the report says so.
//!
//! # The watcher thread
//!
//! A perf event is per thread, and threads come and go without telling us. A small thread
//! (`heatmap-watcher`, with `SIGPROF` blocked so it never samples itself nor gets `EINTR`)
//! lists `/proc/self/task` every `scan_interval` (20 ms): a new tid gets an event, a vanished
//! tid's event is closed. At the same pace it checks the dynamic loader's `dlpi_adds` counter
//! and gives libraries `dlopen`ed since a chunk of buckets of their own (`buckets.rs`), with
//! either source. A new thread is thus sampled within one scan interval plus the
//! scan's own time, well inside 100 ms; a thread's exit loses nothing because its samples are
//! already in the shared buckets. `start` returns only after the first scan, so every thread
//! existing at that point is sampled from then on.
//!
//! In [`Mode::Wall`] the watcher also ticks at `hz`: for every thread it reads
//! `/proc/self/task/TID/syscall` (kept open, one `pread` of ~0.4 us each); a thread that is not
//! `running` is blocked, and the last field is its user pc (the system-call wrapper it waits
//! in), which is counted into the same buckets. Running threads are covered by their
//! `task-clock` signals, blocked ones by `/proc`, and no signal is ever sent to a blocked
//! thread, so `nanosleep`, `poll` or `epoll_wait` cannot see `EINTR` from us. Runnable threads
//! waiting for a CPU, and time in the kernel, are in neither (documented limitation).
//!
//! # Stopping
//!
//! `stop` (or drop) tells the watcher to close every event, disarms `setitimer`, withdraws the
//! table from the handler and waits for in-flight handlers (`signal::unpublish_and_drain`),
//! restores the previous `SIGPROF` disposition (only while it is still ours: a handler the
//! program installed after start stays, and so does an `ITIMER_PROF` it re-armed with other
//! values; the watcher, which checks the handler every 5 ms, has then already stopped every
//! source and recorded when), and only then reads the final counts. In a
//! `fork`ed child (which inherits the sampler's memory but not its watcher thread, and whose
//! threads have no perf events), stop skips the join and just restores the disposition.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::buckets::{self, Table, TableSet};
use crate::config::{Config, MAX_HZ, MAX_SHIFT, Mode, Source};
use crate::error::StartError;
use crate::profile::{Profile, Segment, SourceUsed};
use crate::signal;
use crate::sys;

/// One sampler per process: there is one `SIGPROF` disposition.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// Counters the watcher shares with the sampler.
#[derive(Debug, Default)]
struct Shared {
    /// `/proc` samples of blocked threads (wall mode).
    proc_samples: AtomicU64,
    /// Threads that got a perf event.
    threads: AtomicU64,
    /// Threads whose event could not be opened (other than because they had just exited).
    failed_threads: AtomicU64,
    /// The first error listing `/proc/self/task` (no /proc: no thread gets an event).
    scan_error: Mutex<Option<String>>,
    /// Every table set published, the current one last. Kept until stop: a handler may still
    /// be reading an older one.
    sets: Mutex<Vec<Arc<TableSet>>>,
    /// Wall-mode ticks done.
    ticks: AtomicU64,
    /// CPU time, in ns, that threads ran while they carried our sampling (their perf
    /// event's count, or the tgkill source's CPU-clock progress since first seen): of threads
    /// gone, plus of live ones as of the watcher's last look. The process's CPU beyond it ran
    /// on threads nothing sampled (see `Profile::unarmed_cpu_ns`).
    covered_ns: AtomicU64,
    /// Of `covered_ns`, the part of threads whose events are closed (final).
    covered_closed_ns: AtomicU64,
    /// The watcher's own user CPU time, in ns, written when it exits.
    watcher_user_ns: AtomicU64,
    /// The watcher's own system CPU time, in ns, written when it exits.
    watcher_sys_ns: AtomicU64,
    /// Our `SIGPROF` handler was found replaced (the first time only).
    replaced: Mutex<Option<Replaced>>,
    /// The `setitimer` source's timer was dealt with (disarmed, or found re-armed by the
    /// program and left alone): never touch `ITIMER_PROF` again.
    timer_released: AtomicBool,
}

/// The program replaced our `SIGPROF` disposition while we sampled.
#[derive(Debug, Clone, Copy)]
struct Replaced {
    /// Time from start to the moment it was noticed (sampling stopped then).
    after: Duration,
    /// The disposition found instead of ours.
    by: libc::sighandler_t,
}

impl Shared {
    /// Records a replacement found `after` start (keeps the first one).
    fn note_replaced(&self, after: Duration, by: libc::sighandler_t) {
        lock(&self.replaced).get_or_insert(Replaced { after, by });
    }

    /// Disarms `ITIMER_PROF` if it still has the interval we armed (`ours`); a timer the
    /// program re-armed with other values is the program's and stays. Only the first call acts.
    fn release_timer(&self, ours: Option<Interval>) {
        let Some(ours) = ours else { return };
        // Relaxed: only a once-flag; the timer itself is kernel state.
        if self.timer_released.swap(true, Ordering::Relaxed) {
            return;
        }
        // SAFETY: an all-zero itimerval is a valid out-parameter.
        let mut now: libc::itimerval = unsafe { std::mem::zeroed() };
        // SAFETY: `now` is a live itimerval for getitimer to fill.
        unsafe { libc::getitimer(libc::ITIMER_PROF, &mut now) };
        if interval(&now) == ours {
            // SAFETY: an all-zero itimerval disarms the timer.
            unsafe {
                let zero: libc::itimerval = std::mem::zeroed();
                libc::setitimer(libc::ITIMER_PROF, &zero, std::ptr::null_mut());
            }
        }
    }
}

/// An `itimerval`'s interval: (seconds, microseconds).
type Interval = (libc::time_t, libc::suseconds_t);

/// An `itimerval`'s interval.
fn interval(it: &libc::itimerval) -> Interval {
    (it.it_interval.tv_sec, it.it_interval.tv_usec)
}

/// How often the watcher checks, at least, that the `SIGPROF` handler is still ours.
const DISPOSITION_CHECK: Duration = Duration::from_millis(5);

/// How soon the watcher looks for new threads again after a look that found threads started
/// or ended (the scan interval otherwise): short-lived threads are then found within about a
/// millisecond while they keep coming, at a cost only while they do (figures in
/// heatmap/NOTES.md, `tests/short_threads.rs`).
const CHURN_SCAN: Duration = Duration::from_millis(1);

/// A running sampler. [`stop`](Sampler::stop) it to get the [`Profile`]; dropping it stops
/// sampling too (and discards the counts).
#[derive(Debug)]
pub struct Sampler {
    inner: Option<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    source: SourceUsed,
    previous: signal::Previous,
    /// The `setitimer` source: the interval of the timer we armed, as the kernel reports it.
    itimer: Option<Interval>,
    watcher: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
    shared: Arc<Shared>,
    started: Instant,
    /// The process that started sampling: a `fork`ed child has no watcher thread to join.
    pid: u32,
    user_ns_at_start: u64,
    sys_ns_at_start: u64,
    warnings: Vec<String>,
}

/// Starts sampling every thread of the process. See the crate docs.
pub fn start(config: Config) -> Result<Sampler, StartError> {
    if config.hz == 0 || config.hz > MAX_HZ {
        return Err(StartError::InvalidHz(config.hz));
    }
    if config.shift > MAX_SHIFT {
        return Err(StartError::InvalidShift(config.shift));
    }
    // Acquire: pairs with the Release store in `Inner::finish`, so everything the previous
    // sampler did happens before we start. Relaxed on failure: we touch nothing then.
    if RUNNING
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return Err(StartError::AlreadyRunning);
    }
    start_claimed(config).inspect_err(|_| {
        // Release: see above.
        RUNNING.store(false, Ordering::Release);
    })
}

#[cold]
#[inline(never)]
fn start_claimed(config: Config) -> Result<Sampler, StartError> {
    let (objects, segments) = buckets::discover();
    if segments.is_empty() {
        return Err(StartError::NoExecutableSegments);
    }
    let chunk = Arc::new(Table::new(objects, segments, config.shift));
    let set = Arc::new(TableSet {
        chunks: vec![chunk],
        other: Arc::default(),
    });
    let mut warnings = Vec::new();
    let period_ns = 1_000_000_000u64 / u64::from(config.hz);

    // Choose the source before touching the signal disposition.
    let source = match config.source {
        Source::Setitimer => SourceUsed::Setitimer,
        Source::Tgkill => SourceUsed::Tgkill,
        Source::PerfTaskClock | Source::Auto => {
            match sys::open_task_clock(sys::gettid(), period_ns) {
                Ok(fd) => {
                    sys::disable_and_close(fd);
                    SourceUsed::PerfTaskClock
                }
                Err(e) if config.source == Source::PerfTaskClock => {
                    return Err(StartError::PerfUnavailable(e));
                }
                Err(e) => {
                    warnings.push(format!(
                    "perf_event_open(task-clock) failed ({e}): fell back to setitimer(ITIMER_PROF), \
                     which delivers at most the kernel tick (typically 250 Hz)"
                ));
                    SourceUsed::Setitimer
                }
            }
        }
    };
    if source == SourceUsed::Setitimer && config.mode == Mode::Wall {
        warnings.push(
            "wall mode with setitimer: the process-directed SIGPROF can reach a blocked thread, \
             so nanosleep/poll/epoll_wait may return EINTR"
                .to_owned(),
        );
    }

    let previous = signal::install()?;
    let shared = Arc::new(Shared::default());
    lock(&shared.sets).push(Arc::clone(&set));
    signal::publish(Arc::as_ptr(&set));
    let (user_ns_at_start, sys_ns_at_start) = rusage_ns(libc::RUSAGE_SELF);
    let started = Instant::now();

    let mut inner = Inner {
        config: config.clone(),
        source,
        previous,
        itimer: None,
        watcher: None,
        shared: Arc::clone(&shared),
        started,
        pid: std::process::id(),
        user_ns_at_start,
        sys_ns_at_start,
        warnings,
    };

    if source == SourceUsed::Setitimer {
        let usec = (1_000_000 / i64::from(config.hz)).max(1);
        let tv = libc::timeval {
            tv_sec: (usec / 1_000_000) as libc::time_t,
            tv_usec: (usec % 1_000_000) as libc::suseconds_t,
        };
        let it = libc::itimerval {
            it_interval: tv,
            it_value: tv,
        };
        // SAFETY: `it` is a valid itimerval; the old value is not wanted (null).
        if unsafe { libc::setitimer(libc::ITIMER_PROF, &it, std::ptr::null_mut()) } != 0 {
            let e = std::io::Error::last_os_error();
            inner.teardown();
            return Err(StartError::Setitimer(e));
        }
        // SAFETY: an all-zero itimerval is a valid out-parameter.
        let mut armed: libc::itimerval = unsafe { std::mem::zeroed() };
        // SAFETY: `armed` is a live itimerval for getitimer to fill.
        unsafe { libc::getitimer(libc::ITIMER_PROF, &mut armed) };
        inner.itimer = Some(interval(&armed));
    }

    // The watcher runs in every configuration: it finds new threads (perf source), reads
    // blocked threads (wall mode), and gives libraries loaded later their own buckets.
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let wait_for_first_scan = config.wait_for_first_scan;
    let watcher = Watcher {
        set,
        shared: Arc::clone(&shared),
        perf: source == SourceUsed::PerfTaskClock,
        tgkill: source == SourceUsed::Tgkill,
        pid: std::process::id() as libc::pid_t,
        wall: config.mode == Mode::Wall,
        period_ns,
        shift: config.shift,
        scan_interval: config.scan_interval,
        generation: buckets::loader_generation(),
        started,
        itimer: inner.itimer,
        covered_at: started,
    };
    let spawned = std::thread::Builder::new()
        .name("heatmap-watcher".to_owned())
        .spawn(move || watcher.run(stop_rx, ready_tx));
    match spawned {
        Ok(handle) => {
            inner.watcher = Some((stop_tx, handle));
            // The watcher signals after its first scan; if it died, recv fails: go on. Not
            // inside a loader's initialiser (see `Config::wait_for_first_scan`).
            if wait_for_first_scan {
                let _ = ready_rx.recv();
            }
        }
        Err(e) => {
            inner.teardown();
            return Err(StartError::Spawn(e));
        }
    }
    Ok(Sampler { inner: Some(inner) })
}

impl Sampler {
    /// Stops sampling and returns everything collected.
    pub fn stop(mut self) -> Profile {
        let inner = self
            .inner
            .take()
            .expect("a Sampler holds its state until stopped");
        inner.finish()
    }

    /// The counts so far, without stopping (samples in flight may be missed).
    pub fn snapshot(&self) -> Profile {
        let inner = self
            .inner
            .as_ref()
            .expect("a Sampler holds its state until stopped");
        inner.profile(Vec::new(), true)
    }

    /// The source in use.
    pub fn source(&self) -> SourceUsed {
        self.inner
            .as_ref()
            .map_or(SourceUsed::Setitimer, |i| i.source)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            drop(inner.finish());
        }
    }
}

impl Inner {
    /// Stops every source, drains the handler, restores the signal disposition.
    fn teardown(&mut self) {
        if let Some((stop_tx, handle)) = self.watcher.take() {
            if std::process::id() == self.pid {
                let _ = stop_tx.send(());
                let _ = handle.join();
            } else {
                // A forked child: the watcher thread was not copied, and joining its handle
                // would wait forever. Its perf events belong to the parent's threads.
                std::mem::forget(handle);
            }
        }
        self.shared.release_timer(self.itimer);
        signal::unpublish_and_drain(std::process::id() != self.pid);
        if let Err(by) = signal::restore(self.previous) {
            self.shared.note_replaced(self.started.elapsed(), by);
        }
    }

    fn finish(mut self) -> Profile {
        self.teardown();
        let mut extra = Vec::new();
        // Libraries loaded after the watcher's last scan had no buckets: their samples are in
        // "other".
        let current = self.current();
        let (now, _) = buckets::discover();
        for o in now {
            let known = current
                .chunks
                .iter()
                .flat_map(|c| c.objects.iter())
                .any(|s| s.path == o.path && s.bias == o.bias);
            if !known {
                extra.push(format!(
                    "{} was loaded too late to get buckets (after the last scan): its samples \
                     are counted in \"other\"",
                    o.path
                ));
            }
        }
        let profile = self.profile(extra, false);
        // Release: see `start`.
        RUNNING.store(false, Ordering::Release);
        profile
    }

    /// The table set in use now (the last one published).
    fn current(&self) -> Arc<TableSet> {
        Arc::clone(
            lock(&self.shared.sets)
                .last()
                .expect("start publishes a first set"),
        )
    }

    /// The profile so far; `live`: the sampler still runs (a snapshot), so a replaced handler
    /// not yet seen by the watcher is looked for here too.
    fn profile(&self, extra_warnings: Vec<String>, live: bool) -> Profile {
        if let Some(by) = signal::replaced().filter(|_| live) {
            self.shared.note_replaced(self.started.elapsed(), by);
        }
        let replaced = *lock(&self.shared.replaced);
        let current = self.current();
        let mut objects = Vec::new();
        let mut segments = Vec::new();
        for chunk in &current.chunks {
            let offset = objects.len();
            objects.extend(chunk.objects.iter().cloned());
            for (i, s) in chunk.segments.iter().enumerate() {
                segments.push(Segment {
                    object: offset + s.object,
                    start: s.start,
                    end: s.end,
                    counts: chunk.read_slot(i),
                });
            }
        }
        // Relaxed: plain tallies; `finish` reads them after joining the watcher.
        let watcher_user = self.shared.watcher_user_ns.load(Ordering::Relaxed);
        // Relaxed: as above.
        let watcher_sys = self.shared.watcher_sys_ns.load(Ordering::Relaxed);
        let (user_now, sys_now) = rusage_ns(libc::RUSAGE_SELF);
        let user_cpu_ns = user_now
            .saturating_sub(self.user_ns_at_start)
            .saturating_sub(watcher_user);
        let sys_cpu_ns = sys_now
            .saturating_sub(self.sys_ns_at_start)
            .saturating_sub(watcher_sys);
        let wall_ns = self.started.elapsed().as_nanos() as u64;
        // Per-thread sources only (setitimer's timer covers the whole process): the CPU that
        // ran on threads no event covered: threads that ended before the watcher found them.
        let unarmed_cpu_ns = match self.source {
            SourceUsed::Setitimer => 0,
            // Relaxed: a tally (exact after the watcher was joined).
            _ => (user_cpu_ns + sys_cpu_ns)
                .saturating_sub(self.shared.covered_ns.load(Ordering::Relaxed)),
        };
        let mut p = Profile {
            mode: self.config.mode,
            source: self.source,
            requested_hz: self.config.hz,
            shift: self.config.shift,
            objects,
            segments,
            // Relaxed: a tally (see `Table::try_hit`).
            other: current.other.load(Ordering::Relaxed),
            // Relaxed: a tally written by the watcher only.
            proc_samples: self.shared.proc_samples.load(Ordering::Relaxed),
            user_cpu_ns,
            sys_cpu_ns,
            watcher_cpu_ns: watcher_user + watcher_sys,
            wall_ns,
            // Relaxed: a tally.
            threads: self.shared.threads.load(Ordering::Relaxed),
            unarmed_cpu_ns,
            warnings: self.warnings.clone(),
        };
        let cpu_ns = user_cpu_ns + sys_cpu_ns;
        // Worth a line: a twentieth of the CPU and 20 ms (a snapshot's live threads are
        // counted as of the watcher's last look, up to one scan interval stale).
        let unarmed_matters = unarmed_cpu_ns * 20 >= cpu_ns && unarmed_cpu_ns >= 20_000_000;
        if unarmed_matters {
            p.warnings.push(format!(
                "{:.0} ms of the process's {:.0} ms of CPU ({:.0}%) ran on threads that carried no \
                 sampling event: threads that ended before the watcher's next look (it finds new \
                 threads every {} ms) are not sampled; {} thread(s) were sampled",
                unarmed_cpu_ns as f64 / 1e6,
                cpu_ns as f64 / 1e6,
                unarmed_cpu_ns as f64 * 100.0 / cpu_ns as f64,
                self.config.scan_interval.as_millis(),
                p.threads,
            ));
        }
        // Relaxed: a tally.
        let failed = self.shared.failed_threads.load(Ordering::Relaxed);
        if failed > 0 {
            p.warnings.push(format!(
                "{failed} thread(s) could not be given a perf event and were not sampled"
            ));
        }
        if let Some(e) = lock(&self.shared.scan_error).clone() {
            p.warnings.push(e);
        }
        if let Some(r) = replaced {
            p.warnings.push(format!(
                "SIGPROF was taken over by the program {:.3} s after start (its disposition is \
                 now {}, not ours): sampling stopped then and the program's disposition was left \
                 in place, so the counts cover only the first {:.3} s of the {:.3} s run and rates \
                 per CPU second read low",
                r.after.as_secs_f64(),
                signal::describe(r.by),
                r.after.as_secs_f64(),
                wall_ns as f64 / 1e9,
            ));
        }
        // A replaced handler explains a low rate; do not blame the kernel or the machine.
        if let Some(achieved) = p.achieved_hz().filter(|_| replaced.is_none()) {
            let requested = f64::from(self.config.hz);
            // 5%: the rate promise of the issue; below it the report must say so.
            if achieved < requested * 0.95 && user_cpu_ns >= 100_000_000 {
                let why = match self.source {
                    // The CPU nothing sampled explains it (the line above): not the kernel.
                    _ if unarmed_matters => {
                        "much of the CPU ran on threads that ended unsampled, see above".to_owned()
                    }
                    SourceUsed::PerfTaskClock => format!(
                        "kernel.perf_event_max_sample_rate = {}",
                        std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
                            .map(|s| s.trim().to_owned())
                            .unwrap_or_else(|_| "unknown".to_owned())
                    ),
                    SourceUsed::Setitimer => {
                        "setitimer delivers at most one signal per kernel tick".to_owned()
                    }
                    SourceUsed::Tgkill => "the watcher wakes late or the machine is busy: it \
                                           signals each thread at most once per wake-up"
                        .to_owned(),
                };
                p.warnings.push(format!(
                    "achieved {achieved:.0} samples per user-CPU second, below the {} Hz requested \
                     (source {}: {why})",
                    self.config.hz,
                    self.source.name()
                ));
            }
        }
        if self.config.mode == Mode::Wall && wall_ns >= 100_000_000 {
            // Relaxed: a tally.
            let ticks = self.shared.ticks.load(Ordering::Relaxed) as f64;
            let tick_hz = ticks / (wall_ns as f64 / 1e9);
            if tick_hz < f64::from(self.config.hz) * 0.95 {
                p.warnings.push(format!(
                    "wall mode: blocked threads were read {tick_hz:.0} times per second, below the \
                     {} Hz requested (the watcher could not keep up)",
                    self.config.hz
                ));
            }
        }
        p.warnings.extend(extra_warnings);
        p
    }
}

/// (user, system) CPU time of the process (`RUSAGE_SELF`) or thread (`RUSAGE_THREAD`), in ns.
fn rusage_ns(who: libc::c_int) -> (u64, u64) {
    // SAFETY: an all-zero rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live rusage; `who` is RUSAGE_SELF or RUSAGE_THREAD.
    unsafe { libc::getrusage(who, &mut ru) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

// === the watcher thread ===

/// The tgkill source's longest pause between looks while every thread is idle, in ticks.
const MAX_IDLE_TICKS: u32 = 8;

struct Watcher {
    /// The set published last (by `start` or by this watcher).
    set: Arc<TableSet>,
    shared: Arc<Shared>,
    perf: bool,
    /// The tgkill source: the watcher samples each thread by its CPU clock.
    tgkill: bool,
    pid: libc::pid_t,
    wall: bool,
    period_ns: u64,
    shift: u32,
    scan_interval: Duration,
    /// The loader's (adds, subs) when `set` was built.
    generation: (u64, u64),
    /// When the sampler started (for the time of a replaced handler).
    started: Instant,
    /// The `setitimer` source: the interval of our timer.
    itimer: Option<Interval>,
    /// When `Shared::covered_ns` was last brought up to date with the live threads.
    covered_at: Instant,
}

/// What the watcher holds per thread.
struct Tracked {
    /// The perf event, if any.
    fd: Option<libc::c_int>,
    /// `/proc/self/task/TID/syscall`, kept open (wall mode).
    syscall: Option<File>,
    /// The tgkill source: the thread's CPU time at the last look, and the CPU time it has run
    /// since its last sample (at most two periods: a late watcher sends one signal per tick,
    /// never a burst, and the debt it keeps is at most one period).
    cpu_ns: u64,
    owed_ns: u64,
    /// The tgkill source: the thread's CPU time when first seen.
    first_cpu_ns: u64,
}

impl Tracked {
    /// CPU ns the thread ran while sampled (`fd`: its perf event's count; else the tgkill
    /// source's progress since first seen, as of the last look).
    fn covered_ns(&self) -> u64 {
        match self.fd {
            Some(fd) => sys::read_count(fd).unwrap_or(0),
            None => self.cpu_ns.saturating_sub(self.first_cpu_ns),
        }
    }
}

impl Watcher {
    fn run(mut self, stop: mpsc::Receiver<()>, ready: mpsc::Sender<()>) {
        block_sigprof_here();
        let me = sys::gettid();
        let mut threads: HashMap<libc::pid_t, Tracked> = HashMap::new();
        self.scan(me, &mut threads);
        let _ = ready.send(());
        let mut buf = [0u8; 256];
        let tick = Duration::from_nanos(self.period_ns);
        let mut next_scan = Instant::now() + self.scan_interval;
        let mut next_tick = Instant::now() + tick;
        let mut idle = 1u32;
        let mut next_check = Instant::now() + DISPOSITION_CHECK;
        let replaced = loop {
            let now = Instant::now();
            let wake = if self.wall || self.tgkill {
                next_tick.min(next_scan)
            } else {
                next_scan
            }
            .min(next_check);
            match stop.recv_timeout(wake.saturating_duration_since(now)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // A stop request, or the sampler is gone.
                _ => break None,
            }
            // First, before any signal is sent: is the handler still ours? If the program
            // installed its own, our signals would reach it (and it may not expect them).
            if let Some(by) = signal::replaced() {
                break Some(by);
            }
            let now = Instant::now();
            next_check = now + DISPOSITION_CHECK;
            if (self.wall || self.tgkill) && now >= next_tick {
                let mut ran = true;
                if self.tgkill {
                    ran = self.signal_runners(&mut threads);
                }
                if self.wall {
                    self.sample_blocked(&threads, &mut buf);
                    // Relaxed: a tally.
                    self.shared.ticks.fetch_add(1, Ordering::Relaxed);
                }
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
                if self.tgkill && !self.wall {
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
                let churn = self.scan(me, &mut threads);
                next_scan = now
                    + if churn {
                        CHURN_SCAN.min(self.scan_interval)
                    } else {
                        self.scan_interval
                    };
            }
        };
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
        let (user, sys) = rusage_ns(libc::RUSAGE_THREAD);
        // Relaxed: read by `finish` after joining this thread (join synchronises).
        self.shared.watcher_user_ns.store(user, Ordering::Relaxed);
        // Relaxed: as above.
        self.shared.watcher_sys_ns.store(sys, Ordering::Relaxed);
    }

    /// Gives objects the loader added since the last look a chunk of buckets of their own.
    fn new_libraries(&mut self) {
        let generation = buckets::loader_generation();
        if generation == self.generation {
            return;
        }
        self.generation = generation;
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
        });
        // Keep every set alive until stop, then publish: a handler may hold the old pointer.
        lock(&self.shared.sets).push(Arc::clone(&set));
        signal::publish(Arc::as_ptr(&set));
        self.set = set;
    }

    /// Lists `/proc/self/task`: opens events for new threads, closes those of exited ones.
    /// Returns whether any thread started or ended since the last look.
    fn scan(&mut self, me: libc::pid_t, threads: &mut HashMap<libc::pid_t, Tracked>) -> bool {
        self.new_libraries();
        let dir = match std::fs::read_dir("/proc/self/task") {
            Ok(dir) => dir,
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
        let mut alive: Vec<libc::pid_t> = dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&tid| tid != me)
            .collect();
        alive.sort_unstable();
        let before = threads.len();
        threads.retain(|tid, t| {
            let keep = alive.binary_search(tid).is_ok();
            if !keep {
                self.close(t);
            }
            keep
        });
        let mut churn = threads.len() != before;
        for tid in alive {
            if threads.contains_key(&tid) {
                continue;
            }
            churn = true;
            let mut tracked = Tracked {
                fd: None,
                syscall: None,
                cpu_ns: 0,
                owed_ns: 0,
                first_cpu_ns: 0,
            };
            if self.tgkill {
                match sys::thread_cpu_ns(tid) {
                    Some(ns) => {
                        tracked.cpu_ns = ns;
                        tracked.first_cpu_ns = ns;
                        // Relaxed: a tally.
                        self.shared.threads.fetch_add(1, Ordering::Relaxed);
                    }
                    // Exited between the listing and now: nothing to sample.
                    None => continue,
                }
            }
            if self.perf {
                match sys::open_task_clock(tid, self.period_ns) {
                    Ok(fd) => match sys::route_and_enable(fd, tid, signal::SIGNAL) {
                        Ok(()) => {
                            tracked.fd = Some(fd);
                            // Relaxed: a tally.
                            self.shared.threads.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            sys::disable_and_close(fd);
                            self.failed(tid, &e);
                        }
                    },
                    Err(e) => self.failed(tid, &e),
                }
            }
            if self.wall {
                tracked.syscall = File::open(format!("/proc/self/task/{tid}/syscall")).ok();
            }
            threads.insert(tid, tracked);
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
    fn close(&self, t: &Tracked) {
        // Relaxed: a tally (the watcher is its only writer).
        self.shared
            .covered_closed_ns
            .fetch_add(t.covered_ns(), Ordering::Relaxed);
        if let Some(fd) = t.fd {
            sys::disable_and_close(fd);
        }
    }

    fn failed(&self, tid: libc::pid_t, e: &std::io::Error) {
        // ESRCH: the thread exited between the listing and the open; nothing lost.
        let exited = e.raw_os_error() == Some(libc::ESRCH)
            || !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists();
        if !exited {
            // Relaxed: a tally.
            self.shared.failed_threads.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The tgkill source: sends `SIGPROF` to every thread that has run a period of CPU since
    /// its last sample (the handler, on that thread, counts its pc).
    /// Returns whether any thread ran since the last look.
    fn signal_runners(&self, threads: &mut HashMap<libc::pid_t, Tracked>) -> bool {
        let mut ran = false;
        for (&tid, t) in threads.iter_mut() {
            let Some(now) = sys::thread_cpu_ns(tid) else {
                continue;
            };
            ran |= now > t.cpu_ns;
            t.owed_ns = (t.owed_ns + now.saturating_sub(t.cpu_ns)).min(2 * self.period_ns);
            t.cpu_ns = now;
            if t.owed_ns >= self.period_ns {
                t.owed_ns -= self.period_ns;
                // SAFETY: tgkill with integer arguments; a thread that exited since the clock
                // read makes it fail with ESRCH, nothing else.
                unsafe { libc::syscall(libc::SYS_tgkill, self.pid, tid, signal::SIGNAL) };
            }
        }
        ran
    }

    /// Wall mode: counts the pc of every blocked thread once.
    fn sample_blocked(&self, threads: &HashMap<libc::pid_t, Tracked>, buf: &mut [u8]) {
        for t in threads.values() {
            let Some(f) = &t.syscall else { continue };
            let Ok(n) = f.read_at(buf, 0) else { continue };
            if let Some(pc) = blocked_pc(&buf[..n]) {
                self.set.hit(pc);
                // Relaxed: a tally.
                self.shared.proc_samples.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Locks a mutex, ignoring poisoning (the data behind it stays consistent: pushes and reads).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Parses `/proc/PID/task/TID/syscall`: `running` (None), or fields whose last is the user pc
/// in hex (`230 0x1 ... 0x7ffd...sp 0x7f...pc`, or `-1 0xsp 0xpc` outside a system call).
pub(crate) fn blocked_pc(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    if text.is_empty() || text == "running" {
        return None;
    }
    let mut fields = text.split_ascii_whitespace();
    let first = fields.next()?;
    first.parse::<i64>().ok()?;
    let last = fields.last()?;
    let pc = u64::from_str_radix(last.strip_prefix("0x")?, 16).ok()?;
    (pc != 0).then_some(pc)
}

/// Blocks `SIGPROF` in the calling thread (the watcher never samples itself or sees EINTR).
fn block_sigprof_here() {
    // SAFETY: an all-zero sigset_t is initialised by sigemptyset before use; pthread_sigmask
    // only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal::SIGNAL);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_syscall_lines_parse() {
        assert_eq!(blocked_pc(b"running\n"), None);
        assert_eq!(
            blocked_pc(b"230 0x1 0x0 0x7ffc 0x0 0x0 0x0 0x7ffd1230 0x7f0012345545\n"),
            Some(0x7f00_1234_5545)
        );
        assert_eq!(blocked_pc(b"-1 0x7ffd1230 0x55aa00\n"), Some(0x55aa00));
        assert_eq!(blocked_pc(b""), None);
        assert_eq!(blocked_pc(b"garbage 0x1"), None);
        assert_eq!(blocked_pc(b"0 0xzz"), None);
    }

    /// The real file, read for a thread known to be blocked in `read` on a pipe.
    #[test]
    fn proc_syscall_of_a_blocked_thread_has_a_pc() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (tid_tx, tid_rx) = mpsc::channel();
        let reader = fds[0];
        let h = std::thread::spawn(move || {
            tid_tx.send(sys::gettid()).unwrap();
            let mut b = [0u8; 1];
            // SAFETY: reading one byte into a live one-byte buffer.
            unsafe { libc::read(reader, b.as_mut_ptr().cast(), 1) }
        });
        let tid = tid_rx.recv().unwrap();
        let mut pc = None;
        for _ in 0..200 {
            std::thread::sleep(Duration::from_millis(5));
            let text = std::fs::read(format!("/proc/self/task/{tid}/syscall")).unwrap();
            pc = blocked_pc(&text);
            if pc.is_some() {
                break;
            }
        }
        // SAFETY: writing one byte from a live buffer to the pipe we opened.
        assert_eq!(unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) }, 1);
        assert_eq!(h.join().unwrap(), 1);
        let pc = pc.expect("a thread blocked in read shows a pc");
        let (objects, segments) = buckets::discover();
        let seg = segments
            .iter()
            .find(|s| s.start <= pc && pc < s.end)
            .expect("the blocked pc lies in an executable segment");
        assert!(
            objects[seg.object].path.contains("libc"),
            "{}",
            objects[seg.object].path
        );
        // SAFETY: closing the pipe we opened.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
