//! The parsers, the table, and README's list of variables against the table.

use super::*;

#[test]
fn sample_values() {
    assert_eq!(parse_sample("16"), Ok(vec![("*".into(), 16)]));
    assert_eq!(
        parse_sample("db::*=8, http::*=2"),
        Ok(vec![("db::*".into(), 8), ("http::*".into(), 2)])
    );
    assert!(parse_sample("0").is_err());
    assert_eq!(
        parse_sample("hot::*=count,db::*=4"),
        Ok(vec![("hot::*".into(), 0), ("db::*".into(), 4)])
    );
    assert!(parse_sample("abc").is_err());
    assert_eq!(
        parse_sample("C<'_, _>::encode=count,db::*=4"),
        Ok(vec![("C<'_, _>::encode".into(), 0), ("db::*".into(), 4)])
    );
    assert!(parse_sample("=4").is_err());
}

#[test]
fn budget_values() {
    let b = |percent, bursts| BudgetSetting { percent, bursts };
    assert_eq!(parse_budget("2%").unwrap(), b(Some(2.0), false));
    assert_eq!(parse_budget(" 0.5 ").unwrap(), b(Some(0.5), false));
    assert_eq!(parse_budget("100%").unwrap(), b(Some(100.0), false));
    assert_eq!(parse_budget("off").unwrap(), b(None, false));
    assert_eq!(parse_budget("0").unwrap(), b(None, false));
    assert_eq!(parse_budget("2%,bursts").unwrap(), b(Some(2.0), true));
    assert_eq!(parse_budget(" 0.5 , bursts ").unwrap(), b(Some(0.5), true));
    assert_eq!(parse_budget("bursts").unwrap(), b(Some(2.0), true));
    let e = parse_budget("off,bursts").unwrap_err();
    assert!(e.expected.contains("bursts only with a budget"), "{e:?}");
    for bad in [
        "",
        "-1%",
        "101",
        "two",
        "2%%",
        "nan",
        "2%,burst",
        "2%,bursts,bursts",
        "2%,3%",
        "bursts,2%",
        "2%,",
    ] {
        let e = parse_budget(bad).unwrap_err();
        assert_eq!(e.var, "PROFPOINT_BUDGET");
        assert_eq!(e.value, bad);
    }
}

#[test]
fn every_values() {
    use std::time::Duration;
    assert_eq!(parse_every("60s").unwrap(), Duration::from_secs(60));
    assert_eq!(parse_every(" 500ms ").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_every("1.5s").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_every("5m").unwrap(), Duration::from_secs(300));
    assert_eq!(parse_every("1h").unwrap(), Duration::from_secs(3600));
    for bad in [
        "", "60", "5ms", "0s", "-1s", "1d", "s", "nan s", "31h0", "800h",
    ] {
        let e = parse_every(bad).unwrap_err();
        assert_eq!(e.var, "PROFPOINT_REPORT_EVERY");
        assert_eq!(e.value, bad);
    }
}

#[test]
fn globs_and_flags() {
    assert_eq!(
        parse_globs("PROFPOINT_ENABLE", "a::*, b"),
        Ok(vec!["a::*".into(), "b".into()])
    );
    assert!(parse_globs("PROFPOINT_ENABLE", " , ").is_err());
    // Commas inside a name's brackets are the name's (base64's points carry them).
    assert_eq!(
        parse_globs(
            "PROFPOINT_ENABLE",
            "<base64::display::Base64Display<'_, '_, _> as core::fmt::Display>::fmt, x::<(u8, u16)>::f,a::[u8; 2]"
        ),
        Ok(vec![
            "<base64::display::Base64Display<'_, '_, _> as core::fmt::Display>::fmt".into(),
            "x::<(u8, u16)>::f".into(),
            "a::[u8; 2]".into(),
        ])
    );
    // `->` closes no bracket; an unbalanced `>` does not hide the commas after it.
    assert_eq!(
        parse_globs("PROFPOINT_DISABLE", "f::<fn(u8) -> u8, u16>::g,h> ,i"),
        Ok(vec![
            "f::<fn(u8) -> u8, u16>::g".into(),
            "h>".into(),
            "i".into()
        ])
    );
    // An open `<`, `(` or `[` would take the rest of the list as one glob: refused, naming
    // what was expected, rather than losing the globs after it. With no comma after it, it
    // takes nothing: a glob of its own.
    assert_eq!(
        parse_globs("PROFPOINT_DISABLE", "a::<u8, u16>::f, g["),
        Ok(vec!["a::<u8, u16>::f".into(), "g[".into()])
    );
    for bad in ["f::<u8, g", "a, h(, i", "x::[u8, y", "a::<u8, u16>::f[, g"] {
        let e = parse_globs("PROFPOINT_DISABLE", bad).unwrap_err();
        assert_eq!((e.var, e.value.as_str()), ("PROFPOINT_DISABLE", bad));
        assert!(e.to_string().contains("is closed"), "{e}");
        let e = parse_sample(&format!("{bad}=4")).unwrap_err();
        assert!(e.to_string().contains("is closed"), "{e}");
    }
    assert_eq!(parse_bool("X", "1"), Ok(true));
    assert!(parse_bool("X", "maybe").is_err());
    assert_eq!(parse_clock("monotonic"), Ok(true));
    assert!(parse_clock("hpet").is_err());
}

// The samplers' variables (moved from the heatmap crate, which reads none).
#[cfg(feature = "heatmap")]
mod samplers {
    use super::super::{heatmap_config, pmu_config};
    use heatmap::pmu::Event;
    use heatmap::{Mode, Source};

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(pk, _)| pk == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_source_comes_from_the_environment_or_a_clear_error() {
        let c = heatmap_config(env(&[
            ("PROFPOINT_HEATMAP", "1"),
            ("PROFPOINT_HEATMAP_SOURCE", "tgkill"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(c.get_source(), Source::Tgkill);
        let e = heatmap_config(env(&[("PROFPOINT_HEATMAP_SOURCE", "timer")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"PROFPOINT_HEATMAP_SOURCE="timer": expected auto, perf (a task-clock event per thread), setitimer, or tgkill (a watcher thread signals threads by their CPU clocks)"#
        );
    }

    #[test]
    fn stacks_are_on_by_default_where_available_and_read_or_refused() {
        let depth = |pairs: &[(&str, &str)]| {
            let mut all = vec![("PROFPOINT_HEATMAP", "1")];
            all.extend_from_slice(pairs);
            heatmap_config(env(&all)).map(|c| c.unwrap().get_stacks())
        };
        let default = heatmap::stacks::AVAILABLE.then_some(heatmap::stacks::DEFAULT_DEPTH);
        assert_eq!(depth(&[]), Ok(default));
        assert_eq!(depth(&[("PROFPOINT_STACKS", "")]), Ok(default));
        assert_eq!(depth(&[("PROFPOINT_STACKS", "off")]), Ok(None));
        assert_eq!(depth(&[("PROFPOINT_STACKS", "0")]), Ok(None));
        assert_eq!(depth(&[("PROFPOINT_STACKS", " 32 ")]), Ok(Some(32)));
        assert_eq!(depth(&[("PROFPOINT_STACKS", "128")]), Ok(Some(128)));
        for bad in ["129", "-1", "deep", "1.5"] {
            let e = depth(&[("PROFPOINT_STACKS", bad)]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "PROFPOINT_STACKS={bad:?}: expected a stack depth from 1 to 128 frames, or off \
                     (flat samples)"
                )
            );
        }
    }

    #[test]
    fn not_requested_is_none() {
        assert_eq!(heatmap_config(env(&[])), Ok(None));
        assert_eq!(heatmap_config(env(&[("PROFPOINT_HEATMAP", "0")])), Ok(None));
        assert_eq!(
            heatmap_config(env(&[("PROFPOINT_HEATMAP", ""), ("PROFPOINT_HZ", "10")])),
            Ok(None)
        );
    }

    #[test]
    fn values_are_read() {
        let c = heatmap_config(env(&[
            ("PROFPOINT_HEATMAP", "1"),
            ("PROFPOINT_HZ", "10000"),
            ("PROFPOINT_SHIFT", "6"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (c.get_hz(), c.get_shift(), c.get_mode()),
            (10000, 6, Mode::Cpu)
        );
        let c = heatmap_config(env(&[("PROFPOINT_HEATMAP", "WALL")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.get_hz(), c.get_shift(), c.get_mode()),
            (1000, 4, Mode::Wall)
        );
    }

    #[test]
    fn bad_values_name_variable_value_and_expectation() {
        let e = heatmap_config(env(&[("PROFPOINT_HEATMAP", "yes")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"PROFPOINT_HEATMAP="yes": expected 1 or cpu (CPU-time sampling), wall (wall-clock sampling), or 0 (off)"#
        );
        for bad in ["abc", "0", "100001", "-5", ""] {
            let e = heatmap_config(env(&[("PROFPOINT_HZ", bad)])).unwrap_err();
            assert_eq!(e.var, "PROFPOINT_HZ");
            assert_eq!(
                e.to_string(),
                format!(
                    "PROFPOINT_HZ={bad:?}: expected a sampling rate in Hz between 1 and 100000"
                )
            );
        }
        let e = heatmap_config(env(&[("PROFPOINT_SHIFT", "25")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"PROFPOINT_SHIFT="25": expected a bucket shift between 0 and 24 (bucket = 1 << shift bytes)"#
        );
    }

    #[test]
    fn pmu_events_come_from_the_environment_or_a_clear_error() {
        let env = |events: &'static str| {
            move |k: &str| match k {
                "PROFPOINT_PMU" => Some("1".to_string()),
                "PROFPOINT_PMU_EVENTS" => Some(events.to_string()),
                _ => None,
            }
        };
        let c = pmu_config(env("instructions, l1d-reads,l1d-read-misses"))
            .unwrap()
            .unwrap();
        assert_eq!(
            c.events,
            [Event::Instructions, Event::L1dReads, Event::L1dReadMisses]
        );
        for bad in [
            "",
            "instructions,,",
            "cycles",
            "l1-misses",
            "instructions,instructions,instructions,instructions,instructions,instructions,instructions",
        ] {
            let e = pmu_config(env(bad)).unwrap_err().to_string();
            // The longest value is shown cut (`crate::env::shown`).
            let shown = crate::env::shown(bad, crate::env::SHOWN_MAX);
            assert!(
                e.starts_with(&format!(
                    "PROFPOINT_PMU_EVENTS=\"{shown}\": expected up to 6"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn pmu_errors_name_the_value() {
        let env = |k: &str| match k {
            "PROFPOINT_PMU" => Some("1".to_string()),
            "PROFPOINT_PMU_WINDOW" => Some("7".to_string()),
            _ => None,
        };
        let e = pmu_config(env).unwrap_err();
        assert!(
            e.to_string().starts_with(
                r#"PROFPOINT_PMU_WINDOW="7": expected a window in cycles between 100 and 1000000"#
            ),
            "{e}"
        );
        let on = |k: &str| (k == "PROFPOINT_PMU").then(|| "1".to_string());
        assert!(pmu_config(on).unwrap().is_some());
        let env = |k: &str| match k {
            "PROFPOINT_PMU" => Some("software".to_string()),
            "PROFPOINT_PMU_WINDOW" => Some("500".to_string()),
            _ => None,
        };
        let e = pmu_config(env).unwrap_err().to_string();
        assert!(e.contains("PROFPOINT_PMU_WINDOW=\"500\""), "{e}");
        assert!(e.contains("10 us"), "{e}");
        let bad = |k: &str| (k == "PROFPOINT_PMU").then(|| "sw".to_string());
        let e = pmu_config(bad).unwrap_err().to_string();
        assert!(e.contains("\"sw\"") && e.contains("software"), "{e}");
    }
}

/// The rows of README's "Configure" table: each `PROFPOINT_*` variable's cells (name, values,
/// default, what it does), the name without its backticks.
fn readme_variable_rows(readme: &str) -> Vec<Vec<&str>> {
    readme
        .lines()
        .filter(|l| l.starts_with("| `PROFPOINT_"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`'))
                .collect()
        })
        .collect()
}

/// README's "Configure" table has one row per variable of the table, with its default, and
/// README names no other variable: a variable added to one and not the other fails here.
#[test]
fn readme_lists_every_variable_of_the_table() {
    let readme = include_str!("../../README.md");
    let rows = readme_variable_rows(readme);
    for row in &rows {
        assert_eq!(
            row.len(),
            4,
            "README.md's row of {}: name, values, default, what",
            row[0]
        );
        let var = VARS.iter().find(|v| v.name == row[0]);
        let var = var.unwrap_or_else(|| panic!("README.md's row {} is not in env::VARS", row[0]));
        assert_eq!(
            row[2], var.default,
            "README.md's default of {} vs env::VARS",
            row[0]
        );
        assert!(
            !row[1].is_empty() && !row[3].is_empty(),
            "README.md's row of {}",
            row[0]
        );
    }
    let mut in_rows: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    in_rows.sort_unstable();
    let mut in_table: Vec<&str> = VARS.iter().map(|v| v.name).collect();
    in_table.sort_unstable();
    assert_eq!(
        in_rows, in_table,
        "README.md's rows vs env::VARS: one row per variable"
    );
    // Every variable README names anywhere is one of them.
    for (at, _) in readme.match_indices("PROFPOINT_") {
        let rest = &readme[at..];
        let end = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        let name = rest[..end].trim_end_matches('_');
        // `PROFPOINT_*`, the family, is not a variable.
        if name != "PROFPOINT" {
            assert!(
                in_table.contains(&name),
                "README.md names {name}, not in env::VARS"
            );
        }
    }
}

/// Every variable the sources name is in the table (so `var` never reads one the table does
/// not describe), and every entry has its texts.
#[test]
fn the_sources_name_only_variables_of_the_table() {
    for v in VARS {
        assert!(!v.values.is_empty() && !v.default.is_empty(), "{}", v.name);
        assert!(!expected(v.name).is_empty(), "{}", v.name);
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (at, _) in text.match_indices("\"PROFPOINT_") {
                let name = &text[at + 1..];
                let end = name
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(name.len());
                let name = &name[..end];
                if name == "PROFPOINT_" {
                    // This test's own pattern.
                    continue;
                }
                assert!(
                    VARS.iter().any(|v| v.name == name),
                    "{} names {name}, which is not in env::VARS",
                    p.display()
                );
            }
        }
    }
}

/// A value as warnings show it: control, invisible and bidirectional characters escaped,
/// cut to the length asked with "...", untouched when short and plain.
#[test]
fn values_are_shown_escaped_and_cut() {
    use crate::env::shown;
    assert_eq!(shown("db::*", 64), "db::*");
    assert_eq!(
        shown("a\nb\u{1b}[2J\r\u{7}", 64),
        "a\\nb\\u{1b}[2J\\r\\u{7}"
    );
    assert_eq!(shown("\u{202e}x\"\\", 64), "\\u{202e}x\\\"\\\\");
    assert_eq!(shown("é::x", 64), "é::x");
    let long = "x".repeat(100);
    assert_eq!(shown(&long, 10), "xxxxxxx...");
    assert_eq!(shown(&long[..10], 10), "xxxxxxxxxx");
    // An escape is never cut in two.
    assert_eq!(shown("xxxxxx\u{1b}yyyy", 10), "xxxxxx...");
}
