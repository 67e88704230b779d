//! The overflow handler and the per-thread state machine it runs: the end of a long period
//! opens a window, the end of a window appends a record and starts the next long period.
//! Everything here runs in a signal handler or is read after the handlers drained: no
//! allocation, lock or lazy TLS on the handler's path.

use super::super::config::PmuConfig;
use super::super::error::PmuError;
use super::super::events::{Event, MAX_MEMBERS};
use super::super::window::Window;
use super::group::read_group;
use crate::signal::{self as core, InstallError, Installed, Published};
use crate::sys;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// Per-thread state, found by the leader's descriptor (the signal's `si_fd`).
pub(crate) struct ThreadSlot {
    /// Leader descriptor, or -1 when free.
    pub(crate) fd: AtomicI32,
    /// 0: in a long period; 1: in a window.
    pub(crate) phase: AtomicU8,
    /// pc at the window's start.
    pub(crate) start_pc: AtomicU64,
    /// Group values at the window's start (cycles first).
    pub(crate) base: [AtomicU64; MAX_MEMBERS + 1],
    /// Group values at the last window's end (for the long period's deltas).
    pub(crate) last_end: [AtomicU64; MAX_MEMBERS + 1],
    /// xorshift state for jitter.
    pub(crate) rng: AtomicU64,
    /// The window's length as asked (after jitter), in the leader's unit.
    pub(crate) asked: AtomicU64,
}

pub(super) const SLOTS: usize = 1024;
/// Windows kept: 2^17 x 128 bytes = 16 MiB, about 20 minutes of one busy thread at the
/// hardware defaults (~100 windows a second at 1e7 cycles and 1-2 GHz of user cycles).
pub(crate) const RECORDS: usize = 1 << 17;
/// A record: start pc, end pc, the long period's deltas, the window's deltas, the window asked.
pub(super) const RECORD: usize = 2 + 2 * (MAX_MEMBERS + 1) + 1;

/// What the handlers share with the sampler: the slots, the record buffer and the settings,
/// published through [`SHARED`].
pub(crate) struct Shared {
    pub(crate) slots: Vec<ThreadSlot>,
    pub(crate) records: Vec<[AtomicU64; RECORD]>,
    pub(crate) next: AtomicUsize,
    pub(crate) dropped: AtomicU64,
    /// Threads whose group was opened, over the whole run.
    pub(crate) threads_seen: AtomicU64,
    /// A thread found no free slot (more than `SLOTS` threads at once): it went unsampled.
    pub(crate) slots_ran_out: AtomicBool,
    /// Why a thread could not be given its group, the first time (the watcher's; never the
    /// handler's).
    pub(crate) open_error: Mutex<Option<String>>,
    pub(crate) nmembers: usize,
    /// Position of the instructions counter in the group (cycles are at 0), if counted.
    pub(crate) instructions_at: Option<usize>,
    pub(crate) long: u64,
    pub(crate) window: u64,
    pub(crate) jitter_permille: u64,
}

/// The state the handlers use, published through the sampler core (`crate::signal`).
pub(super) static SHARED: Published<Shared> = Published::new();
pub(super) static RUNNING: AtomicBool = AtomicBool::new(false);

/// The signal the mode uses: a real-time signal (they queue instead of coalescing), picked at
/// start above the ones glibc reserves.
pub(super) fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 6
}

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

/// The overflow handler: enters through the sampler core (errno, the active count, the
/// drain), reads the leader's descriptor (`si_fd`) and the interrupted pc, and runs the
/// window state machine of that thread's slot.
pub(super) extern "C" fn handler(
    _sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
) {
    SHARED.enter(|s| {
        if !info.is_null() && !uc.is_null() {
            // SAFETY: the kernel passes a valid siginfo; F_SETSIG makes it carry si_fd.
            let fd = unsafe { core::overflow_fd(info) };
            // SAFETY: a valid ucontext_t from the kernel.
            let pc = unsafe { core::interrupted_pc(uc) };
            on_overflow(s, fd, pc);
        }
    });
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
        libc::ioctl(fd, sys::PERF_EVENT_IOC_PERIOD as _, &p as *const u64);
        libc::ioctl(fd, sys::PERF_EVENT_IOC_REFRESH as _, 1);
    }
}

pub(crate) fn load(s: &Shared, i: usize) -> Window {
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

impl Shared {
    /// Free slots, an empty record buffer and the periods of `config`.
    pub(super) fn new(config: &PmuConfig) -> Shared {
        Shared {
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
        }
    }
}

/// Installs [`handler`] for [`signal`] through the sampler core, refusing to replace a handler
/// someone else installed; returns it with the previous disposition, for stop to put back. On
/// failure `shared` (not yet published) is freed and `RUNNING` cleared.
pub(super) fn install(shared: *mut Shared) -> Result<Installed, PmuError> {
    core::install(signal(), handler).map_err(|e| {
        RUNNING.store(false, Ordering::SeqCst);
        // SAFETY: never published.
        drop(unsafe { Box::from_raw(shared) });
        match e {
            InstallError::Sigaction(e) => PmuError::Io(e),
            InstallError::InUse(_) => PmuError::SignalInUse(signal()),
        }
    })
}
