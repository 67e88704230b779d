//! Perf groups: opening a counter or a thread's group, naming why the kernel refused, reading
//! a group's values, and [`Counters`], the ground truth read around a call.

use super::super::error::PmuError;
use super::super::events::{Event, MAX_MEMBERS};
use crate::sys;
use std::io;

/// What a leader's `read` returns: the times enabled and running (multiplexing shows as
/// running < enabled) and every member's value in one read.
const READ_FORMAT: u64 = sys::PERF_FORMAT_TOTAL_TIME_ENABLED
    | sys::PERF_FORMAT_TOTAL_TIME_RUNNING
    | sys::PERF_FORMAT_GROUP;

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
    let Some((kind, config)) = super::super::events::kind(ev) else {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("this sampler cannot count {ev:?}"),
        ));
    };
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
