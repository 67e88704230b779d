//! The samplers' variables: `PROFPOINT_HEATMAP` (`PROFPOINT_HZ`, `PROFPOINT_SHIFT`,
//! `PROFPOINT_HEATMAP_SOURCE`, `PROFPOINT_STACKS`) into a `heatmap::Config`, `PROFPOINT_PMU` (`PROFPOINT_PMU_LONG`,
//! `PROFPOINT_PMU_WINDOW`, `PROFPOINT_PMU_EVENTS`) into a `heatmap::pmu::PmuConfig`. The
//! `heatmap` crate takes those values and reads no variable itself.

use super::{EnvError, expected};
use heatmap::pmu::{Event, MAX_MEMBERS, MIN_LONG_PERIOD, MIN_SOFTWARE_WINDOW, PmuConfig};
use heatmap::{Config, MAX_HZ, MAX_SHIFT, Mode, Source};

/// The error for `var`'s `value`, with the table's text.
fn bad(var: &'static str, value: &str) -> EnvError {
    EnvError {
        var,
        value: value.to_owned(),
        expected: expected(var),
    }
}

/// `var` through `get`, as a number in `lo..=hi` (`None` when unset).
fn number(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    lo: u64,
    hi: u64,
) -> Result<Option<u64>, EnvError> {
    match get(var) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(bad(var, &v)),
        },
    }
}

/// The heatmap's configuration from `PROFPOINT_HEATMAP` and its companions, read through
/// `get`; `Ok(None)` when no heatmap was asked for. The rate, shift and source are checked even
/// then, so a typo never goes unnoticed.
pub(crate) fn heatmap_config(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<Config>, EnvError> {
    let mut config = Config::new();
    if let Some(hz) = number(&get, "PROFPOINT_HZ", 1, MAX_HZ.into())? {
        config = config.hz(hz as u32);
    }
    if let Some(shift) = number(&get, "PROFPOINT_SHIFT", 0, MAX_SHIFT.into())? {
        config = config.shift(shift as u32);
    }
    if let Some(v) = get("PROFPOINT_HEATMAP_SOURCE") {
        config = config.source(match v.trim() {
            "auto" => Source::Auto,
            "perf" => Source::PerfTaskClock,
            "setitimer" => Source::Setitimer,
            "tgkill" => Source::Tgkill,
            _ => return Err(bad("PROFPOINT_HEATMAP_SOURCE", &v)),
        });
    }
    config = match stacks(&get)? {
        Some(depth) => config.stacks(depth),
        None => config.no_stacks(),
    };
    let Some(v) = get("PROFPOINT_HEATMAP") else {
        return Ok(None);
    };
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "0" => Ok(None),
        "1" | "cpu" => Ok(Some(config.mode(Mode::Cpu))),
        "wall" => Ok(Some(config.mode(Mode::Wall))),
        _ => Err(bad("PROFPOINT_HEATMAP", &v)),
    }
}

/// `PROFPOINT_STACKS` through `get`: the stack depth, or `None` for flat samples. Unset, stacks
/// are on at the default depth where the sampler can take them (x86_64 Linux) and off
/// elsewhere, so that the default never asks for what the platform cannot give; a depth set
/// on another platform reaches the sampler, whose profile then says why it has none.
pub(crate) fn stacks(get: &impl Fn(&str) -> Option<String>) -> Result<Option<u32>, EnvError> {
    match get("PROFPOINT_STACKS") {
        None => Ok(heatmap::stacks::AVAILABLE.then_some(heatmap::stacks::DEFAULT_DEPTH)),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "off" | "0" => Ok(None),
            "" => Ok(heatmap::stacks::AVAILABLE.then_some(heatmap::stacks::DEFAULT_DEPTH)),
            n => match n.parse::<u32>() {
                Ok(d) if (1..=heatmap::stacks::MAX_DEPTH).contains(&d) => Ok(Some(d)),
                _ => Err(bad("PROFPOINT_STACKS", &v)),
            },
        },
    }
}

/// The per-function metrics' configuration from `PROFPOINT_PMU` and its companions, read
/// through `get`; `Ok(None)` when not asked for.
pub(crate) fn pmu_config(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<PmuConfig>, EnvError> {
    let mut c = match get("PROFPOINT_PMU").as_deref().map(str::trim) {
        None | Some("") | Some("0") => return Ok(None),
        Some("1") | Some("hardware") => PmuConfig::default(),
        Some("software") => PmuConfig::software(),
        Some(other) => return Err(bad("PROFPOINT_PMU", other)),
    };
    if let Some(n) = number(&get, "PROFPOINT_PMU_LONG", MIN_LONG_PERIOD, 1 << 40)? {
        c.long_period = n;
    }
    // The software clock fires no sooner than MIN_SOFTWARE_WINDOW, and windows are jittered
    // by 10%: 12 us is the shortest window asked for that never goes below it.
    let lo = if c.clock == Event::TaskClock {
        MIN_SOFTWARE_WINDOW * 6 / 5
    } else {
        100
    };
    if let Some(n) = number(&get, "PROFPOINT_PMU_WINDOW", lo, 1_000_000)? {
        c.window = n;
    }
    if let Some(v) = get("PROFPOINT_PMU_EVENTS") {
        let events: Vec<Event> = v
            .split(',')
            .map(|e| e.trim().parse::<Event>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad("PROFPOINT_PMU_EVENTS", &v))?;
        if events.is_empty() || events.len() > MAX_MEMBERS || events.contains(&c.clock) {
            return Err(bad("PROFPOINT_PMU_EVENTS", &v));
        }
        c.events = events;
    }
    Ok(Some(c))
}
