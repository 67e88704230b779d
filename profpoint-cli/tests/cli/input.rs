//! Input a stranger controls: a FIFO, a device or a huge file is refused at once, bad
//! arguments and broken reports get one clear line, and fuzzed reports never crash the
//! command.

use super::*;

/// Every kind of bad input: one line naming the file and what is wrong (the field where there
/// is one), exit status 2, no panic; bad arguments get clap's message in one line.
/// Input that is not a regular file, or larger than the limit, is one line and exit 2 at once,
/// whatever it would give if read (`/dev/zero` never ends, a FIFO without a writer waits
/// forever, a sparse file reads as a gigabyte of zeros): refused before reading.
#[cfg(unix)]
#[test]
fn endless_waiting_or_oversized_input_is_refused_at_once() {
    let d = dir();
    let fifo = d.join("dump.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let fifo = fifo.to_str().unwrap().to_string();
    let sparse = d.join("sparse.json");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let sparse = sparse.to_str().unwrap().to_string();
    let small = common::write("small.json", &"x".repeat(2_000));
    let limit = 256u64 << 20;
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["report", "/dev/zero"],
            "/dev/zero: is a character device, not a regular file: expected a profpoint JSON \
             report file"
                .into(),
        ),
        (
            vec!["heatmap", "/dev/zero"],
            "/dev/zero: is a character device, not a regular file: expected a heatmap dump file"
                .into(),
        ),
        (
            vec!["report", &fifo],
            format!("{fifo}: is a FIFO, not a regular file: expected a profpoint JSON report file"),
        ),
        (
            vec!["heatmap", &fifo],
            format!("{fifo}: is a FIFO, not a regular file: expected a heatmap dump file"),
        ),
        (
            vec!["compare", &fifo, &sparse],
            format!("{fifo}: is a FIFO"),
        ),
        (
            vec!["report", &sparse],
            format!(
                "{sparse}: 1073741824 bytes or more, over the {limit}-byte input limit: expected \
                 a profpoint JSON report file (--max-input-size BYTES raises the limit)"
            ),
        ),
        (
            vec!["heatmap", &sparse],
            format!("{sparse}: 1073741824 bytes or more, over the {limit}-byte input limit"),
        ),
        (
            vec!["report", &small, "--max-input-size", "1000"],
            format!("{small}: 2000 bytes or more, over the 1000-byte input limit"),
        ),
    ];
    for (args, expected) in cases {
        let t = std::time::Instant::now();
        let (code, out, err) = profpoint(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("profpoint: "), "{err}");
        assert!(err.contains(&expected), "{args:?}: {err}");
        // Generous: it reads nothing, so it takes milliseconds; reading would take seconds
        // (the sparse gigabyte) or forever (the FIFO, /dev/zero).
        assert!(t.elapsed() < std::time::Duration::from_secs(10), "{args:?}");
    }
    // Raised, the same small file is read (and is not JSON).
    let (code, _, err) = profpoint(&["report", &small, "--max-input-size", "5000"]);
    assert_eq!(code, 2);
    assert!(err.contains(&format!("{small}: not JSON")), "{err}");
    common::clean();
}

#[test]
fn bad_input_gets_a_clear_error() {
    for i in 0..10 {
        measured(i);
    }
    let d = dir();
    let good = profpoint::snapshot().to_json();
    let file = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let truncated = file("truncated.json", &good[..good.len() / 2]);
    let corrupted = file("corrupted.json", &good.replacen("\"nr\": ", "\"nr\": x", 1));
    let mistyped = file(
        "mistyped.json",
        &good.replacen("\"nr\": ", "\"nr\": \"7\", \"x\": ", 1),
    );
    let other = file(
        "other.json",
        &good.replacen("profpoint.report", "heatmap.report", 1),
    );
    let newer = file(
        "newer.json",
        &good.replacen("\"version\": 3", "\"version\": 4", 1),
    );
    let empty = file("empty.json", "");
    let junk = file("junk.json", "not json");
    let array = file("array.json", "[1, 2]");
    let binary = d.join("binary.json");
    std::fs::write(&binary, [0x1f, 0x8b, 0xff, 0xfe, 0]).unwrap();
    let binary = binary.to_str().unwrap().to_string();
    let folder = d.to_str().unwrap().to_string();
    let good_file = good_path(&d, &good);
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["report", "/no/such/file.json"],
            "/no/such/file.json: cannot read: no such file or directory".into(),
        ),
        (
            vec!["report", &truncated],
            format!("{truncated}: truncated (the JSON ends inside the report)"),
        ),
        (
            vec!["report", &corrupted],
            format!("{corrupted}: not JSON: "),
        ),
        (
            vec!["report", &mistyped],
            format!(r#"{mistyped}: points[0].nr: expected u64, found string "7""#),
        ),
        (
            vec!["report", &other],
            format!(
                r#"{other}: schema: "heatmap.report" is not a profpoint report (expected "profpoint.report")"#
            ),
        ),
        (
            vec!["report", &newer],
            format!("{newer}: version: 4 is newer than this reader, which reads versions 1 to 3"),
        ),
        (
            vec!["report", &empty],
            format!("{empty}: empty: expected a profpoint JSON report"),
        ),
        (vec!["report", &junk], format!("{junk}: not JSON: ")),
        (
            vec!["report", &array],
            format!("{array}: not a profpoint report: expected a JSON object"),
        ),
        (
            vec!["report", &binary],
            format!("{binary}: not JSON: invalid UTF-8 at byte 1"),
        ),
        (
            vec!["report", &folder],
            format!("{folder}: is a directory: expected a profpoint JSON report file"),
        ),
        (
            vec!["compare", &newer, &truncated],
            format!("{newer}: version: 4 is newer"),
        ),
        (
            vec!["compare", &good_file, &mistyped],
            format!("{mistyped}: points[0].nr"),
        ),
        (vec!["compare", &junk], "expected two JSON reports".into()),
        (
            vec!["compare", "a", "b", "--threshold", "lots"],
            "invalid value 'lots' for '--threshold <PCT>': expected a percentage".into(),
        ),
        (
            vec!["report", "x", "--top"],
            "a value is required for '--top <N>'".into(),
        ),
        (
            vec!["report", "x", "--top=many"],
            "invalid value 'many' for '--top <N>'".into(),
        ),
        (
            vec!["report", "x", "--format", "html"],
            "invalid value 'html' for '--format <FORMAT>': expected one of table, json, csv, \
             pprof, prom, svg, folded, flame, points-folded, points-flame, pprof-stacks, \
             points-pprof"
                .into(),
        ),
        (
            vec!["report", "x", "--frobnicate"],
            "unexpected argument '--frobnicate' found".into(),
        ),
        (
            vec!["frobnicate"],
            "unrecognized subcommand 'frobnicate'".into(),
        ),
        (
            vec!["heatmap", &folder],
            format!("{folder}: is a directory: expected a heatmap dump file"),
        ),
        (vec!["heatmap", &junk], format!("{junk}: ")),
        (
            vec!["heatmap", "x", "--top", "0"],
            "invalid value '0' for '--top <N>': expected a positive number of rows".into(),
        ),
    ];
    for (args, expected) in cases {
        let (code, out, err) = profpoint(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.starts_with("profpoint: "), "{err}");
        assert!(err.contains(&expected), "{args:?}: {err}");
    }
    common::clean();
}

fn good_path(d: &std::path::Path, text: &str) -> String {
    let p = d.join("good.json");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// One mutation of a valid report's text: a value replaced by an extreme or a wrong type, a
/// field dropped, a byte flipped, the text cut short, a point repeated, a strange name.
fn mutate(text: &str, rng: &mut common::Rng) -> String {
    const VALUES: [&str; 12] = [
        "0",
        "1",
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "1e308",
        "0.5",
        "\"12\"",
        "null",
        "[]",
        "{}",
        "true",
    ];
    let mut s = text.to_string();
    match rng.below(6) {
        0 => {
            // Replace the value after a random key.
            let keys: Vec<usize> = s.match_indices("\":").map(|(i, _)| i + 2).collect();
            if let Some(&at) = keys.get(rng.below(keys.len())) {
                let end = s[at..].find([',', '}']).map_or(s.len(), |e| at + e);
                s.replace_range(at..end, VALUES[rng.below(VALUES.len())]);
            }
        }
        1 => {
            // Drop a "key":value pair.
            let keys: Vec<usize> = s.match_indices(",\"").map(|(i, _)| i).collect();
            if let Some(&at) = keys.get(rng.below(keys.len())) {
                let end = s[at + 1..].find([',', '}']).map_or(s.len(), |e| at + 1 + e);
                s.replace_range(at..end, "");
            }
        }
        2 => {
            // Replace one ASCII byte by another, so the text stays valid UTF-8.
            let ascii: Vec<usize> = (0..s.len())
                .filter(|&i| s.as_bytes()[i].is_ascii())
                .collect();
            if let Some(&i) = ascii.get(rng.below(ascii.len())) {
                let mut b = s.into_bytes();
                b[i] = b' ' + (rng.next() % 95) as u8;
                s = String::from_utf8(b).unwrap();
            }
        }
        3 => {
            let mut cut = rng.below(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
        4 => {
            // The same point twice.
            if let Some(a) = s.find("{\"name\"")
                && let Some(e) = s[a..].find('}')
            {
                let p = s[a..a + e + 1].to_string();
                s.insert_str(a + e + 1, &format!(",{p}"));
            }
        }
        _ => {
            let names = ["", "é\u{301}名前", "\\u0000", &"x".repeat(5000), "a\\nb"];
            s = s.replacen(
                "\"slow\"",
                &format!("\"{}\"", names[rng.below(names.len())]),
                1,
            );
        }
    }
    s
}

/// Fuzzed reports: whatever the bytes, the command answers with a table (exit 0 or 1) or one
/// clear error naming the file (exit 2), never a panic, and never prints NaN or infinity.
#[test]
fn fuzzed_reports_never_crash_the_command() {
    let d = dir();
    let base = synthetic(&[("slow", 1000, 0.05, 500), ("fast", 10, 0.1, 100_000)]);
    let base_path = d.join("fuzz-base.json");
    std::fs::write(&base_path, &base).unwrap();
    let mut rng = common::Rng(0x2545_f491_4f6c_dd1d);
    let (mut answered, mut refused) = (0, 0);
    for case in 0..300 {
        let mut text = base.clone();
        for _ in 0..1 + rng.below(3) {
            text = mutate(&text, &mut rng);
        }
        let path = d.join(format!("fuzz-{case}.json"));
        std::fs::write(&path, &text).unwrap();
        let p = path.to_str().unwrap();
        for args in [
            vec!["report", p],
            vec!["compare", base_path.to_str().unwrap(), p],
            vec!["compare", p, p, "--", base_path.to_str().unwrap(), p],
        ] {
            let (code, out, err) = profpoint(&args);
            let what = format!("case {case} {args:?}\ninput: {text}\nstdout: {out}\nstderr: {err}");
            assert!(!err.contains("panicked"), "{what}");
            assert!(matches!(code, 0..=2), "{what}");
            // compare's own figures are never NaN or infinite (a NaN in the file, `null` in a
            // float field, is the report's own figure, which `report` prints as it is).
            if args[0] == "compare" {
                let lower = out.to_lowercase();
                assert!(!lower.contains("nan") && !lower.contains("inf"), "{what}");
            }
            if code == 2 {
                assert!(err.starts_with("profpoint: "), "{what}");
                assert!(err.contains(&format!("fuzz-{case}.json")), "{what}");
                refused += 1;
            } else {
                answered += 1;
            }
        }
    }
    // Both outcomes were exercised: the fuzzing reached the tables, not only the parser.
    assert!(
        answered > 20 && refused > 20,
        "{answered} answered, {refused} refused"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// Its own errors with stderr on `/dev/full` (or a pipe whose reader has gone): still exit
/// status 2, not a panic's 101 (`eprintln!` panics when stderr fails).
#[cfg(target_os = "linux")]
#[test]
fn a_failing_stderr_keeps_the_exit_status() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = common::runner::target_command(env!("CARGO_BIN_EXE_profpoint"))
        .args(["report", "/nonexistent/run.json"])
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}

/// A report whose program name holds a terminal escape and a newline (anyone may write one):
/// compare's warning shows them escaped, on one line.
#[test]
fn a_report_s_own_text_cannot_write_control_characters_to_the_terminal() {
    let base = common::write(
        "esc-base.json",
        &common::report(r"base\u001b[2J\nFORGED", &[("p", vec![100; 50])]),
    );
    let new = common::write(
        "esc-new.json",
        &common::report("new", &[("p", vec![100; 50])]),
    );
    let (code, _out, err) = profpoint(&["compare", &base, &new]);
    assert_eq!(code, 0, "{err}");
    let warning = err
        .lines()
        .find(|l| l.contains("different programs"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(warning.contains("\\u{1b}[2J\\nFORGED"), "{warning}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(!err.lines().any(|l| l.starts_with("FORGED")), "{err}");
    common::clean();
}

/// A report holding a figure no run can produce (here a sampled child of the points tree
/// above its parent) is drawn as it is, with one line on stderr saying so and naming the
/// first such figure; a sound report gets no such line.
#[test]
fn an_impossible_figure_in_a_report_is_said() {
    use profpoint_report::{PointsTree, Report, TreeNode};
    let node = |parent, name: &str, total_ns| {
        let mut n = TreeNode::default();
        n.parent = parent;
        n.name = name.to_string();
        n.calls = 4;
        n.timed = 1;
        n.total_ns = total_ns;
        n.self_ns = Some(0);
        n.sampled = true;
        n.total_ci95_ns = 1_000;
        n
    };
    let mut r = Report::empty();
    let mut tree = PointsTree::default();
    tree.nodes = vec![
        node(None, "main", 5_000_000),
        node(Some(0), "parse", 3_000_000),
    ];
    r.tree = Some(tree.clone());
    let sound = common::write("sound.json", &r.to_json());
    let (code, _, err) = common::profpoint(&["report", &sound]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("impossible"), "{err}");
    tree.nodes[1].total_ns = 9_000_000;
    r.tree = Some(tree);
    let bad = common::write("impossible.json", &r.to_json());
    let (code, _, err) = common::profpoint(&["report", &bad]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("impossible")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("1 impossible figure") && lines[0].contains("tree path main"),
        "{err}"
    );
}
