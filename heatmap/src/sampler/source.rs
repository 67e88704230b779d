//! The sources of samples, each in one place: how a new thread is made sampled, what a tick
//! does, and which source a configuration gets.
//!
//! - [`SourceUsed::PerfTaskClock`]: one perf software event per thread (`task-clock`,
//!   `sample_period = 1e9 / hz` ns, user space only as `perf_event_paranoid` 2 requires), its
//!   overflow signal routed by `F_SETOWN_EX`/`F_SETSIG` to that very thread. No tick.
//! - [`SourceUsed::Tgkill`]: the watcher reads each thread's CPU clock at every tick and sends
//!   `SIGPROF` (`tgkill`) to each that ran a period of CPU since its last sample.
//! - [`SourceUsed::Setitimer`]: `setitimer(ITIMER_PROF)`, armed at start (`shared.rs`): no
//!   per-thread set-up, no tick; at most the kernel tick (250 Hz here).
//! - [`Mode::Wall`], with any source: at every tick the watcher also reads
//!   `/proc/self/task/TID/syscall` of each thread (kept open) and counts the user pc of the
//!   blocked ones.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;

use super::handler::SIGNAL;
use super::watcher::{Tracked, Watcher};
use crate::config::{Config, Mode, Source};
use crate::error::StartError;
use crate::profile::SourceUsed;
use crate::sys;

/// The source a configuration gets: perf's task clock where it opens (or is asked for),
/// else `setitimer` (with a warning pushed to `warnings`), or the one asked for.
pub(super) fn choose(
    config: &Config,
    period_ns: u64,
    warnings: &mut Vec<String>,
) -> Result<SourceUsed, StartError> {
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
    Ok(source)
}

impl Watcher {
    /// Whether the watcher ticks at `hz`: the tgkill source and wall mode need a clock.
    pub(super) fn ticks(&self) -> bool {
        self.source == SourceUsed::Tgkill || self.mode == Mode::Wall
    }

    /// One tick: the tgkill source signals the threads that ran, wall mode reads the blocked
    /// ones. Returns whether any thread ran since the last tick (the tgkill source's; `true`
    /// for the others).
    pub(super) fn tick(&self, threads: &mut HashMap<libc::pid_t, Tracked>, buf: &mut [u8]) -> bool {
        let ran = match self.source {
            SourceUsed::Tgkill => self.signal_runners(threads),
            SourceUsed::PerfTaskClock | SourceUsed::Setitimer => true,
        };
        if self.mode == Mode::Wall {
            self.sample_blocked(threads, buf);
            // Relaxed: a tally.
            self.shared.ticks.fetch_add(1, Ordering::Relaxed);
        }
        ran
    }

    /// A thread found: what its source needs to sample it (its perf event, its CPU clock at
    /// first sight) and, in wall mode, its `/proc` syscall file. `None` if it has already
    /// exited.
    pub(super) fn track(&self, tid: libc::pid_t) -> Option<Tracked> {
        let mut tracked = Tracked::default();
        match self.source {
            SourceUsed::Tgkill => {
                let ns = sys::thread_cpu_ns(tid)?;
                tracked.cpu_ns = ns;
                tracked.first_cpu_ns = ns;
                // Relaxed: a tally.
                self.shared.threads.fetch_add(1, Ordering::Relaxed);
            }
            SourceUsed::PerfTaskClock => match sys::open_task_clock(tid, self.period_ns) {
                Ok(fd) => match sys::route_and_enable(fd, tid, SIGNAL) {
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
            },
            SourceUsed::Setitimer => {}
        }
        if self.mode == Mode::Wall {
            tracked.syscall = File::open(format!("/proc/self/task/{tid}/syscall")).ok();
        }
        Some(tracked)
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
                unsafe { libc::syscall(libc::SYS_tgkill, self.pid, tid, SIGNAL) };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buckets;
    use std::sync::mpsc;
    use std::time::Duration;

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
