//! `heatmap`: a readprofile-like report from a heatmap dump file.
//!
//! ```text
//! heatmap [--top N] [--by function|bucket] [--exclude GLOB]... [--json] DUMP
//! ```
//!
//! Symbols are read from the files recorded in the dump (the executable and its shared
//! objects), so run it on the machine that produced the dump, before those files are rebuilt
//! (a rebuilt file is detected by its build id and reported as a warning).
//!
//! Exit status: 0 on success, 2 for a usage error (the message names the bad argument and what
//! was expected), 1 when the dump cannot be read or is not a valid dump.

use std::process::ExitCode;

use heatmap::{By, Profile, ReportOptions};

const USAGE: &str =
    "usage: heatmap [--top N] [--by function|bucket] [--exclude GLOB]... [--json] DUMP

Prints the hottest functions (or buckets) of a heatmap dump, readprofile style.
  --top N          rows to print (default 20)
  --by KIND        function (default): one row per function; bucket: one row per bucket
  --exclude GLOB   leave out functions matching GLOB (* and ?), e.g. 'std::thread::park*';
                   may be repeated; excluded samples leave the total too
  --json           print the report as JSON instead of a table
  -h, --help       this text";

#[derive(Debug)]
struct Args {
    opts: ReportOptions,
    json: bool,
    path: String,
}

/// Parses the arguments; `Err` is the message for a usage error (`Ok(None)`: help printed).
fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut opts = ReportOptions::default();
    let mut json = false;
    let mut path = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--json" => json = true,
            "--top" => {
                let v = value("--top")?;
                opts.top = match v.parse::<usize>() {
                    Ok(n) if n > 0 => n,
                    _ => return Err(format!("--top {v:?}: expected a positive number of rows")),
                };
            }
            "--by" => {
                let v = value("--by")?;
                opts.by = match v.as_str() {
                    "function" => By::Function,
                    "bucket" => By::Bucket,
                    _ => return Err(format!("--by {v:?}: expected function or bucket")),
                };
            }
            "--exclude" => {
                let v = value("--exclude")?;
                if v.is_empty() {
                    return Err("--exclude \"\": expected a non-empty glob".to_owned());
                }
                opts.exclude.push(v);
            }
            f if f.starts_with('-') && f != "-" => {
                return Err(format!(
                    "unknown option {f:?}: expected --top, --by, --exclude, --json or --help"
                ));
            }
            _ => {
                if let Some(p) = &path {
                    return Err(format!(
                        "a second dump file {a:?} after {p:?}: expected exactly one DUMP"
                    ));
                }
                path = Some(a);
            }
        }
    }
    let path = path.ok_or_else(|| "no dump file given: expected DUMP".to_owned())?;
    Ok(Some(Args { opts, json, path }))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("heatmap: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let bytes = match std::fs::read(&args.path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("heatmap: cannot read {:?}: {e}", args.path);
            return ExitCode::from(1);
        }
    };
    let profile = match Profile::read_dump(&bytes) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("heatmap: {:?}: {e}", args.path);
            return ExitCode::from(1);
        }
    };
    let report = profile.report(&args.opts);
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        use std::io::Write;
        writeln!(out, "{}", report.to_json())
    } else {
        report.write_table(&mut out)
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`heatmap d | head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("heatmap: writing the report: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Option<Args>, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn arguments_parse() {
        let a = p(&[
            "--top",
            "5",
            "--by=bucket",
            "--exclude",
            "std::*",
            "--exclude=x?",
            "--json",
            "d.hm",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.opts.top, 5);
        assert_eq!(a.opts.by, By::Bucket);
        assert_eq!(a.opts.exclude, vec!["std::*", "x?"]);
        assert!(a.json);
        assert_eq!(a.path, "d.hm");
        assert!(p(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn bad_arguments_name_the_value() {
        assert_eq!(
            p(&["--top", "abc", "d"]).unwrap_err(),
            r#"--top "abc": expected a positive number of rows"#
        );
        assert_eq!(
            p(&["--top", "0", "d"]).unwrap_err(),
            r#"--top "0": expected a positive number of rows"#
        );
        assert_eq!(
            p(&["--by", "line", "d"]).unwrap_err(),
            r#"--by "line": expected function or bucket"#
        );
        assert_eq!(p(&["--top"]).unwrap_err(), "--top needs a value");
        assert_eq!(
            p(&["--frobnicate", "d"]).unwrap_err(),
            r#"unknown option "--frobnicate": expected --top, --by, --exclude, --json or --help"#
        );
        assert_eq!(p(&[]).unwrap_err(), "no dump file given: expected DUMP");
        assert_eq!(
            p(&["a", "b"]).unwrap_err(),
            r#"a second dump file "b" after "a": expected exactly one DUMP"#
        );
    }
}
