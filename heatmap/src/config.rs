//! What to sample and how: [`Config`], built in code (a program that links profpoint gets one
//! from profpoint's environment variables; this crate reads none).
//!
//! Defaults and why:
//! - `hz = 1000`: a millisecond of CPU per sample gives ~1000 samples per busy second, enough
//!   to rank functions taking 1% of the time, at well under 1% overhead (see NOTES.md).
//! - `shift = 4`: 16-byte buckets, the function alignment of x86_64 code, so a bucket never
//!   holds two function entries (see `buckets.rs`).
//! - `mode = Cpu`, `source = Auto` (perf `task-clock` if the kernel allows it, else
//!   `setitimer`).

use std::time::Duration;

/// What a sample represents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// CPU time (the Lego heatmap's `CPU_PROFILING`): running threads are sampled at `hz` per
    /// second of their user-space CPU time.
    #[default]
    Cpu,
    /// Wall-clock time (the Lego heatmap's `SLEEP_PROFILING` idea): running threads as in `Cpu`,
    /// and every blocked thread once per `1/hz` seconds, its pc read from `/proc/self/task/TID/
    /// syscall` by the watcher thread without sending it a signal (so no `EINTR`).
    Wall,
}

/// Where samples come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// The best available: perf `task-clock`, else `setitimer`.
    #[default]
    Auto,
    /// A perf software `task-clock` event per thread, its overflow signal routed to that thread:
    /// the exact rate. Fails to start if `perf_event_open` is not allowed.
    PerfTaskClock,
    /// `setitimer(ITIMER_PROF)`: works everywhere, but at most the kernel tick (250 Hz here),
    /// and the process-directed signal can reach a blocked thread (`EINTR` risk in `nanosleep`,
    /// `poll`, ...).
    Setitimer,
    /// The watcher thread wakes `hz` times a second, reads every thread's CPU clock, and sends
    /// `SIGPROF` (`tgkill`) to each thread that has run a period of CPU since its last sample.
    /// No perf event and no timer per thread: where timer interrupts are slow (VMs), it costs a
    /// fraction of `PerfTaskClock` on the sampled threads, while the watcher itself uses a few
    /// percent of a core (measured in NOTES.md). The rate is at most the watcher's wake-up
    /// rate. Samples include system time, at the pc where the thread returns to user space. A
    /// thread that has not run since its last sample gets no signal, but one that blocks just
    /// after running its period can: a system call that is not restarted (`poll`, `nanosleep`)
    /// then returns `EINTR`, as with `setitimer`.
    Tgkill,
}

/// How to sample. `Config::default()` is 1 kHz CPU sampling with 16-byte buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub(crate) hz: u32,
    pub(crate) shift: u32,
    pub(crate) mode: Mode,
    pub(crate) source: Source,
    pub(crate) scan_interval: Duration,
    pub(crate) wait_for_first_scan: bool,
    /// Frames per stack; `None`: no stacks.
    pub(crate) stack_depth: Option<u32>,
    pub(crate) stack_slots: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            hz: 1000,
            shift: 4,
            mode: Mode::Cpu,
            source: Source::Auto,
            // 20 ms: new threads are picked up within 20 ms plus one scan (well inside the
            // 100 ms promise), at ~50 directory reads per second (~10 us each here).
            scan_interval: Duration::from_millis(20),
            wait_for_first_scan: true,
            stack_depth: None,
            stack_slots: crate::stacks::DEFAULT_SLOTS,
        }
    }
}

/// Highest accepted rate: 10 us between samples; the kernel's own default
/// `perf_event_max_sample_rate` is 100000 too.
pub const MAX_HZ: u32 = 100_000;
/// Highest rate sampled: a rate asked above it (up to [`MAX_HZ`]) is clamped to it, and the
/// profile's warnings say so. A sample costs the sampled thread the kernel's timer and signal
/// path plus the handler (its stack walk included), tens of microseconds in a VM whose timer
/// interrupts exit to the hypervisor: much faster, a sample comes due before the last one is
/// served and the threads spend all their time in the handler. This rate is served everywhere
/// measured (its cost and the figures behind it: BENCHMARKS.md and RELIABILITY.md).
pub const MAX_SERVED_HZ: u32 = 10_000;

/// The line for a rate asked above [`MAX_SERVED_HZ`]: the value asked, the rate used, why.
pub fn served_rate_warning(asked: u32) -> String {
    format!(
        "hz={asked}: sampling at {MAX_SERVED_HZ} Hz, the most the sampler serves (a sample \
         costs tens of microseconds where timer interrupts are slow: faster, the sampled threads \
         would spend their time in the handler)"
    )
}

/// Largest accepted shift: 16 MiB buckets (one bucket per big library is already useless).
pub const MAX_SHIFT: u32 = 24;

impl Config {
    /// The default configuration (same as `Config::default()`).
    pub fn new() -> Config {
        Config::default()
    }

    /// Sampling rate in Hz (1 to 100000; checked by [`start`](crate::start), which samples at
    /// most [`MAX_SERVED_HZ`]).
    pub fn hz(mut self, hz: u32) -> Config {
        self.hz = hz;
        self
    }

    /// Bucket size: `1 << shift` bytes (0 to 24; checked by [`start`](crate::start)).
    pub fn shift(mut self, shift: u32) -> Config {
        self.shift = shift;
        self
    }

    /// CPU or wall-clock sampling.
    pub fn mode(mut self, mode: Mode) -> Config {
        self.mode = mode;
        self
    }

    /// Force a sample source (default: [`Source::Auto`]).
    pub fn source(mut self, source: Source) -> Config {
        self.source = source;
        self
    }

    /// How often the watcher thread looks for new threads (default 20 ms).
    pub fn scan_interval(mut self, interval: Duration) -> Config {
        self.scan_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Whether [`start`](crate::start) waits for the watcher thread's first scan of the
    /// process's threads (default: yes, so every running thread is sampled when it returns).
    /// `false` where waiting on another thread could deadlock: inside a library's initialiser
    /// run by `dlopen`, glibc holds its loader lock, which the new thread's first thread-local
    /// needs, so the watcher cannot run until `dlopen` returns. Threads are then sampled from
    /// the watcher's first scan, a few milliseconds later.
    pub fn wait_for_first_scan(mut self, wait: bool) -> Config {
        self.wait_for_first_scan = wait;
        self
    }

    /// Captures each sample's call stack, at most `depth` frames (1 to
    /// [`MAX_DEPTH`](crate::stacks::MAX_DEPTH), typically
    /// [`DEFAULT_DEPTH`](crate::stacks::DEFAULT_DEPTH) = 64; checked by [`start`](crate::start)).
    /// Off by default. The profile's report then has [`Report::stacks`](crate::Report::stacks).
    /// x86_64 Linux only: elsewhere sampling runs without stacks and the profile says so.
    pub fn stacks(mut self, depth: u32) -> Config {
        self.stack_depth = Some(depth);
        self
    }

    /// No stacks (the default).
    pub fn no_stacks(mut self) -> Config {
        self.stack_depth = None;
        self
    }

    /// Slots of the stack table: how many distinct stacks a run can hold (default 8192;
    /// 64 to 2^20, rounded up to a power of two; checked by [`start`](crate::start)). A
    /// sample whose stack finds no slot is counted as dropped. Memory: `slots x (24 + 8 x
    /// depth)` bytes, 4.4 MiB at the defaults.
    pub fn stack_slots(mut self, slots: u32) -> Config {
        self.stack_slots = slots;
        self
    }

    // The getters keep the `get_` prefix the API guidelines leave out elsewhere: the plain
    // names are the builder's setters above (`Config::new().hz(1000)`), as std's
    // `Command::get_args` stands beside `Command::arg`.

    /// The stack depth asked for, if stacks are on.
    pub fn get_stacks(&self) -> Option<u32> {
        self.stack_depth
    }

    /// The stack table's slots asked for.
    pub fn get_stack_slots(&self) -> u32 {
        self.stack_slots
    }

    /// The requested rate in Hz.
    pub fn get_hz(&self) -> u32 {
        self.hz
    }

    /// The bucket shift.
    pub fn get_shift(&self) -> u32 {
        self.shift
    }

    /// The mode.
    pub fn get_mode(&self) -> Mode {
        self.mode
    }

    /// The source asked for.
    pub fn get_source(&self) -> Source {
        self.source
    }
}
