//! The live half of [`super`] (Linux only): perf groups, the overflow handler, the watcher,
//! the calibration. What the report needs (windows, their arithmetic) is in `pmu.rs`, on every
//! system; elsewhere `pmu.rs` has stubs that say the mode is not available.

use super::*;
use crate::sys;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// === Kernel constants (include/uapi/linux/perf_event.h) ===

/// `PERF_TYPE_HARDWARE`.
pub(super) const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_GROUP`.
pub(super) const READ_FORMAT: u64 = (1 << 0) | (1 << 1) | (1 << 3);
/// `PERF_EVENT_IOC_REFRESH`: `_IO('$', 2)`.
pub(super) const IOC_REFRESH: libc::c_ulong = 0x2402;
/// `PERF_EVENT_IOC_PERIOD`: `_IOW('$', 4, __u64)`; its argument is a *pointer* to the period.
pub(super) const IOC_PERIOD: libc::c_ulong = 0x4008_2404;
/// `PERF_COUNT_SW_PAGE_FAULTS` from `enum perf_sw_ids`.
pub(super) const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
/// `PERF_TYPE_HW_CACHE` from `enum perf_type_id`.
pub(super) const PERF_TYPE_HW_CACHE: u32 = 3;
/// `PERF_COUNT_HW_CACHE_L1D` (`enum perf_hw_cache_id`), `PERF_COUNT_HW_CACHE_OP_READ`
/// (`enum perf_hw_cache_op_id`), and the results (`enum perf_hw_cache_op_result_id`).
pub(super) const PERF_COUNT_HW_CACHE_L1D: u64 = 0;
pub(super) const PERF_COUNT_HW_CACHE_OP_READ: u64 = 0;
pub(super) const PERF_COUNT_HW_CACHE_RESULT_ACCESS: u64 = 0;
pub(super) const PERF_COUNT_HW_CACHE_RESULT_MISS: u64 = 1;

/// A `PERF_TYPE_HW_CACHE` config: `cache id | (op id << 8) | (result id << 16)`
/// (`include/uapi/linux/perf_event.h`, the comment above `enum perf_hw_cache_id`).
pub(super) const fn l1d_read(result: u64) -> u64 {
    PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (result << 16)
}

impl Event {
    /// `(type, config)` of `perf_event_attr`.
    pub(super) fn kind(self) -> (u32, u64) {
        match self {
            Event::Cycles => (PERF_TYPE_HARDWARE, 0),
            Event::Instructions => (PERF_TYPE_HARDWARE, 1),
            Event::CacheReferences => (PERF_TYPE_HARDWARE, 2),
            Event::CacheMisses => (PERF_TYPE_HARDWARE, 3),
            Event::BranchInstructions => (PERF_TYPE_HARDWARE, 4),
            Event::BranchMisses => (PERF_TYPE_HARDWARE, 5),
            Event::TaskClock => (sys::PERF_TYPE_SOFTWARE, sys::PERF_COUNT_SW_TASK_CLOCK),
            Event::PageFaults => (sys::PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS),
            Event::L1dReads => (
                PERF_TYPE_HW_CACHE,
                l1d_read(PERF_COUNT_HW_CACHE_RESULT_ACCESS),
            ),
            Event::L1dReadMisses => (
                PERF_TYPE_HW_CACHE,
                l1d_read(PERF_COUNT_HW_CACHE_RESULT_MISS),
            ),
        }
    }
}

pub(super) fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

pub(super) fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Turns a failed `perf_event_open` of a hardware event into the error that names its cause.
pub(super) fn diagnose(e: io::Error) -> PmuError {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => PmuError::NoPmu(e),
        Some(libc::EACCES) | Some(libc::EPERM) => match paranoid_level() {
            Some(l) if l > 2 => PmuError::Paranoid(l, e),
            _ => PmuError::Denied(e),
        },
        Some(libc::ENOSYS) => PmuError::Denied(e),
        _ => PmuError::Io(e),
    }
}

/// Opens one counter of thread `tid` (a sampling leader when `period > 0`).
pub(super) fn open_event(
    tid: libc::pid_t,
    ev: Event,
    period: u64,
    group: libc::c_int,
) -> io::Result<libc::c_int> {
    let leader = group < 0;
    let (kind, config) = ev.kind();
    let attr = sys::PerfEventAttr {
        kind,
        size: sys::PERF_ATTR_SIZE_VER0,
        config,
        sample_period: period,
        read_format: if leader { READ_FORMAT } else { 0 },
        flags: (if leader { sys::ATTR_DISABLED } else { 0 })
            | sys::ATTR_EXCLUDE_KERNEL
            | sys::ATTR_EXCLUDE_HV,
        wakeup_events: if leader { 1 } else { 0 },
        ..sys::PerfEventAttr::default()
    };
    // SAFETY: `attr` is a live `perf_event_attr` prefix whose `size` says how many bytes the
    // kernel may read; the other arguments are integers (tid, any cpu, group fd, flags).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const sys::PerfEventAttr,
            tid,
            -1 as libc::c_int,
            group,
            sys::PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as libc::c_int)
    }
}

/// Checks that this process may count hardware events (opens and closes a cycles counter).
pub fn available() -> Result<(), PmuError> {
    available_for(Event::Cycles)
}

/// Checks that this process may count `clock` (the leader of a mode).
pub(super) fn available_for(clock: Event) -> Result<(), PmuError> {
    let fd = open_event(0, clock, 0, -1).map_err(diagnose)?;
    // SAFETY: a descriptor we just opened and own.
    unsafe { libc::close(fd) };
    Ok(())
}

/// A counting group on the calling thread (cycles first, then `events`): the ground truth the
/// sampled metrics are checked against, read around a call.
#[derive(Debug)]
pub struct Counters {
    fds: Vec<libc::c_int>,
}

impl Counters {
    /// Opens and enables the group on the calling thread.
    pub fn open(events: &[Event]) -> Result<Counters, PmuError> {
        Counters::open_with(Event::Cycles, events)
    }

    /// Opens and enables a group led by `clock` (values: `clock` first, then `events`).
    pub fn open_with(clock: Event, events: &[Event]) -> Result<Counters, PmuError> {
        let leader = open_event(0, clock, 0, -1).map_err(diagnose)?;
        let mut c = Counters { fds: vec![leader] };
        for &e in events {
            c.fds.push(open_event(0, e, 0, leader).map_err(diagnose)?);
        }
        // SAFETY: enabling a group we own; an integer argument.
        unsafe { libc::ioctl(leader, sys::PERF_EVENT_IOC_ENABLE as _, 0) };
        Ok(c)
    }

    /// Current values (cycles first, then the events in order).
    pub fn read(&self) -> Vec<u64> {
        let mut v = [0u64; MAX_MEMBERS + 1];
        let n = read_group(self.fds[0], &mut v);
        v[..n].to_vec()
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        for &fd in self.fds.iter().rev() {
            sys::disable_and_close(fd);
        }
    }
}

// === The handler's state ===

/// Per-thread state, found by the leader's descriptor (the signal's `si_fd`).
pub(super) struct ThreadSlot {
    /// Leader descriptor, or -1 when free.
    fd: AtomicI32,
    /// 0: in a long period; 1: in a window.
    phase: AtomicU8,
    /// pc at the window's start.
    start_pc: AtomicU64,
    /// Group values at the window's start (cycles first).
    base: [AtomicU64; MAX_MEMBERS + 1],
    /// Group values at the last window's end (for the long period's deltas).
    last_end: [AtomicU64; MAX_MEMBERS + 1],
    /// xorshift state for jitter.
    rng: AtomicU64,
    /// The window's length as asked (after jitter), in the leader's unit.
    asked: AtomicU64,
}

pub(super) const SLOTS: usize = 1024;
/// Windows kept: 2^17 x 128 bytes = 16 MiB, about 20 minutes of one busy thread at the
/// hardware defaults (~100 windows a second at 1e7 cycles and 1-2 GHz of user cycles).
pub(super) const RECORDS: usize = 1 << 17;
/// A record: start pc, end pc, the long period's deltas, the window's deltas, the window asked.
pub(super) const RECORD: usize = 2 + 2 * (MAX_MEMBERS + 1) + 1;

pub(super) struct Shared {
    slots: Vec<ThreadSlot>,
    records: Vec<[AtomicU64; RECORD]>,
    next: AtomicUsize,
    dropped: AtomicU64,
    /// Threads whose group was opened, over the whole run.
    threads_seen: AtomicU64,
    /// A thread found no free slot (more than `SLOTS` threads at once): it went unsampled.
    slots_ran_out: AtomicBool,
    /// Why a thread could not be given its group, the first time (the watcher's; never the
    /// handler's).
    open_error: Mutex<Option<String>>,
    nmembers: usize,
    /// Position of the instructions counter in the group (cycles are at 0), if counted.
    instructions_at: Option<usize>,
    long: u64,
    window: u64,
    jitter_permille: u64,
}

pub(super) static SHARED: std::sync::atomic::AtomicPtr<Shared> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
pub(super) static ACTIVE: AtomicUsize = AtomicUsize::new(0);
pub(super) static RUNNING: AtomicBool = AtomicBool::new(false);

/// The signal the mode uses: a real-time signal (they queue instead of coalescing), picked at
/// start above the ones glibc reserves.
pub(super) fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 6
}

/// `si_fd` of a `SIGPOLL`-style siginfo (the overflowing descriptor, set because of `F_SETSIG`):
/// the union starts at byte 16 on 64-bit Linux, `si_band` (a long) then `si_fd` (an int).
pub(super) const SI_FD_OFFSET: usize = 24;

#[inline]
pub(super) fn jittered(s: &Shared, slot: &ThreadSlot, period: u64) -> u64 {
    // Relaxed: the slot belongs to the thread whose handler runs.
    let mut x = slot.rng.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    slot.rng.store(x, Ordering::Relaxed);
    let span = period * s.jitter_permille / 1000;
    if span == 0 {
        return period;
    }
    period - span + x % (2 * span + 1)
}

/// Reads the group into `out` (cycles first); returns how many values were read.
pub(super) fn read_group(fd: libc::c_int, out: &mut [u64; MAX_MEMBERS + 1]) -> usize {
    // nr, time_enabled, time_running, values...
    let mut buf = [0u64; 3 + MAX_MEMBERS + 1];
    // SAFETY: `read` into a buffer of the stated size; async-signal-safe.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
    if n < 24 {
        return 0;
    }
    let nr = (buf[0] as usize).min(MAX_MEMBERS + 1);
    out[..nr].copy_from_slice(&buf[3..3 + nr]);
    nr
}

pub(super) extern "C" fn handler(
    _sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
) {
    // SAFETY: this thread's errno slot, valid for its life.
    let errno_slot = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno_slot };
    // SeqCst: Dekker pairing with `stop`, as the heatmap's handler does.
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    let shared = SHARED.load(Ordering::SeqCst);
    if !shared.is_null() && !info.is_null() && !uc.is_null() {
        // SAFETY: a non-null SHARED is kept alive until ACTIVE drains to 0 after unpublishing.
        let s = unsafe { &*shared };
        // SAFETY: the kernel passes a valid siginfo; F_SETSIG makes it carry si_fd.
        let fd = unsafe { *((info as *const u8).add(SI_FD_OFFSET) as *const libc::c_int) };
        // SAFETY: a valid ucontext_t from the kernel.
        let pc = unsafe { pc_of(uc) };
        on_overflow(s, fd, pc);
    }
    ACTIVE.fetch_sub(1, Ordering::SeqCst);
    // SAFETY: restoring the value read above.
    unsafe { *errno_slot = saved };
}

/// # Safety
/// `uc` must be the ucontext_t the kernel passed to an SA_SIGINFO handler.
pub(super) unsafe fn pc_of(uc: *mut libc::c_void) -> u64 {
    let uc = uc as *const libc::ucontext_t;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: see the function's contract.
    return unsafe { (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64 };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: see the function's contract.
    return unsafe { (*uc).uc_mcontext.pc };
}

pub(super) fn slot_of(s: &Shared, fd: libc::c_int) -> Option<&ThreadSlot> {
    let n = s.slots.len();
    let h = (fd as usize).wrapping_mul(0x9E37_79B9) % n;
    (0..n)
        .map(|i| &s.slots[(h + i) % n])
        // Relaxed: slots are filled before their event is armed (the arming ioctl orders it).
        .find(|slot| slot.fd.load(Ordering::Relaxed) == fd)
}

pub(super) fn on_overflow(s: &Shared, fd: libc::c_int, pc: u64) {
    let Some(slot) = slot_of(s, fd) else { return };
    let mut now = [0u64; MAX_MEMBERS + 1];
    if read_group(fd, &mut now) == 0 {
        return;
    }
    // Relaxed throughout: the slot is only touched by its own thread's handler.
    if slot.phase.load(Ordering::Relaxed) == 0 {
        slot.start_pc.store(pc, Ordering::Relaxed);
        for (b, v) in slot.base.iter().zip(now) {
            b.store(v, Ordering::Relaxed);
        }
        slot.phase.store(1, Ordering::Relaxed);
        let asked = jittered(s, slot, s.window);
        slot.asked.store(asked, Ordering::Relaxed);
        arm(fd, asked);
    } else {
        let i = s.next.fetch_add(1, Ordering::Relaxed);
        if let Some(rec) = s.records.get(i) {
            rec[0].store(slot.start_pc.load(Ordering::Relaxed), Ordering::Relaxed);
            rec[1].store(pc, Ordering::Relaxed);
            rec[RECORD - 1].store(slot.asked.load(Ordering::Relaxed), Ordering::Relaxed);
            for k in 0..=s.nmembers {
                rec[2 + k].store(
                    slot.base[k]
                        .load(Ordering::Relaxed)
                        .wrapping_sub(slot.last_end[k].load(Ordering::Relaxed)),
                    Ordering::Relaxed,
                );
                rec[2 + MAX_MEMBERS + 1 + k].store(
                    now[k].wrapping_sub(slot.base[k].load(Ordering::Relaxed)),
                    Ordering::Relaxed,
                );
            }
        } else {
            s.dropped.fetch_add(1, Ordering::Relaxed);
        }
        for (e, v) in slot.last_end.iter().zip(now) {
            e.store(v, Ordering::Relaxed);
        }
        slot.phase.store(0, Ordering::Relaxed);
        arm(fd, jittered(s, slot, s.long));
    }
}

/// Sets the next period and re-arms the group for one more overflow.
pub(super) fn arm(fd: libc::c_int, period: u64) {
    let p = period;
    // SAFETY: PERF_EVENT_IOC_PERIOD reads a u64 through the pointer; REFRESH takes an integer.
    unsafe {
        libc::ioctl(fd, IOC_PERIOD as _, &p as *const u64);
        libc::ioctl(fd, IOC_REFRESH as _, 1);
    }
}

// === Starting and stopping ===

/// The threads sampled: each thread id with its group's descriptors (leader first).
pub(super) type Threads = Arc<Mutex<Vec<(libc::pid_t, Vec<libc::c_int>)>>>;

/// A running hardware-metrics sampler. [`PmuSampler::stop`] ends it and gives the profile.
#[derive(Debug)]
pub struct PmuSampler {
    config: PmuConfig,
    threads: Threads,
    stop_watcher: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    previous: libc::sigaction,
    shared: *mut Shared,
    rate_at_start: Option<u64>,
    calibration: Calibration,
    /// The calibration, running on a thread of its own so that `start` returns at once.
    calibrator: Option<std::thread::JoinHandle<Calibration>>,
    started: std::time::Instant,
    /// The process that started sampling: a `fork`ed child has copies of the descriptors,
    /// which still name the parent's counters, and no watcher thread.
    pid: u32,
}

// SAFETY: `shared` is a heap allocation owned by the sampler and only read through atomics by
// handlers; the sampler may move between threads.
unsafe impl Send for PmuSampler {}

/// Starts sampling every thread of the process.
pub fn start(config: PmuConfig) -> Result<PmuSampler, PmuError> {
    let unit = config.clock.unit();
    if config.long_period < MIN_LONG_PERIOD
        || config.window == 0
        || config.window >= config.long_period
    {
        return Err(PmuError::Config(format!(
            "long period {} and window {}: expected a long period of at least {MIN_LONG_PERIOD} {unit} and a shorter, non-zero window",
            config.long_period, config.window
        )));
    }
    if !matches!(config.clock, Event::Cycles | Event::TaskClock) {
        return Err(PmuError::Config(format!(
            "clock {:?}: expected Cycles (hardware) or TaskClock (software)",
            config.clock
        )));
    }
    // The shortest window the jitter can ask for.
    let shortest = config.window as f64 * (1.0 - config.jitter.clamp(0.0, 0.5));
    if config.clock == Event::TaskClock && shortest < MIN_SOFTWARE_WINDOW as f64 {
        return Err(PmuError::Config(format!(
            "window {} ns with jitter {}: the software clock cannot fire sooner than {MIN_SOFTWARE_WINDOW} ns, and the jitter asks for windows down to {shortest:.0} ns",
            config.window, config.jitter
        )));
    }
    if config.events.contains(&config.clock) {
        return Err(PmuError::Config(format!(
            "{:?} is the leader: it cannot also be a member",
            config.clock
        )));
    }
    if config.events.len() > MAX_MEMBERS {
        return Err(PmuError::Config(format!(
            "{} events: at most {MAX_MEMBERS} beside the leader",
            config.events.len()
        )));
    }
    available_for(config.clock)?;
    for &e in &config.events {
        if !e.is_software() {
            available_for(e)?;
        }
    }
    if RUNNING.swap(true, Ordering::SeqCst) {
        return Err(PmuError::AlreadyRunning);
    }
    let shared = Box::into_raw(Box::new(Shared {
        slots: (0..SLOTS)
            .map(|i| ThreadSlot {
                fd: AtomicI32::new(-1),
                phase: AtomicU8::new(0),
                start_pc: AtomicU64::new(0),
                base: Default::default(),
                last_end: Default::default(),
                rng: AtomicU64::new(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1)),
                asked: AtomicU64::new(0),
            })
            .collect(),
        records: (0..RECORDS).map(|_| Default::default()).collect(),
        next: AtomicUsize::new(0),
        dropped: AtomicU64::new(0),
        threads_seen: AtomicU64::new(0),
        slots_ran_out: AtomicBool::new(false),
        open_error: Mutex::new(None),
        nmembers: config.events.len(),
        instructions_at: config
            .events
            .iter()
            .position(|e| *e == Event::Instructions)
            .map(|i| i + 1),
        long: config.long_period,
        window: config.window,
        jitter_permille: (config.jitter.clamp(0.0, 0.5) * 1000.0) as u64,
    }));
    // Install the handler (refusing a foreign one).
    // SAFETY: an all-zero sigaction is valid; we fill handler, flags and an empty mask.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction =
        handler as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
    // Nothing nests on our frame in the small alternate stack (see `sys::handler_mask`).
    act.sa_mask = sys::handler_mask();
    // SAFETY: as above.
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to sigaction values.
    if unsafe { libc::sigaction(signal(), &act, &mut previous) } != 0 {
        RUNNING.store(false, Ordering::SeqCst);
        // SAFETY: never published.
        drop(unsafe { Box::from_raw(shared) });
        return Err(PmuError::Io(io::Error::last_os_error()));
    }
    if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN {
        // SAFETY: putting the foreign handler back.
        unsafe { libc::sigaction(signal(), &previous, std::ptr::null_mut()) };
        RUNNING.store(false, Ordering::SeqCst);
        // SAFETY: never published.
        drop(unsafe { Box::from_raw(shared) });
        return Err(PmuError::SignalInUse(signal()));
    }
    SHARED.store(shared, Ordering::SeqCst);
    let threads: Threads = Arc::default();
    let stop_watcher = Arc::new(AtomicBool::new(false));
    let mut sampler = PmuSampler {
        config: config.clone(),
        threads: threads.clone(),
        stop_watcher: stop_watcher.clone(),
        watcher: None,
        previous,
        shared,
        rate_at_start: max_sample_rate(),
        pid: std::process::id(),
        calibration: Calibration::default(),
        calibrator: None,
        started: std::time::Instant::now(),
    };
    scan(&config, shared, &threads);
    let cfg = config.clone();
    let shared_addr = shared as usize;
    sampler.watcher = Some(
        std::thread::Builder::new()
            .name("pmu-watcher".into())
            .spawn(move || {
                // Relaxed: a stop flag.
                while !stop_watcher.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                    scan(&cfg, shared_addr as *mut Shared, &threads);
                }
            })
            .map_err(PmuError::Io)?,
    );
    // The calibration runs its loop for ~100 ms on a thread of its own, once the watcher has
    // given that thread its group: the caller (often the program's start-up) does not wait.
    let threads = sampler.threads.clone();
    let shared_addr = shared as usize;
    let stopping = sampler.stop_watcher.clone();
    sampler.calibrator = Some(
        std::thread::Builder::new()
            .name("pmu-calibration".into())
            .spawn(move || {
                let me = sys::gettid();
                let t0 = std::time::Instant::now();
                let has_group = || {
                    threads
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .iter()
                        .any(|(t, _)| *t == me)
                };
                while !has_group() {
                    if t0.elapsed() > Duration::from_secs(2) {
                        return Calibration::default();
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                calibrate(shared_addr as *mut Shared, &stopping)
            })
            .map_err(PmuError::Io)?,
    );
    Ok(sampler)
}

/// Opens groups for threads not seen yet and forgets threads that are gone.
pub(super) fn scan(
    config: &PmuConfig,
    shared: *mut Shared,
    threads: &Mutex<Vec<(libc::pid_t, Vec<libc::c_int>)>>,
) {
    // SAFETY: the sampler keeps `shared` alive while the watcher runs (it joins it first).
    let s = unsafe { &*shared };
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    let live: Vec<libc::pid_t> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut t = threads.lock().unwrap_or_else(|e| e.into_inner());
    t.retain(|(tid, fds)| {
        if live.contains(tid) {
            return true;
        }
        for &fd in fds.iter().rev() {
            sys::disable_and_close(fd);
        }
        if let Some(&leader) = fds.first() {
            release_slot(s, leader);
        }
        false
    });
    for &tid in &live {
        if t.iter().any(|(x, _)| *x == tid) {
            continue;
        }
        if let Some(fds) = open_group(config, s, tid) {
            t.push((tid, fds));
        }
    }
}

pub(super) fn release_slot(s: &Shared, fd: libc::c_int) {
    if let Some(slot) = s.slots.iter().find(|x| x.fd.load(Ordering::Relaxed) == fd) {
        // Relaxed: the event was closed, so no handler for it runs any more.
        slot.fd.store(-1, Ordering::Relaxed);
    }
}

/// Notes why a thread could not be given its group (not for a thread that has just exited).
pub(super) fn open_failed(s: &Shared, tid: libc::pid_t, e: &io::Error) {
    if e.raw_os_error() == Some(libc::ESRCH)
        || !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
    {
        return;
    }
    let mut first = s.open_error.lock().unwrap_or_else(|p| p.into_inner());
    first.get_or_insert_with(|| {
        format!("threads could not be given their counters and were not sampled (first: {e})")
    });
}

pub(super) fn open_group(
    config: &PmuConfig,
    s: &Shared,
    tid: libc::pid_t,
) -> Option<Vec<libc::c_int>> {
    let leader = match open_event(tid, config.clock, config.long_period, -1) {
        Ok(fd) => fd,
        Err(e) => {
            open_failed(s, tid, &e);
            return None;
        }
    };
    let mut fds = vec![leader];
    for &ev in &config.events {
        match open_event(tid, ev, 0, leader) {
            Ok(fd) => fds.push(fd),
            Err(e) => {
                open_failed(s, tid, &e);
                for &fd in fds.iter().rev() {
                    sys::disable_and_close(fd);
                }
                return None;
            }
        }
    }
    // A free slot, by hashing the descriptor as the handler does.
    let n = s.slots.len();
    let h = (leader as usize).wrapping_mul(0x9E37_79B9) % n;
    let slot = (0..n).map(|i| &s.slots[(h + i) % n]).find(|x| {
        x.fd.compare_exchange(-1, leader, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    });
    let Some(slot) = slot else {
        for &fd in fds.iter().rev() {
            sys::disable_and_close(fd);
        }
        // Relaxed: a flag read at stop.
        s.slots_ran_out.store(true, Ordering::Relaxed);
        return None;
    };
    // A reused slot must not carry its previous thread's phase or counts: reset it before
    // the event is armed (no signal for `leader` can arrive before that).
    // Relaxed: published to the handler by the arming ioctl below.
    slot.phase.store(0, Ordering::Relaxed);
    slot.start_pc.store(0, Ordering::Relaxed);
    for (b, e) in slot.base.iter().zip(&slot.last_end) {
        b.store(0, Ordering::Relaxed);
        e.store(0, Ordering::Relaxed);
    }
    // Route the overflow to the thread, then arm for the first long period.
    if sys::route_signal(leader, tid, signal()).is_err() {
        for &fd in fds.iter().rev() {
            sys::disable_and_close(fd);
        }
        release_slot(s, leader);
        return None;
    }
    // SAFETY: REFRESH enables the group for one overflow; an integer argument.
    unsafe { libc::ioctl(leader, IOC_REFRESH as _, 1) };
    // Relaxed: a tally read after the watcher is joined.
    s.threads_seen.fetch_add(1, Ordering::Relaxed);
    Some(fds)
}

/// Fewer calibration windows than this measure nothing worth subtracting.
pub(super) const MIN_CALIBRATION_WINDOWS: usize = 5;

/// Runs the calibration loop on this thread (which must have its group) for ~100 ms and
/// measures the fixed extra counts of windows that began and ended in it.
pub(super) fn calibrate(shared: *mut Shared, stopping: &AtomicBool) -> Calibration {
    // SAFETY: alive while the sampler runs (stop joins this thread before freeing it).
    let s = unsafe { &*shared };
    let from = s.next.load(Ordering::Relaxed);
    let t = std::time::Instant::now();
    // A program that ends sooner stops it early (with fewer windows measured).
    // Relaxed: a stop flag.
    while t.elapsed() < Duration::from_millis(100) && !stopping.load(Ordering::Relaxed) {
        calibration_loop(1_000_000);
    }
    let to = s.next.load(Ordering::Relaxed).min(RECORDS);
    let inside = in_calibration_loop;
    let windows: Vec<Window> = (from..to)
        .map(|i| load(s, i))
        .filter(|w| inside(w.start_pc) && inside(w.end_pc))
        .collect();
    let mut c = Calibration {
        windows: windows.len() as u64,
        ..Calibration::default()
    };
    // Too few windows to say what a window's fixed cost is (the program ended before the
    // calibration could run its course): nothing is subtracted, and the report says so.
    if windows.len() < MIN_CALIBRATION_WINDOWS {
        return c;
    }
    // The leader: observed minus asked, the median (a window whose overflow came late, as a
    // software clock firing in the kernel does, would pull a mean up).
    let mut extra: Vec<f64> = windows
        .iter()
        .map(|w| w.deltas[0] as f64 - w.asked as f64)
        .collect();
    extra.sort_by(f64::total_cmp);
    c.fixed[0] = extra[extra.len() / 2].max(0.0);
    // The other counters: means over the windows that were not late.
    let windows: Vec<Window> = windows
        .into_iter()
        .filter(|w| !overlong(w, c.fixed[0]))
        .collect();
    let n = windows.len().max(1) as f64;
    let mean = |k: usize| windows.iter().map(|w| w.deltas[k] as f64).sum::<f64>() / n;
    // Instructions: observed minus what the loop's own IPC (from the long periods, where the
    // fixed cost is negligible) gives for the requested cycles.
    let lc: f64 = windows.iter().map(|w| w.long[0] as f64).sum();
    let li: f64 = s
        .instructions_at
        .map_or(0.0, |k| windows.iter().map(|w| w.long[k] as f64).sum());
    let ipc = if lc > 0.0 { li / lc } else { 0.0 };
    for k in 1..=s.nmembers {
        c.fixed[k] = mean(k);
    }
    // The loop itself retires instructions (and nothing else of note): only that counter
    // gets the loop's own share taken out.
    if let Some(k) = s.instructions_at {
        let asked = windows.iter().map(|w| w.asked as f64).sum::<f64>() / n;
        c.fixed[k] = (mean(k) - ipc * asked).max(0.0);
    }
    c
}

pub(super) fn load(s: &Shared, i: usize) -> Window {
    let r = &s.records[i];
    // Relaxed: read after the handlers wrote them (stop drains the handlers first), or, during
    // calibration, records of the calling thread's own handler.
    let g = |k: usize| r[k].load(Ordering::Relaxed);
    let mut w = Window {
        start_pc: g(0),
        end_pc: g(1),
        asked: g(RECORD - 1),
        ..Window::default()
    };
    for k in 0..=MAX_MEMBERS {
        w.long[k] = g(2 + k);
        w.deltas[k] = g(2 + MAX_MEMBERS + 1 + k);
    }
    w
}

impl PmuSampler {
    /// Waits for the calibration (~100 ms of CPU on a thread of its own, started by
    /// [`start`]) and returns it: a caller that times its own work in steady state calls this
    /// first.
    pub fn calibrated(&mut self) -> Calibration {
        if let Some(c) = self.calibrator.take()
            && let Ok(c) = c.join()
        {
            self.calibration = c;
        }
        self.calibration
    }

    /// Windows recorded so far (the calibration's included): lets a caller count the windows
    /// of a stretch of its own work.
    pub fn recorded(&self) -> usize {
        // SAFETY: `shared` stays allocated while the sampler exists (freed only by stop).
        let s = unsafe { &*self.shared };
        // Relaxed: a tally.
        s.next.load(Ordering::Relaxed).min(RECORDS)
    }

    /// Stops sampling every thread, restores the signal's disposition, returns the windows.
    pub fn stop(mut self) -> PmuProfile {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> PmuProfile {
        // In a forked child (an at-exit report there stops the copy it inherited): the watcher
        // thread was not copied (joining it would wait forever), its lock may have been held at
        // the fork, and the descriptors name the parent's counters, which a disable would stop
        // for the parent too. The child only closes its copies.
        let forked = std::process::id() != self.pid;
        // Relaxed: a stop flag (the watcher and the calibration poll it).
        self.stop_watcher.store(true, Ordering::Relaxed);
        if let Some(c) = self.calibrator.take() {
            if forked {
                // Not copied into the child: joining it would wait forever.
                std::mem::forget(c);
            } else if let Ok(c) = c.join() {
                self.calibration = c;
            }
        }
        self.stop_watcher.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            if forked {
                std::mem::forget(w);
            } else {
                let _ = w.join();
            }
        }
        let mut multiplexed = 0;
        let mut never_counted = 0;
        let threads = if forked {
            self.threads
                .try_lock()
                .map(|mut t| std::mem::take(&mut *t))
                .unwrap_or_default()
        } else {
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()))
        };
        let nthreads = threads.len();
        // Order matters: stop the counters, unpublish and drain the handlers, discard pending
        // signals, and only then close the descriptors. Closing first would let a queued
        // signal's handler `read`/`ioctl` a descriptor number the program has reused.
        for (_, fds) in threads.iter().filter(|_| !forked) {
            if let Some(&leader) = fds.first() {
                // SAFETY: disabling a group we own; no argument.
                unsafe { libc::ioctl(leader, sys::PERF_EVENT_IOC_DISABLE as _, 0) };
                let mut buf = [0u64; 3 + MAX_MEMBERS + 1];
                // SAFETY: reading the group of a descriptor we own.
                let n = unsafe {
                    libc::read(leader, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf))
                };
                if n >= 24 && buf[2] < buf[1] {
                    multiplexed += 1;
                }
                if n >= 24 && buf[1] > 0 && buf[2] == 0 {
                    never_counted += 1;
                }
            }
        }
        SHARED.store(std::ptr::null_mut(), Ordering::SeqCst);
        // In a forked child, ACTIVE may count a handler of a thread that was not copied: it
        // would never drain (and no handler of ours runs here: the counters signal the
        // parent's threads).
        while !forked && ACTIVE.load(Ordering::SeqCst) != 0 {
            std::hint::spin_loop();
        }
        // SAFETY: SIG_IGN discards pending instances (and any raised by a counter that a
        // draining handler re-armed after our disable).
        unsafe { libc::signal(signal(), libc::SIG_IGN) };
        // Closed while the signal is ignored: after `close` the kernel sends nothing more.
        for (_, fds) in &threads {
            for &fd in fds.iter().rev() {
                if forked {
                    // SAFETY: the child's own copy of the descriptor, closed once.
                    unsafe { libc::close(fd) };
                } else {
                    sys::disable_and_close(fd);
                }
            }
        }
        // SAFETY: the previous disposition returns (a valid sigaction we saved at start).
        unsafe { libc::sigaction(signal(), &self.previous, std::ptr::null_mut()) };
        // SAFETY: unpublished and drained: no handler can touch it any more.
        let s = unsafe { Box::from_raw(self.shared) };
        self.shared = std::ptr::null_mut();
        RUNNING.store(false, Ordering::SeqCst);
        let n = s.next.load(Ordering::Relaxed).min(RECORDS);
        let windows = (0..n).map(|i| load(&s, i)).collect();
        let mut warnings = Vec::new();
        if never_counted > 0 {
            warnings.push(format!(
                "{never_counted} of {nthreads} threads' groups were never scheduled (time running 0): the PMU cannot count these {} events at once; choose fewer (PROFPOINT_PMU_EVENTS)",
                self.config.events.len() + 1
            ));
        }
        if multiplexed > 0 {
            warnings.push(format!(
                "{multiplexed} of {nthreads} threads' counters were multiplexed (time running < time enabled): another user of the PMU shares the counters; ratios stay valid, totals do not"
            ));
        }
        let rate_at_stop = max_sample_rate();
        if let (Some(a), Some(b)) = (self.rate_at_start, rate_at_stop)
            && b < a
        {
            warnings.push(format!(
                "the kernel lowered perf_event_max_sample_rate from {a} to {b} during the run (slow sampling interrupts): other samplers, the heatmap included, are throttled"
            ));
        }
        if let Some(e) = s
            .open_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            warnings.push(e);
        }
        // Relaxed: the watcher that sets it was joined.
        if s.slots_ran_out.load(Ordering::Relaxed) {
            warnings.push(format!(
                "more than {SLOTS} threads ran at once: the ones beyond were not sampled"
            ));
        }
        let dropped = s.dropped.load(Ordering::Relaxed);
        if (self.calibration.windows as usize) < MIN_CALIBRATION_WINDOWS {
            warnings.push(format!(
                "the calibration measured {} windows (it needs {MIN_CALIBRATION_WINDOWS}, ~100 ms after start): nothing subtracted, so each window's share of the signal path's own cost stays in the figures",
                self.calibration.windows
            ));
        }
        if dropped > 0 {
            warnings.push(format!("{dropped} windows did not fit the record buffer"));
        }
        PmuProfile {
            config: self.config.clone(),
            windows,
            calibration: self.calibration,
            threads: s.threads_seen.load(Ordering::Relaxed),
            wall_seconds: self.started.elapsed().as_secs_f64(),
            warnings,
        }
    }
}

impl Drop for PmuSampler {
    fn drop(&mut self) {
        if !self.shared.is_null() {
            let _ = self.stop_inner();
        }
    }
}

// === The report ===
