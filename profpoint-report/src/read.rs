//! Reading a report back: [`Report::from_json`] and [`read`].
//!
//! Every version this project has written is read (1, 2 and 3) and brought to the current model;
//! a newer version, another schema, and anything that is not a report are refused with a
//! message saying what is wrong and where (the field's path, as `points[3].nr`, or the line
//! and column of a syntax error). Reading has no side effect and never panics on any input.

use crate::model::{Report, SCHEMA, VERSION};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// The oldest version [`Report::from_json`] reads.
pub const OLDEST_VERSION: u32 = 1;

/// Why a report could not be read: what is wrong and, from [`read`], the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    file: Option<PathBuf>,
    what: String,
}

impl ReadError {
    fn new(what: impl Into<String>) -> ReadError {
        ReadError {
            file: None,
            what: what.into(),
        }
    }

    /// The file it came from ([`read`]), if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// What is wrong, without the file's name.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The same error, said of `file`.
    pub fn in_file(mut self, file: &Path) -> ReadError {
        self.file = Some(file.to_path_buf());
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for ReadError {}

/// The two fields that say what a document is, read alone when the whole report does not
/// read, so that a report of another schema or a newer version is called that rather than
/// refused for the first field it lacks.
#[derive(Deserialize)]
struct Header {
    schema: Option<String>,
    version: Option<u64>,
}

fn check_header(schema: &str, version: u64) -> Result<(), ReadError> {
    if schema != SCHEMA {
        return Err(ReadError::new(format!(
            "schema: {schema:?} is not a profpoint report (expected {SCHEMA:?})"
        )));
    }
    if version > u64::from(VERSION) {
        return Err(ReadError::new(format!(
            "version: {version} is newer than this reader, which reads versions \
             {OLDEST_VERSION} to {VERSION} (a newer profpoint wrote it: update the command)"
        )));
    }
    if version < u64::from(OLDEST_VERSION) {
        return Err(ReadError::new(format!(
            "version: {version} was never written by profpoint (expected {OLDEST_VERSION} to {VERSION})"
        )));
    }
    Ok(())
}

/// What a byte sequence looks like, for the error of a document that is no JSON object.
fn not_a_report(text: &str, err: &profpoint_json::Error) -> String {
    if err.line().is_some() {
        // A syntax error: say so, with where.
        let end = text.trim_end().len();
        let truncated = err
            .line()
            .zip(err.column())
            .map(|(line, col)| {
                // The error is at the end of the text: it stopped in the middle of a value.
                let before: usize = text
                    .split_inclusive('\n')
                    .take(line - 1)
                    .map(str::len)
                    .sum();
                before + col > end
            })
            .unwrap_or(false);
        if truncated && text.trim_start().starts_with('{') {
            format!("truncated (the JSON ends inside the report): {err}")
        } else {
            format!("not JSON: {err}")
        }
    } else {
        err.to_string()
    }
}

impl Report {
    /// Reads a report from its JSON form (`docs/report-schema.md`): any version from
    /// [`OLDEST_VERSION`] to [`VERSION`], brought to the current model (a version-1 async
    /// point's `self_ns`, which held its total, becomes `None`; `version` becomes
    /// [`VERSION`]). Fails on a newer version (the message names both), another schema, and
    /// anything else that is not a report, naming the field where there is one.
    pub fn from_json(text: &str) -> Result<Report, ReadError> {
        if text.trim().is_empty() {
            return Err(ReadError::new(
                "empty: expected a profpoint JSON report (an object)",
            ));
        }
        match profpoint_json::from_str::<Report>(text) {
            Ok(mut report) => {
                check_header(&report.schema, u64::from(report.version))?;
                upgrade(&mut report);
                Ok(report)
            }
            Err(err) => {
                if err.line().is_none() {
                    // Well-formed JSON: a report of another kind or version says so first.
                    if let Ok(Header {
                        schema: Some(schema),
                        version,
                    }) = profpoint_json::from_str::<Header>(text)
                    {
                        check_header(&schema, version.unwrap_or(u64::from(VERSION)))?;
                    }
                    if !text.trim_start().starts_with('{') {
                        return Err(ReadError::new(format!(
                            "not a profpoint report: expected a JSON object, {err}"
                        )));
                    }
                }
                Err(ReadError::new(not_a_report(text, &err)))
            }
        }
    }
}

/// Brings a report of an older version to the current model.
fn upgrade(report: &mut Report) {
    if report.version < 2 {
        // Version 1 wrote an async point's total as its self time.
        let mut async_points = std::collections::HashSet::new();
        for p in report.points.iter_mut().filter(|p| p.kind == "async") {
            p.self_ns = None;
            async_points.insert((p.name.clone(), p.file.clone(), p.line));
        }
        if let Some(iv) = &mut report.interval {
            for p in &mut iv.points {
                if async_points.contains(&(p.name.clone(), p.file.clone(), p.line)) {
                    p.self_ns = None;
                }
            }
        }
    }
    report.version = VERSION;
}

impl Report {
    /// [`Report::from_json`] on bytes, which must be UTF-8.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Report, ReadError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            ReadError::new(format!(
                "not JSON: invalid UTF-8 at byte {}",
                e.valid_up_to()
            ))
        })?;
        Report::from_json(text)
    }
}

/// The largest report [`read`] reads: 1 GiB (a report of 10,000 points is ~24 MB).
pub const MAX_READ: u64 = 1 << 30;

/// Reads the report in `path` ([`Report::from_json`]); every error names the file. Only a
/// regular file of at most [`MAX_READ`] bytes is read, opened without waiting: a FIFO (which
/// would wait for a writer), a device (`/dev/zero` never ends) or a larger file is an error at
/// once.
pub fn read(path: &Path) -> Result<Report, ReadError> {
    use std::io::Read;
    let in_file = |e: ReadError| e.in_file(path);
    let cannot =
        |e: std::io::Error| in_file(ReadError::new(format!("cannot read: {}", io_words(&e))));
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NONBLOCK);
    let f = o.open(path).map_err(cannot)?;
    let m = f.metadata().map_err(cannot)?;
    if m.is_dir() {
        return Err(in_file(ReadError::new(
            "is a directory: expected a profpoint JSON report file",
        )));
    }
    if !m.is_file() {
        return Err(in_file(ReadError::new(
            "is not a regular file: expected a profpoint JSON report file",
        )));
    }
    let too_large = |n: u64| {
        in_file(ReadError::new(format!(
            "{n} bytes or more, over the {MAX_READ}-byte limit of a report"
        )))
    };
    if m.len() > MAX_READ {
        return Err(too_large(m.len()));
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.take(MAX_READ + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_READ {
        return Err(too_large(bytes.len() as u64));
    }
    Report::from_json_slice(&bytes).map_err(in_file)
}

/// An I/O error in words, without Rust's `(os error N)`.
fn io_words(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// What is not a regular file is an error at once, naming the file: a device that never
    /// ends and a FIFO without a writer (each would hold the reader for ever), a folder.
    #[test]
    fn only_a_regular_file_is_read() {
        let dir = std::env::temp_dir().join(format!("pp-read-{}", std::process::id()));
        // A folder left by a killed run of the same process id would hold the FIFO already.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("report.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path alive across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let paths = [
            Path::new("/dev/zero").to_path_buf(),
            fifo.clone(),
            dir.clone(),
        ];
        std::thread::spawn(move || {
            let errors: Vec<String> = paths
                .iter()
                .map(|p| read(p).unwrap_err().to_string())
                .collect();
            let _ = tx.send(errors);
        });
        let errors = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("read waited");
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            errors[0].contains("/dev/zero") && errors[0].contains("not a regular file"),
            "{errors:?}"
        );
        assert!(
            errors[1].contains("report.fifo") && errors[1].contains("not a regular file"),
            "{errors:?}"
        );
        assert!(errors[2].contains("is a directory"), "{errors:?}");
    }
}
