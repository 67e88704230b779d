//! The sampler: sources of samples, the watcher thread, and start/stop.
//!
//! # Sources
//!
//! CPU samples are `SIGPROF`s handled by `handler.rs` through the sampler core (`signal.rs`,
//! which the per-function windows of `pmu/` use too). Each source's part is in `source.rs`;
//! the watcher thread's loop in `watcher.rs` calls it by the source in use, whatever it is.
//! The preferred source is one perf software event per thread (`task-clock`,
//! `sample_period = 1e9 / hz` ns, user space only as `perf_event_paranoid` 2 requires), its
//! overflow signal routed by `F_SETOWN_EX`/`F_SETSIG` to that very thread: each thread is
//! sampled at `hz` per second of its own user-space CPU time (BENCHMARKS.md has the measured
//! rates and overheads), and since the overflow only fires while the thread runs in user
//! space, a signal never lands on a thread blocked in a system call.
//! When `perf_event_open` is refused (paranoid 3, seccomp, old kernel) and the source is
//! [`Source::Auto`], `setitimer(ITIMER_PROF)` takes over: it needs no per-thread set-up but
//! delivers at most the kernel tick (250 Hz here); the report says so. [`Source::Tgkill`]
//! moves the timer to the watcher: at every tick it reads each thread's CPU clock and sends
//! `SIGPROF` with `tgkill` to each thread that ran a period since its last sample (a thread
//! pays less per sample, the watcher's wake-ups cost about as much on another core; figures in
//! BENCHMARKS.md and heatmap/NOTES.md).
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
//! existing at that point is sampled from then on. While it runs it also hosts the per-function
//! windows' scans (`threads.rs`): one listing of `/proc/self/task` serves both samplers.
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
//! table from the handler and waits for in-flight handlers (`Published::unpublish_and_drain`),
//! restores the previous `SIGPROF` disposition (only while it is still ours: a handler the
//! program installed after start stays, and so does an `ITIMER_PROF` it re-armed with other
//! values; the watcher, which checks the handler every 5 ms, has then already stopped every
//! source and recorded when), and only then reads the final counts. In a
//! `fork`ed child (which inherits the sampler's memory but not its watcher thread, and whose
//! threads have no perf events), stop skips the join and just restores the disposition.

mod handler;
#[cfg(all(feature = "handler-timing", target_arch = "x86_64"))]
pub use handler::timing as handler_timing;
mod shared;
mod source;
mod summary;
mod watcher;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::buckets::{self, Table, TableSet};
use crate::config::{Config, MAX_HZ, MAX_SERVED_HZ, MAX_SHIFT, served_rate_warning};
use crate::error::StartError;
use crate::profile::{Profile, SourceUsed};
use crate::signal::Installed;
use crate::stacks::{self, Stacks};
use handler::TABLE;
use shared::{Interval, Shared};
use watcher::Watcher;

/// One sampler per process: there is one `SIGPROF` disposition.
static RUNNING: AtomicBool = AtomicBool::new(false);

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
    /// Our `SIGPROF` handler and the disposition it replaced.
    installed: Installed,
    /// The `setitimer` source: the interval of the timer we armed, as the kernel reports it.
    itimer: Option<Interval>,
    watcher: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
    shared: Arc<Shared>,
    started: Instant,
    /// The process that started sampling: a `fork`ed child has no watcher thread to join.
    pid: u32,
    /// The stack sampler, when the run captures stacks.
    stacks: Option<Arc<Stacks>>,
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
    if let Some(d) = config.stack_depth
        && !(1..=stacks::MAX_DEPTH).contains(&d)
    {
        return Err(StartError::InvalidStackDepth(d));
    }
    if config.stack_depth.is_some()
        && !(stacks::MIN_SLOTS..=stacks::MAX_SLOTS).contains(&config.stack_slots)
    {
        return Err(StartError::InvalidStackSlots(config.stack_slots));
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
fn start_claimed(mut config: Config) -> Result<Sampler, StartError> {
    let (objects, segments) = buckets::discover();
    if segments.is_empty() {
        return Err(StartError::NoExecutableSegments);
    }
    let chunk = Arc::new(Table::new(objects, segments, config.shift));
    let mut warnings = Vec::new();
    if config.hz > MAX_SERVED_HZ {
        warnings.push(served_rate_warning(config.hz));
        config.hz = MAX_SERVED_HZ;
    }
    let stacks =
        config
            .stack_depth
            .and_then(|depth| match stacks::create(depth, config.stack_slots) {
                Ok(s) => Some(Arc::new(s)),
                Err(why) => {
                    warnings.push(why);
                    None
                }
            });
    let set = Arc::new(TableSet {
        chunks: vec![chunk],
        other: Arc::default(),
        stacks: stacks.clone(),
    });
    let period_ns = 1_000_000_000u64 / u64::from(config.hz);
    // Choose the source before touching the signal disposition.
    let source = source::choose(&config, period_ns, &mut warnings)?;

    let installed = handler::install()?;
    let shared = Arc::new(Shared::default());
    lock(&shared.sets).push(Arc::clone(&set));
    TABLE.publish(Arc::as_ptr(&set));
    let (user_ns_at_start, sys_ns_at_start) = rusage_ns(libc::RUSAGE_SELF);
    let mut inner = Inner {
        config,
        source,
        installed,
        itimer: None,
        watcher: None,
        shared,
        started: Instant::now(),
        pid: std::process::id(),
        stacks,
        user_ns_at_start,
        sys_ns_at_start,
        warnings,
    };
    if source == SourceUsed::Setitimer {
        match shared::arm_itimer(inner.config.hz) {
            Ok(armed) => inner.itimer = Some(armed),
            Err(e) => {
                inner.teardown(false);
                return Err(StartError::Setitimer(e));
            }
        }
    }
    if let Err(e) = inner.spawn_watcher(set, period_ns) {
        inner.teardown(false);
        return Err(StartError::Spawn(e));
    }
    Ok(Sampler { inner: Some(inner) })
}

impl Inner {
    /// Starts the watcher thread. It runs in every configuration: it finds new threads (perf
    /// and tgkill sources), ticks (tgkill, wall mode), and gives libraries loaded later their
    /// own buckets. Waits for its first scan unless the configuration says not to.
    fn spawn_watcher(&mut self, set: Arc<TableSet>, period_ns: u64) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let watcher = Watcher {
            set,
            shared: Arc::clone(&self.shared),
            source: self.source,
            mode: self.config.mode,
            installed: self.installed,
            pid: std::process::id() as libc::pid_t,
            period_ns,
            shift: self.config.shift,
            scan_interval: self.config.scan_interval,
            generation: buckets::loader_generation(),
            started: self.started,
            itimer: self.itimer,
            covered_at: self.started,
        };
        let handle = std::thread::Builder::new()
            .name("heatmap-watcher".to_owned())
            .spawn(move || watcher.run(stop_rx, ready_tx))?;
        self.watcher = Some((stop_tx, handle));
        // The watcher signals after its first scan; if it died, recv fails: go on. Not
        // inside a loader's initialiser (see `Config::wait_for_first_scan`).
        if self.config.wait_for_first_scan {
            let _ = ready_rx.recv();
        }
        Ok(())
    }
}

impl Sampler {
    /// Stops sampling and returns everything collected.
    pub fn stop(self) -> Profile {
        self.into_inner().finish(false)
    }

    /// [`Sampler::stop`] for a process that is ending (an exit report): where the signal's
    /// disposition was `SIG_DFL`, it is left `SIG_IGN` instead of put back. A kernel discards
    /// every pending instance when `SIG_IGN` is set, so `stop` is safe on one; an emulator may
    /// keep a queue of its own. qemu-user delivers a signal it queued for a thread before the
    /// `SIG_IGN` by the disposition it finds when that thread next runs guest code, which
    /// killed exiting children under qemu-aarch64 by `SIGPROF` (never natively; RELIABILITY.md,
    /// "A sample queued by an emulator at exit"). Past the last report nothing of the program's can
    /// want `SIGPROF`'s default action (terminate) back.
    pub fn stop_for_exit(self) -> Profile {
        self.into_inner().finish(true)
    }

    /// The state, taken out for a stop (`Drop` then finds none).
    fn into_inner(mut self) -> Inner {
        self.inner
            .take()
            .expect("a Sampler holds its state until stopped")
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
            drop(inner.finish(false));
        }
    }
}

impl Inner {
    /// Stops every source, drains the handler, restores the signal disposition (`exiting`:
    /// see [`Sampler::stop_for_exit`]).
    fn teardown(&mut self, exiting: bool) {
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
        TABLE.unpublish_and_drain(std::process::id() != self.pid);
        if let Err(by) = self.installed.restore(exiting) {
            self.shared.note_replaced(self.started.elapsed(), by);
        }
    }

    fn finish(mut self, exiting: bool) -> Profile {
        self.teardown(exiting);
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

/// Locks a mutex, ignoring poisoning (the data behind it stays consistent: pushes and reads).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
