//! Kernel interfaces the `libc` crate does not declare, in one place.
//!
//! The sampler needs three `fcntl` commands to route a perf event's overflow signal to the
//! thread the event measures, and the `perf_event_open(2)` system call with its attribute
//! structure. The `libc` crate (0.2.180) has `SYS_perf_event_open` but, for glibc on x86_64, no
//! `F_SETSIG`, `F_SETOWN_EX`, `F_OWNER_TID` or `struct f_owner_ex`, and no `perf_event_attr`.
//! They are declared here once, each citing the kernel header it comes from, and the tests at
//! the bottom pin every value: a number typed wrong here would route signals to the wrong
//! thread or open the wrong event, so the tests check the kernel's own answer where it can give
//! one (`F_GETSIG` reads back what `F_SETSIG` stored), not just the literal.
//!
//! To add a declaration: copy it from the named header, cite it, and add a test.

use std::io;

// === fcntl: include/uapi/asm-generic/fcntl.h ===

/// `F_SETSIG`: the signal sent when I/O becomes possible on an `O_ASYNC` descriptor.
/// `include/uapi/asm-generic/fcntl.h`: `#define F_SETSIG 10 /* for sockets. */`
pub(crate) const F_SETSIG: libc::c_int = 10;

/// `F_GETSIG`: reads back the `F_SETSIG` value (used by the test that pins `F_SETSIG`).
/// `include/uapi/asm-generic/fcntl.h`: `#define F_GETSIG 11 /* for sockets. */`
#[cfg(test)]
pub(crate) const F_GETSIG: libc::c_int = 11;

/// `F_SETOWN_EX`: sets the owner (a thread, process or process group) that receives the signal.
/// `include/uapi/asm-generic/fcntl.h`: `#define F_SETOWN_EX 15`
pub(crate) const F_SETOWN_EX: libc::c_int = 15;

/// `F_GETOWN_EX`: reads the owner back (used by the test that pins `F_SETOWN_EX`).
/// `include/uapi/asm-generic/fcntl.h`: `#define F_GETOWN_EX 16`
#[cfg(test)]
pub(crate) const F_GETOWN_EX: libc::c_int = 16;

/// `F_OWNER_TID`: the owner is one thread, named by its kernel thread id.
/// `include/uapi/asm-generic/fcntl.h`: `#define F_OWNER_TID 0`
pub(crate) const F_OWNER_TID: libc::c_int = 0;

/// `struct f_owner_ex` from `include/uapi/asm-generic/fcntl.h`:
/// `struct f_owner_ex { int type; __kernel_pid_t pid; };`
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FOwnerEx {
    /// One of the `F_OWNER_*` constants.
    pub(crate) kind: libc::c_int,
    /// The thread, process or process-group id.
    pub(crate) pid: libc::pid_t,
}

// === perf_event_open: include/uapi/linux/perf_event.h ===

/// `PERF_TYPE_SOFTWARE` from `enum perf_type_id`.
pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_TASK_CLOCK` from `enum perf_sw_ids`: the thread's own CPU clock, in ns.
pub(crate) const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `PERF_ATTR_SIZE_VER0`: the first published size of `struct perf_event_attr`. Every kernel
/// since 2.6.31 accepts it; the fields after it are zero, as the kernel assumes for old callers.
pub(crate) const PERF_ATTR_SIZE_VER0: u32 = 64;
/// `PERF_FLAG_FD_CLOEXEC`: open the event descriptor close-on-exec.
pub(crate) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_EVENT_IOC_ENABLE`: `_IO('$', 0)`.
pub(crate) const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
pub(crate) const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// `PERF_EVENT_IOC_REFRESH`: `_IO('$', 2)`: enables the event for that many more overflows.
pub(crate) const PERF_EVENT_IOC_REFRESH: libc::c_ulong = 0x2402;
/// `PERF_EVENT_IOC_PERIOD`: `_IOW('$', 4, __u64)`; its argument is a *pointer* to the period.
pub(crate) const PERF_EVENT_IOC_PERIOD: libc::c_ulong = 0x4008_2404;

/// `PERF_TYPE_HARDWARE` from `enum perf_type_id`: the generic hardware events below.
pub(crate) const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_HW_CACHE` from `enum perf_type_id`: cache events, configured by
/// [`hw_cache_config`].
pub(crate) const PERF_TYPE_HW_CACHE: u32 = 3;
/// `PERF_COUNT_HW_CPU_CYCLES` from `enum perf_hw_id`.
pub(crate) const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_HW_INSTRUCTIONS` from `enum perf_hw_id`.
pub(crate) const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// `PERF_COUNT_HW_CACHE_REFERENCES` from `enum perf_hw_id`.
pub(crate) const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
/// `PERF_COUNT_HW_CACHE_MISSES` from `enum perf_hw_id`.
pub(crate) const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
/// `PERF_COUNT_HW_BRANCH_INSTRUCTIONS` from `enum perf_hw_id`.
pub(crate) const PERF_COUNT_HW_BRANCH_INSTRUCTIONS: u64 = 4;
/// `PERF_COUNT_HW_BRANCH_MISSES` from `enum perf_hw_id`.
pub(crate) const PERF_COUNT_HW_BRANCH_MISSES: u64 = 5;
/// `PERF_COUNT_SW_PAGE_FAULTS` from `enum perf_sw_ids`.
pub(crate) const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
/// `PERF_COUNT_HW_CACHE_L1D` from `enum perf_hw_cache_id`.
pub(crate) const PERF_COUNT_HW_CACHE_L1D: u64 = 0;
/// `PERF_COUNT_HW_CACHE_OP_READ` from `enum perf_hw_cache_op_id`.
pub(crate) const PERF_COUNT_HW_CACHE_OP_READ: u64 = 0;
/// `PERF_COUNT_HW_CACHE_RESULT_ACCESS` from `enum perf_hw_cache_op_result_id`.
pub(crate) const PERF_COUNT_HW_CACHE_RESULT_ACCESS: u64 = 0;
/// `PERF_COUNT_HW_CACHE_RESULT_MISS` from `enum perf_hw_cache_op_result_id`.
pub(crate) const PERF_COUNT_HW_CACHE_RESULT_MISS: u64 = 1;

/// A `PERF_TYPE_HW_CACHE` config: `cache id | (op id << 8) | (result id << 16)` (the comment
/// above `enum perf_hw_cache_id` in the header).
pub(crate) const fn hw_cache_config(cache: u64, op: u64, result: u64) -> u64 {
    cache | (op << 8) | (result << 16)
}

/// `PERF_FORMAT_TOTAL_TIME_ENABLED` from `enum perf_event_read_format`.
pub(crate) const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// `PERF_FORMAT_TOTAL_TIME_RUNNING` from `enum perf_event_read_format`.
pub(crate) const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// `PERF_FORMAT_GROUP` from `enum perf_event_read_format`: one read gives every member.
pub(crate) const PERF_FORMAT_GROUP: u64 = 1 << 3;

/// Bits of the flags word (the C bitfield after `read_format`), in declaration order.
pub(crate) const ATTR_DISABLED: u64 = 1 << 0;
/// `exclude_kernel`: required at `perf_event_paranoid` 2 (user space only).
pub(crate) const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
/// `exclude_hv`: no hypervisor samples (also required for unprivileged callers on some kernels).
pub(crate) const ATTR_EXCLUDE_HV: u64 = 1 << 6;

/// The first 64 bytes (`PERF_ATTR_SIZE_VER0`) of `struct perf_event_attr`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PerfEventAttr {
    /// `type`: major type (`PERF_TYPE_*`).
    pub(crate) kind: u32,
    /// `size`: the size of this structure, for forward and backward compatibility.
    pub(crate) size: u32,
    /// `config`: type-specific configuration (`PERF_COUNT_SW_*`).
    pub(crate) config: u64,
    /// `sample_period` (the union with `sample_freq`): events between overflows.
    pub(crate) sample_period: u64,
    /// `sample_type`: what a ring-buffer record holds (we have no ring buffer: 0).
    pub(crate) sample_type: u64,
    /// `read_format`.
    pub(crate) read_format: u64,
    /// The bitfield word: `disabled`, `inherit`, ..., `exclude_kernel`, `exclude_hv`, ...
    pub(crate) flags: u64,
    /// `wakeup_events` (union with `wakeup_watermark`).
    pub(crate) wakeup_events: u32,
    /// `bp_type`.
    pub(crate) bp_type: u32,
    /// `bp_addr` / `config1`.
    pub(crate) config1: u64,
}

// === siginfo: include/uapi/asm-generic/siginfo.h ===

/// Offset of `si_fd` in a `SIGPOLL`-style siginfo (the overflowing descriptor, set because of
/// `F_SETSIG`): the union starts at byte 16 on 64-bit Linux, `si_band` (a long) then `si_fd`
/// (an int).
pub(crate) const SI_FD_OFFSET: usize = 24;

/// Opens a task-clock software event on thread `tid` of this process that overflows every
/// `period_ns` nanoseconds of the thread's user-space CPU time. The event starts disabled.
pub(crate) fn open_task_clock(tid: libc::pid_t, period_ns: u64) -> io::Result<libc::c_int> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER0,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns,
        flags: ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
        wakeup_events: 1,
        ..PerfEventAttr::default()
    };
    // SAFETY: `attr` is a live, initialised `perf_event_attr` prefix whose `size` field says
    // how many bytes the kernel may read (64, the structure's size); the other arguments are
    // plain integers (tid, cpu -1 = any, group fd -1 = none, flags).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as libc::c_int)
    }
}

/// Routes overflow notifications of `fd` as `signal` to thread `tid` and enables the event.
///
/// The order matters: the signal number and owner are set before `O_ASYNC`, and the event is
/// enabled last, so no overflow can ever raise the default `SIGIO` (which would kill us).
pub(crate) fn route_and_enable(
    fd: libc::c_int,
    tid: libc::pid_t,
    signal: libc::c_int,
) -> io::Result<()> {
    route_signal(fd, tid, signal)?;
    // SAFETY: PERF_EVENT_IOC_ENABLE takes no argument beyond the descriptor we own.
    if unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ENABLE as _, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Routes readiness notifications of `fd` (a perf event's overflows) as `signal`, carrying
/// `si_fd`, to thread `tid`; the signal number and owner are set before `O_ASYNC`.
pub(crate) fn route_signal(
    fd: libc::c_int,
    tid: libc::pid_t,
    signal: libc::c_int,
) -> io::Result<()> {
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: `fd` is an open descriptor we own; F_SETOWN_EX reads a `struct f_owner_ex` from
    // the pointer, which points to a live `FOwnerEx` with the same layout.
    if unsafe { libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: plain integer arguments on a descriptor we own.
    if unsafe { libc::fcntl(fd, F_SETSIG, signal) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: plain integer arguments on a descriptor we own.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_ASYNC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The count of a perf event opened with no `read_format` (one u64): for `task-clock`, the ns
/// its thread ran while it was enabled. Readable after the thread exited.
pub(crate) fn read_count(fd: libc::c_int) -> Option<u64> {
    let mut v = 0u64;
    // SAFETY: `fd` is a perf event descriptor we own; `v` is a live, writable u64 of the size
    // the kernel writes for read_format 0.
    let n = unsafe { libc::read(fd, (&raw mut v).cast(), 8) };
    (n == 8).then_some(v)
}

/// Disables and closes a perf event descriptor. After `close` returns, the kernel has synced
/// the event's pending work, so it sends no further signal.
pub(crate) fn disable_and_close(fd: libc::c_int) {
    // SAFETY: `fd` is a perf event descriptor we own and close exactly once, here.
    unsafe {
        libc::ioctl(fd, PERF_EVENT_IOC_DISABLE as _, 0);
        libc::close(fd);
    }
}

/// The mask our signal handlers run with: every signal but the synchronous faults.
///
/// Our handlers run on the thread's alternate signal stack when it has one (`SA_ONSTACK`: a
/// thread near its guard page is not pushed over it by our frame). That stack is small (Rust
/// gives each thread about 8 KiB) and a signal frame with AVX-512 state takes ~3 KiB, so a
/// signal nesting on top of our handler, whose own handler then nests another, can overflow it:
/// `profpoint/tests/reliability.rs` did exactly that (the program's SIGUSR1 on the SIGPROF
/// handler on the windows' handler) and crashed. With this mask the other signals wait the few
/// microseconds our handler takes and then run on the stack they would have had without us.
/// Faults stay unblocked: the kernel kills a thread that faults with them blocked.
pub(crate) fn handler_mask() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid buffer for sigfillset, which initialises it; the
    // sigdelset calls take valid signal numbers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for sig in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
            libc::SIGABRT,
            // seccomp's SECCOMP_RET_TRAP: blocked, the kernel would kill the process.
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut set, sig);
        }
        set
    }
}

/// The CPU-time clock of thread `tid` of this process, for `clock_gettime`: the kernel's
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)` (`include/linux/posix-timers_types.h`):
/// `(~tid << 3) | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2)`, as glibc's
/// `pthread_getcpuclockid` builds it.
pub(crate) fn thread_cpu_clock(tid: libc::pid_t) -> libc::clockid_t {
    ((!tid) << 3) | 4 | 2
}

/// The CPU time of thread `tid` of this process in nanoseconds, or `None` once it has exited.
pub(crate) fn thread_cpu_ns(tid: libc::pid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec for clock_gettime to fill; an invalid clock id (a thread
    // that exited) makes it fail with EINVAL, nothing else.
    let r = unsafe { libc::clock_gettime(thread_cpu_clock(tid), &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The calling thread's kernel thread id.
pub(crate) fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_cpu_clock_reads_what_it_reads_itself() {
        // Burn a little CPU so the clock is well past zero, then read both ways.
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(5) {
            std::hint::black_box(0u64);
        }
        let mut own = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a live timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut own) };
        let by_tid = thread_cpu_ns(gettid()).expect("our own clock");
        let own = own.tv_sec as u64 * 1_000_000_000 + own.tv_nsec as u64;
        assert!(
            by_tid >= own && by_tid - own < 5_000_000,
            "{by_tid} vs {own}"
        );
        // Another thread's clock, read from here, once it has run.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            // 20 ms of this thread's own CPU (not wall time: the machine may be busy).
            while thread_cpu_ns(gettid()).unwrap_or(0) < 20_000_000 {
                std::hint::black_box(0u64);
            }
            tx.send(gettid()).unwrap();
            done_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        let other = thread_cpu_ns(tid).expect("a live thread's clock");
        assert!(other >= 20_000_000, "{other} ns");
        done_tx.send(()).unwrap();
        h.join().unwrap();
        // On Linux the clock is gone when `join` returns; qemu-user wakes the joiner before its
        // host thread has exited, so give the thread up to a second to be gone.
        let t = std::time::Instant::now();
        while thread_cpu_ns(tid).is_some() && t.elapsed() < std::time::Duration::from_secs(1) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(thread_cpu_ns(tid), None, "an exited thread has no clock");
    }

    #[test]
    fn the_handler_mask_holds_back_other_signals_but_not_faults() {
        let m = handler_mask();
        // SAFETY: sigismember reads an initialised set.
        let member = |s| unsafe { libc::sigismember(&m, s) } == 1;
        for s in [
            libc::SIGUSR1,
            libc::SIGPROF,
            libc::SIGALRM,
            libc::SIGRTMIN() + 6,
        ] {
            assert!(member(s), "signal {s} waits while our handler runs");
        }
        for s in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGSYS,
        ] {
            assert!(!member(s), "fault {s} is never blocked");
        }
    }

    /// The literals themselves, as written in `include/uapi/asm-generic/fcntl.h`.
    #[test]
    fn fcntl_constants_match_the_kernel_header() {
        assert_eq!(F_SETSIG, 10);
        assert_eq!(F_GETSIG, 11);
        assert_eq!(F_SETOWN_EX, 15);
        assert_eq!(F_GETOWN_EX, 16);
        assert_eq!(F_OWNER_TID, 0);
        assert_eq!(std::mem::size_of::<FOwnerEx>(), 8);
        assert_eq!(
            std::mem::size_of::<PerfEventAttr>(),
            PERF_ATTR_SIZE_VER0 as usize
        );
    }

    /// The kernel's own answer: what F_SETSIG/F_SETOWN_EX store, F_GETSIG/F_GETOWN_EX read back.
    /// A pipe is enough: both commands work on any descriptor.
    #[test]
    fn fcntl_constants_round_trip_through_the_kernel() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let fd = fds[0];
        // SAFETY: plain integer arguments on the pipe we just opened.
        assert_eq!(unsafe { libc::fcntl(fd, F_SETSIG, libc::SIGPROF) }, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::fcntl(fd, F_GETSIG) }, libc::SIGPROF);
        let tid = gettid();
        let set = FOwnerEx {
            kind: F_OWNER_TID,
            pid: tid,
        };
        // SAFETY: F_SETOWN_EX reads an f_owner_ex from a live value of that layout.
        let r = unsafe { libc::fcntl(fd, F_SETOWN_EX, &set as *const FOwnerEx) };
        assert_eq!(r, 0);
        let mut got = FOwnerEx { kind: -1, pid: -1 };
        // SAFETY: F_GETOWN_EX writes an f_owner_ex into a live value of that layout.
        let r = unsafe { libc::fcntl(fd, F_GETOWN_EX, &mut got as *mut FOwnerEx) };
        assert_eq!(r, 0);
        assert_eq!((got.kind, got.pid), (F_OWNER_TID, tid));
        // SAFETY: closing the two descriptors we opened.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }

    #[test]
    fn ioctl_numbers_match_the_kernel_header() {
        // _IO('$', 2) and _IOW('$', 4, __u64): dir 1 (write) << 30 | size 8 << 16 | '$' << 8 | nr.
        assert_eq!(PERF_EVENT_IOC_REFRESH, (b'$' as libc::c_ulong) << 8 | 2);
        assert_eq!(
            PERF_EVENT_IOC_PERIOD,
            1 << 30 | 8 << 16 | (b'$' as libc::c_ulong) << 8 | 4
        );
    }

    #[test]
    fn si_fd_is_where_we_read_it() {
        // A pipe with F_SETSIG raises our signal with si_fd set: read it back at our offset.
        use std::sync::atomic::AtomicI64;
        static SEEN: AtomicI64 = AtomicI64::new(-1);
        extern "C" fn h(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
            // SAFETY: a valid siginfo from the kernel, carrying si_fd because of F_SETSIG.
            let fd = unsafe { *((info as *const u8).add(SI_FD_OFFSET) as *const libc::c_int) };
            SEEN.store(fd as i64, std::sync::atomic::Ordering::SeqCst);
        }
        let sig = libc::SIGRTMIN() + 7;
        // SAFETY: zeroed sigaction, then filled; pipe/fcntl/write on our own descriptors.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction =
                h as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            act.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(sig, &act, std::ptr::null_mut());
            let mut p = [0; 2];
            assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
            route_signal(p[0], gettid(), sig).unwrap();
            libc::write(p[1], b"x".as_ptr().cast(), 1);
            for _ in 0..100 {
                if SEEN.load(std::sync::atomic::Ordering::SeqCst) >= 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(SEEN.load(std::sync::atomic::Ordering::SeqCst), p[0] as i64);
            libc::close(p[0]);
            libc::close(p[1]);
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}
