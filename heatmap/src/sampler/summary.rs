//! The profile of a run (or a snapshot): the counts read from the table sets, the CPU the
//! process ran, and the warnings that say where the counts fall short.

use std::sync::atomic::Ordering;

use super::shared::Replaced;
use super::{Inner, lock, rusage_ns};
use crate::config::Mode;
use crate::profile::{Profile, Segment, SourceUsed};
use crate::signal;

impl Inner {
    /// The profile so far; `live`: the sampler still runs (a snapshot), so a replaced handler
    /// not yet seen by the watcher is looked for here too.
    pub(super) fn profile(&self, extra_warnings: Vec<String>, live: bool) -> Profile {
        if let Some(by) = self.installed.replaced().filter(|_| live) {
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
            stacks: self.stacks.as_ref().map(|s| s.read()),
        };
        let unarmed_matters = self.warn_unarmed(&mut p);
        self.warn_shortfalls(&mut p, replaced, unarmed_matters);
        p.warnings.extend(extra_warnings);
        p
    }

    /// Warns when much of the CPU ran on threads no sampling event covered; returns whether
    /// it did.
    fn warn_unarmed(&self, p: &mut Profile) -> bool {
        let (user_cpu_ns, sys_cpu_ns, unarmed_cpu_ns) =
            (p.user_cpu_ns, p.sys_cpu_ns, p.unarmed_cpu_ns);
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
        unarmed_matters
    }

    /// Warns about threads not given an event, a failed thread scan, a replaced handler, and
    /// rates below the requested one.
    fn warn_shortfalls(&self, p: &mut Profile, replaced: Option<Replaced>, unarmed_matters: bool) {
        let (user_cpu_ns, wall_ns) = (p.user_cpu_ns, p.wall_ns);
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
    }
}
