//! [`Profile`]: the counts of one sampling run, with what is needed to explain them later.
//!
//! A profile is plain data: the objects that were mapped (path, load bias, build id), the
//! executable segments with their non-zero bucket counts (sparse: a 2 MB text has 128 Ki
//! buckets at shift 4, of which a typical run touches a few hundred), the "other" count, and
//! how it was sampled (mode, source, requested rate, CPU and wall time, warnings). It holds no
//! symbol: symbols are resolved when a report is made, in this process or in another one from
//! a dump (`dump.rs`), so sampling never pays for them.

use crate::buckets::ObjectFile;
use crate::config::Mode;

/// The sample source a run actually used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceUsed {
    /// A perf `task-clock` software event per thread.
    PerfTaskClock,
    /// `setitimer(ITIMER_PROF)`.
    Setitimer,
    /// The watcher's CPU-clock reads and `tgkill`.
    Tgkill,
}

impl SourceUsed {
    /// The name used in reports: `perf task-clock` or `setitimer`.
    pub fn name(self) -> &'static str {
        match self {
            SourceUsed::PerfTaskClock => "perf task-clock",
            SourceUsed::Setitimer => "setitimer",
            SourceUsed::Tgkill => "tgkill",
        }
    }
}

/// One executable segment and its non-zero bucket counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Index into [`Profile::objects`].
    pub object: usize,
    /// First byte (run-time address).
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `(bucket index, samples)`, sorted by index, no zero counts. Bucket `i` starts at
    /// `(start & !(bucket_size - 1)) + i * bucket_size`.
    pub counts: Vec<(u32, u64)>,
}

/// The result of a sampling run: see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub(crate) mode: Mode,
    pub(crate) source: SourceUsed,
    pub(crate) requested_hz: u32,
    pub(crate) shift: u32,
    pub(crate) objects: Vec<ObjectFile>,
    pub(crate) segments: Vec<Segment>,
    pub(crate) other: u64,
    /// Samples taken by the watcher from `/proc` for blocked threads (wall mode).
    pub(crate) proc_samples: u64,
    /// User CPU time of the process while sampling, less the watcher's own, in ns.
    pub(crate) user_cpu_ns: u64,
    /// System CPU time of the process while sampling, less the watcher's own, in ns.
    pub(crate) sys_cpu_ns: u64,
    /// CPU the watcher thread used (not in `user_cpu_ns`/`sys_cpu_ns`).
    pub(crate) watcher_cpu_ns: u64,
    /// Wall time of the run, in ns.
    pub(crate) wall_ns: u64,
    /// Threads sampled (perf events opened) over the run.
    pub(crate) threads: u64,
    /// CPU time, in ns, that ran on threads no sampling event covered (per-thread sources:
    /// threads that ended before the watcher found them); 0 with `setitimer` and in dumps.
    pub(crate) unarmed_cpu_ns: u64,
    pub(crate) warnings: Vec<String>,
    /// The call stacks, when the run captured them.
    pub(crate) stacks: Option<crate::stacks::RawStacks>,
}

impl Profile {
    /// CPU or wall-clock sampling.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The sample source used.
    pub fn source(&self) -> SourceUsed {
        self.source
    }

    /// The rate asked for, in Hz.
    pub fn requested_hz(&self) -> u32 {
        self.requested_hz
    }

    /// log2 of the bucket size.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// The mapped objects that had executable segments at start.
    pub fn objects(&self) -> &[ObjectFile] {
        &self.objects
    }

    /// The executable segments and their counts.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Samples whose pc lay outside every executable segment known at start.
    pub fn other(&self) -> u64 {
        self.other
    }

    /// Every sample: those in buckets plus [`other`](Self::other).
    pub fn total_samples(&self) -> u64 {
        self.in_buckets() + self.other
    }

    /// Samples that landed in a bucket.
    pub fn in_buckets(&self) -> u64 {
        self.segments
            .iter()
            .flat_map(|s| s.counts.iter())
            .map(|&(_, n)| n)
            .sum()
    }

    /// Samples delivered by signals to running threads (total less the `/proc` samples).
    pub fn signal_samples(&self) -> u64 {
        self.total_samples().saturating_sub(self.proc_samples)
    }

    /// Samples of blocked threads read from `/proc` (wall mode; 0 in CPU mode).
    pub fn proc_samples(&self) -> u64 {
        self.proc_samples
    }

    /// User-space CPU seconds the process spent while sampling (the watcher's excluded).
    pub fn user_cpu_seconds(&self) -> f64 {
        self.user_cpu_ns as f64 / 1e9
    }

    /// System (kernel) CPU seconds the process spent while sampling (the watcher's excluded);
    /// signal delivery itself is counted here.
    pub fn sys_cpu_seconds(&self) -> f64 {
        self.sys_cpu_ns as f64 / 1e9
    }

    /// CPU seconds the sampler's own watcher thread used (thread scans, wall-mode reads, the
    /// tgkill source's clock reads and signals); 0 for a profile read from a version-1 dump.
    pub fn watcher_cpu_seconds(&self) -> f64 {
        self.watcher_cpu_ns as f64 / 1e9
    }

    /// Signal samples per CPU second, user and system: lower than [`achieved_hz`] when part of
    /// the time was spent in the kernel, where (at `perf_event_paranoid` 2) no sample is taken.
    ///
    /// [`achieved_hz`]: Self::achieved_hz
    pub fn achieved_hz_per_cpu_second(&self) -> Option<f64> {
        let cpu = self.user_cpu_ns + self.sys_cpu_ns;
        (cpu >= 1_000_000).then(|| self.signal_samples() as f64 / (cpu as f64 / 1e9))
    }

    /// Wall-clock seconds of the run.
    pub fn wall_seconds(&self) -> f64 {
        self.wall_ns as f64 / 1e9
    }

    /// Threads sampled over the run (perf source; 0 with `setitimer`, which needs none).
    pub fn threads(&self) -> u64 {
        self.threads
    }

    /// Signal samples per user-CPU second: the rate actually delivered (`None` when the run
    /// used no measurable CPU time).
    pub fn achieved_hz(&self) -> Option<f64> {
        (self.user_cpu_ns >= 1_000_000)
            .then(|| self.signal_samples() as f64 / self.user_cpu_seconds())
    }

    /// CPU seconds that ran on threads no sampling event covered: short-lived threads that
    /// ended before the watcher found them (per-thread sources; 0 with `setitimer`).
    pub fn unarmed_cpu_seconds(&self) -> f64 {
        self.unarmed_cpu_ns as f64 / 1e9
    }

    /// Things a reader of the report should know (rate below request, fallback source, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether the run captured call stacks ([`Config::stacks`](crate::Config::stacks)).
    pub fn has_stacks(&self) -> bool {
        self.stacks.is_some()
    }

    /// Samples whose stack was stored (0 without stacks).
    pub fn stack_samples(&self) -> u64 {
        self.stacks
            .as_ref()
            .map_or(0, |s| s.stacks.iter().map(|s| s.count).sum())
    }

    /// Bucket size in bytes.
    pub fn bucket_size(&self) -> u64 {
        1u64 << self.shift
    }

    /// Every non-zero bucket as `(segment index, bucket start address, samples)`.
    pub fn buckets(&self) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        let size = self.bucket_size();
        self.segments.iter().enumerate().flat_map(move |(si, s)| {
            let base = s.start & !(size - 1);
            s.counts
                .iter()
                .map(move |&(i, n)| (si, base + u64::from(i) * size, n))
        })
    }
}
