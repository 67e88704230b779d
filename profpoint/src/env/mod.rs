//! The `PROFPOINT_*` environment variables, read once at start-up.
//!
//! Every variable is optional. A bad value never stops the program: it gets one line on stderr
//! naming the variable, the value and what was expected, and the default is used. So do, at
//! start-up, a glob that matches no point (or tracepoint) and a report file whose folder is
//! missing or not writable (see `exit.rs`).
//!
//! Every value a warning shows goes through `shown`: control characters (and the invisible
//! and bidirectional format characters) escaped, so no value moves the terminal's cursor or
//! splits a line, and cut with "..." so that a line stays within about `LINE_MAX` characters
//! whatever the value's length.
//!
//! Every variable is in one table, [`VARS`] (`table.rs`): its name, the values it accepts,
//! its default and the text its error gives as expected. The parsers take their error texts
//! from it, `var` reads only the variables it lists, and a test keeps README's list of
//! variables and the table equal. The samplers' variables (`PROFPOINT_HEATMAP*`,
//! `PROFPOINT_HZ`, `PROFPOINT_SHIFT`, `PROFPOINT_STACKS`, `PROFPOINT_PMU*`) are read here too (`samplers.rs`): the
//! `heatmap` crate takes a `Config` value and knows no variable of profpoint's.

#[cfg(feature = "heatmap")]
mod samplers;
mod table;

#[cfg(all(feature = "heatmap", feature = "serve"))]
pub(crate) use samplers::stacks;
#[cfg(feature = "heatmap")]
pub(crate) use samplers::{heatmap_config, pmu_config};
pub(crate) use table::expected;
pub use table::{VARS, Var};

/// A rejected environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvError {
    /// The variable's name.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What was expected instead.
    pub expected: &'static str,
}

impl std::fmt::Display for EnvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}=\"{}\": expected {}",
            self.var,
            shown(&self.value, SHOWN_MAX),
            self.expected
        )
    }
}

/// The length a warning line is kept within, in characters, when its fixed text leaves room
/// (the value is cut to fit, down to [`SHOWN_MIN`] characters).
pub(crate) const LINE_MAX: usize = 200;
/// The most of a value shown where the line's length is not worked out.
pub(crate) const SHOWN_MAX: usize = 64;
/// The least of a value shown, however long the rest of its line.
pub(crate) const SHOWN_MIN: usize = 24;

/// `value` as a warning shows it: control characters escaped as Rust writes them (`\n`,
/// `\u{1b}`), and so the invisible and bidirectional format characters, `\` and `"`: no value
/// moves the terminal's cursor, splits a warning over lines or hides part of it. Cut to `max`
/// characters (escapes included) with "..." when longer.
pub(crate) fn shown(value: &str, max: usize) -> String {
    let mut out = String::new();
    let mut len = 0;
    // Where the text may be cut to leave room for "...".
    let mut cut = 0;
    for c in value.chars() {
        let escape = c.is_control()
            || matches!(c, '\\' | '"' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}' | '\u{feff}');
        let before = out.len();
        if escape {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
        len += out[before..].chars().count();
        if len > max {
            out.truncate(cut);
            out.push_str("...");
            return out;
        }
        if len + 3 <= max {
            cut = out.len();
        }
    }
    out
}

/// The room for a value in a line whose other text is `fixed` characters long.
pub(crate) fn room(fixed: usize) -> usize {
    LINE_MAX.saturating_sub(fixed).max(SHOWN_MIN)
}

impl std::error::Error for EnvError {}

/// What a glob list with a bracket left open before a comma was expected to be (see
/// [`split_names`]).
const UNCLOSED: &str = "comma-separated globs whose every <, ( and [ is closed before the next \
    comma (a comma inside them is part of a name)";

/// The items of a comma-separated list of point-name globs: a comma inside `<...>`, `(...)`
/// or `[...]` is part of a name, not a separator (Rust names carry them:
/// `<Display<'_, '_, _> as core::fmt::Display>::fmt`, which split at every comma read as three
/// globs matching nothing, so such a point could not be named exactly). The `>` of `->`
/// closes nothing. `None` when a bracket left open has a comma after it: the rest of the list
/// would be one glob matching nothing, and the globs after it lost (an open bracket with no
/// comma after it, `f[`, is a glob of its own, told later that `[` matches itself).
pub(crate) fn split_names(value: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    // Where each bracket still open began.
    let mut open = Vec::new();
    let (mut from, mut prev) = (0, '\0');
    for (i, ch) in value.char_indices() {
        match ch {
            '<' | '(' | '[' => open.push(i),
            '>' if prev == '-' => {}
            '>' | ')' | ']' => {
                open.pop();
            }
            ',' if open.is_empty() => {
                out.push(&value[from..i]);
                from = i + 1;
            }
            _ => {}
        }
        prev = ch;
    }
    out.push(&value[from..]);
    match open.first() {
        Some(&at) if value[at..].contains(',') => None,
        _ => Some(out),
    }
}

/// Parses a comma-separated glob list (`PROFPOINT_ENABLE`, `PROFPOINT_DISABLE`): see
/// [`split_names`].
pub(crate) fn parse_globs(var: &'static str, value: &str) -> Result<Vec<String>, EnvError> {
    let Some(items) = split_names(value) else {
        return Err(EnvError {
            var,
            value: value.to_string(),
            expected: UNCLOSED,
        });
    };
    let globs: Vec<String> = items
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if globs.is_empty() {
        return Err(EnvError {
            var,
            value: value.to_string(),
            expected: expected(var),
        });
    }
    Ok(globs)
}

/// Parses `PROFPOINT_SAMPLE`: `(glob, every)` pairs.
/// `N` is 0 for `count`.
pub(crate) fn parse_sample(value: &str) -> Result<Vec<(String, u32)>, EnvError> {
    let err = || EnvError {
        var: "PROFPOINT_SAMPLE",
        value: value.to_string(),
        expected: expected("PROFPOINT_SAMPLE"),
    };
    // `count` is returned as 0.
    let num = |s: &str| match s.trim().parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ if s.trim() == "count" => Ok(0),
        _ => Err(err()),
    };
    if !value.contains('=') {
        return Ok(vec![("*".to_string(), num(value)?)]);
    }
    let Some(items) = split_names(value) else {
        return Err(EnvError {
            expected: UNCLOSED,
            ..err()
        });
    };
    items
        .into_iter()
        .map(|item| match item.rsplit_once('=') {
            Some((g, n)) if !g.trim().is_empty() => Ok((g.trim().to_string(), num(n)?)),
            _ => Err(err()),
        })
        .collect()
}

/// Parses a boolean flag: `0`/`1` (also `false`/`true`, `no`/`yes`, `off`/`on`).
pub(crate) fn parse_bool(var: &'static str, value: &str) -> Result<bool, EnvError> {
    match value.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(EnvError {
            var,
            value: value.to_string(),
            expected: expected(var),
        }),
    }
}

/// The default overhead budget, in parts per million of the process's CPU time (2%; the
/// budget's module docs say why).
pub(crate) const DEFAULT_BUDGET_PPM: u32 = 20_000;

/// The overhead budget a user asked for (`PROFPOINT_BUDGET`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BudgetSetting {
    /// Percent of CPU time, `None` for no budget.
    pub percent: Option<f64>,
    /// Whether bursts are allowed (the `bursts` mode): without them counting is the floor.
    pub bursts: bool,
}

/// Parses `PROFPOINT_BUDGET`: a percentage of CPU time (`2%`, `0.5`, `10%`), or `off` (also
/// `0`, `none`) for no budget; then, after a comma, the mode `bursts` (`2%,bursts`; `bursts`
/// alone keeps the default 2%). `bursts` with no budget is refused.
pub(crate) fn parse_budget(value: &str) -> Result<BudgetSetting, EnvError> {
    let bad = || EnvError {
        var: "PROFPOINT_BUDGET",
        value: value.to_string(),
        expected: expected("PROFPOINT_BUDGET"),
    };
    let mut percent = None;
    let mut bursts = false;
    for (i, part) in value.split(',').map(str::trim).enumerate() {
        if part == "bursts" && !bursts {
            bursts = true;
            continue;
        }
        if i > 0 || part == "bursts" {
            return Err(bad());
        }
        percent = Some(if matches!(part, "off" | "none" | "0" | "0%") {
            None
        } else {
            match part.strip_suffix('%').unwrap_or(part).trim().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => Some(p),
                _ => return Err(bad()),
            }
        });
    }
    let percent = percent.unwrap_or(Some(f64::from(DEFAULT_BUDGET_PPM) / 10_000.0));
    if bursts && percent.is_none() {
        return Err(EnvError {
            var: "PROFPOINT_BUDGET",
            value: value.to_string(),
            expected: "bursts only with a budget to keep (e.g. 2%,bursts): with the budget off \
                       every call is timed",
        });
    }
    Ok(BudgetSetting { percent, bursts })
}

/// Parses `PROFPOINT_REPORT_EVERY`: a duration with its unit, `500ms`, `10s`, `5m` or `1h`
/// (fractions allowed: `1.5s`), from 10 ms to 30 days.
pub(crate) fn parse_every(value: &str) -> Result<std::time::Duration, EnvError> {
    let bad = || EnvError {
        var: "PROFPOINT_REPORT_EVERY",
        value: value.to_string(),
        expected: expected("PROFPOINT_REPORT_EVERY"),
    };
    let v = value.trim();
    let (num, unit) = match v.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => v.split_at(at),
        None => return Err(bad()),
    };
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    match num.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && (0.01..=30.0 * 86_400.0).contains(&(n * scale)) => {
            Ok(std::time::Duration::from_secs_f64(n * scale))
        }
        _ => Err(bad()),
    }
}

/// Parses `PROFPOINT_MAX_SLOT_MB`: the cap on per-thread point slots, MiB (1 to 1,048,576).
pub(crate) fn parse_max_slot_mb(value: &str) -> Result<u64, EnvError> {
    match value.trim().parse::<u64>() {
        Ok(mb) if (1..=1 << 20).contains(&mb) => Ok(mb),
        _ => Err(EnvError {
            var: "PROFPOINT_MAX_SLOT_MB",
            value: value.to_string(),
            expected: expected("PROFPOINT_MAX_SLOT_MB"),
        }),
    }
}

/// Parses `PROFPOINT_CLOCK`: `true` means "use the monotonic clock".
pub(crate) fn parse_clock(value: &str) -> Result<bool, EnvError> {
    match value.trim() {
        // `cntvct`: aarch64's raw counter, what `tsc` chooses there too.
        "tsc" | "cntvct" => Ok(false),
        "monotonic" => Ok(true),
        _ => Err(EnvError {
            var: "PROFPOINT_CLOCK",
            value: value.to_string(),
            expected: expected("PROFPOINT_CLOCK"),
        }),
    }
}

/// Prints one warning line for a rejected variable: its value cut to keep the line within
/// [`LINE_MAX`] characters where the rest of the line leaves room.
pub(crate) fn warn(e: &EnvError, fallback: &str) {
    let fixed = format!(
        "profpoint: {}=\"\": expected {}; using {fallback}",
        e.var, e.expected
    );
    let value = shown(&e.value, room(fixed.chars().count()));
    crate::diag::warn_line!(
        "profpoint: {}=\"{value}\": expected {}; using {fallback}",
        e.var,
        e.expected
    );
}

/// Reads a variable as UTF-8, warning (and ignoring it) when it is not.
pub(crate) fn var(name: &str) -> Option<String> {
    debug_assert!(
        VARS.iter().any(|v| v.name == name),
        "{name} is not in env::VARS"
    );
    match std::env::var(name) {
        Ok(v) => Some(v),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(v)) => {
            // Its bytes as Rust writes them (`"\xFF"`): escaped already; cut here.
            let text = format!("{v:?}");
            let inner = text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(&text);
            let cut = if inner.chars().count() > SHOWN_MAX {
                let at = inner
                    .char_indices()
                    .nth(SHOWN_MAX - 3)
                    .map_or(inner.len(), |(i, _)| i);
                format!("{}...", &inner[..at])
            } else {
                inner.to_string()
            };
            crate::diag::warn_line!(
                "profpoint: {name}=\"{cut}\": expected UTF-8 text; ignoring it"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests;
