//! The one table of `PROFPOINT_*` variables. The parsers take their error texts from it,
//! [`super::var`] reads nothing it does not list, and `tests.rs` holds README's list of
//! variables against it.

/// One environment variable: what it is called, what it accepts, what holds without it, and
/// what its error says was expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    /// The variable's name.
    pub name: &'static str,
    /// The values it accepts, and what they do.
    pub values: &'static str,
    /// What holds when it is unset.
    pub default: &'static str,
    /// The error's "expected ..." text for a value it does not accept (`PROFPOINT_REPORT`'s is
    /// made from the destinations its parser accepts).
    pub expected: &'static str,
}

/// `expected` of the variables whose accepted values are comma-separated globs.
const GLOBS: &str = "a comma-separated list of point-name globs such as db::* (a comma inside <...>, (...) or [...] is the name's)";
/// `expected` of the flags.
const FLAG: &str = "0 or 1";

/// Every `PROFPOINT_*` variable profpoint reads.
pub const VARS: &[Var] = &[
    Var {
        name: "PROFPOINT_REPORT",
        values: "comma-separated stderr, stdout, off, json:PATH, csv:PATH, table:PATH, prom:PATH, \
                 svg:PATH, pprof:PATH, folded:PATH, flame:PATH (the sampled stacks when the \
                 report has them, else the points tree), pprof-stacks:PATH (pprof with stacks: \
                 the sampled stacks when the report has them, else the points tree), \
                 points-folded:PATH, points-flame:PATH, points-pprof:PATH (the points tree) \
                 ({pid} in a PATH becomes the process id; a forked child \
                 that exits normally writes PATH.PID; a relative PATH is resolved at start-up; \
                 files are replaced whole, by rename; a PATH that exists and is not a regular \
                 file is refused, except /dev/stdout, /dev/stderr, /dev/null and /dev/full)",
        default: "no report unless the program opted in (then stderr)",
        // The parser's tables (`runtime/deliver/spelling.rs`), spelled out; a test there
        // holds this text against them.
        expected: "a comma-separated list of stderr, stdout, json:PATH, csv:PATH, table:PATH, \
                   prom:PATH, svg:PATH, pprof:PATH, folded:PATH, flame:PATH, points-folded:PATH, \
                   points-flame:PATH, pprof-stacks:PATH or points-pprof:PATH, or off alone",
    },
    Var {
        name: "PROFPOINT_DISABLE",
        values: "comma-separated globs of point names to turn off",
        default: "none",
        expected: GLOBS,
    },
    Var {
        name: "PROFPOINT_ENABLE",
        values: "comma-separated globs to turn on (applied after PROFPOINT_DISABLE)",
        default: "all on",
        expected: GLOBS,
    },
    Var {
        name: "PROFPOINT_SAMPLE",
        values: "N (every point) or comma-separated GLOB=N: time one call in about N; N = count: \
                 count every call, time none",
        default: "every call timed",
        expected: "N or a comma-separated list of GLOB=N, with N an integer from 1 to 1000000 \
                   or `count` (count every call, time none)",
    },
    Var {
        name: "PROFPOINT_BUDGET",
        values: "the share of CPU time the points' instrumentation may cost: 2% (a percentage), \
                 or off; hot points are then timed on one call in N or counted only, every \
                 call still counted; `2%,bursts` also lets the budget time the hottest in \
                 bursts, their calls between bursts estimated (see profpoint::set_budget)",
        default: "2%",
        expected: "a percentage of CPU time above 0 and at most 100 (e.g. 2%), or off, \
                   optionally followed by `,bursts` (e.g. 2%,bursts)",
    },
    Var {
        name: "PROFPOINT_COMPENSATE",
        values: "0 or 1: each point's own cost and the whole cost of the points nested in it \
                 leave its times",
        default: "0",
        expected: FLAG,
    },
    Var {
        name: "PROFPOINT_MAX_SLOT_MB",
        values: "the cap on the per-thread counters, MiB",
        default: "512",
        expected: "a whole number of MiB from 1 to 1048576",
    },
    Var {
        name: "PROFPOINT_REPORT_EVERY",
        values: "a duration (500ms, 10s, 5m, 1h): also write every destination of \
                 PROFPOINT_REPORT at that interval, with the interval's deltas; {seq} in a PATH \
                 becomes the report's sequence number",
        default: "at exit only",
        expected: "a duration with its unit from 10ms to 30 days (e.g. 500ms, 10s, 5m, 1h)",
    },
    Var {
        name: "PROFPOINT_SERVE",
        values: "IP:PORT or localhost:PORT: serve live reports over HTTP (feature serve)",
        default: "no server",
        expected: "IP:PORT or localhost:PORT (a host name is not looked up)",
    },
    Var {
        name: "PROFPOINT_SERVE_PUBLIC",
        values: "0 or 1: a non-loopback PROFPOINT_SERVE address needs 1",
        default: "0",
        expected: FLAG,
    },
    Var {
        name: "PROFPOINT_SERVE_TOKEN",
        values: "a token, then required as Authorization: Bearer TOKEN by every server of the \
                 process (one started in code too, unless given its own token there); one \
                 that cannot be used means no server",
        default: "none",
        expected: "1 to 4096 bytes of UTF-8 text without control characters",
    },
    Var {
        name: "PROFPOINT_SIGNALS",
        values: "0 or 1: write the report when SIGINT, SIGTERM or SIGHUP ends the process (Unix)",
        default: "1",
        expected: FLAG,
    },
    Var {
        name: "PROFPOINT_SUBTRACT_OVERHEAD",
        values: "0 or 1",
        default: "0",
        expected: FLAG,
    },
    Var {
        name: "PROFPOINT_TRACE",
        values: "comma-separated globs of tracepoint names whose counting probe to turn on",
        default: "none",
        expected: GLOBS,
    },
    Var {
        name: "PROFPOINT_CLOCK",
        values: "tsc or monotonic",
        default: "tsc where invariant",
        expected: "tsc or monotonic",
    },
    Var {
        name: "PROFPOINT_HEATMAP",
        values: "1 or cpu (CPU-time sampling), wall (wall-clock sampling), 0: start the heatmap \
                 sampler (feature heatmap)",
        default: "off",
        expected: "1 or cpu (CPU-time sampling), wall (wall-clock sampling), or 0 (off)",
    },
    Var {
        name: "PROFPOINT_HZ",
        values: "the heatmap's sampling rate, Hz",
        default: "1000",
        expected: "a sampling rate in Hz between 1 and 100000",
    },
    Var {
        name: "PROFPOINT_SHIFT",
        values: "the heatmap's bucket size, 1 << shift bytes",
        default: "4",
        expected: "a bucket shift between 0 and 24 (bucket = 1 << shift bytes)",
    },
    Var {
        name: "PROFPOINT_HEATMAP_SOURCE",
        values: "auto, perf, setitimer or tgkill",
        default: "auto",
        expected: "auto, perf (a task-clock event per thread), setitimer, or tgkill (a watcher \
                   thread signals threads by their CPU clocks)",
    },
    Var {
        name: "PROFPOINT_STACKS",
        values: "the heatmap's call stacks: frames per sample (1 to 128), or off for flat samples",
        default: "64 on x86_64 Linux, off elsewhere",
        expected: "a stack depth from 1 to 128 frames, or off (flat samples)",
    },
    Var {
        name: "PROFPOINT_HEATMAP_TOP",
        values: "rows of the heatmap section",
        default: "20",
        expected: "a number of rows from 1 to 100000",
    },
    Var {
        name: "PROFPOINT_HEATMAP_EXCLUDE",
        values: "comma-separated globs of function names the heatmap section leaves out",
        default: "none",
        expected: GLOBS,
    },
    Var {
        name: "PROFPOINT_PMU",
        values: "1 or hardware: per-function hardware metrics (heatmap::pmu) in the exit report; \
                 software: the same windows on the CPU clock with page faults, no PMU needed",
        default: "off",
        expected: "1 or hardware (per-function hardware metrics), software (the CPU clock and \
                   page faults, no PMU needed), or 0",
    },
    Var {
        name: "PROFPOINT_PMU_LONG",
        values: "the long period (cycles, or ns with PROFPOINT_PMU=software)",
        default: "the mode's",
        expected: "a long period between 1000000 and 2^40 (cycles, or ns with \
                   PROFPOINT_PMU=software)",
    },
    Var {
        name: "PROFPOINT_PMU_WINDOW",
        values: "the window (cycles, or ns with PROFPOINT_PMU=software)",
        default: "the mode's",
        expected: "a window in cycles between 100 and 1000000, or with PROFPOINT_PMU=software \
                   between 12000 and 1000000 ns (the kernel's software clock cannot fire sooner \
                   than 10 us, and windows are jittered by 10%)",
    },
    Var {
        name: "PROFPOINT_PMU_EVENTS",
        values: "the counted events, comma-separated (e.g. instructions,l1d-reads,l1d-read-misses)",
        default: "the mode's",
        expected: "up to 6 comma-separated events other than the leader, from: cycles, \
                   instructions, cache-references, cache-misses, branch-instructions, \
                   branch-misses, task-clock, page-faults, l1d-reads, l1d-read-misses",
    },
];

/// The error text of variable `name` (from [`VARS`]).
pub(crate) fn expected(name: &str) -> &'static str {
    VARS.iter()
        .find(|v| v.name == name)
        .map_or("a valid value", |v| v.expected)
}
