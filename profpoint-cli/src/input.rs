//! Reading the command's input files, bounded: a regular file of at most `--max-input-size`
//! bytes, opened without waiting, with one line naming the file and what is wrong otherwise.

use profpoint_report::Report;
use std::path::Path;

/// The largest input read unless `--max-input-size` says otherwise: 256 MiB (a report of
/// 10,000 points is ~24 MB of JSON).
pub(crate) const DEFAULT_MAX_INPUT: u64 = 256 << 20;

/// `--max-input-size`, set once by `main` before any file is read.
pub(crate) static MAX_INPUT: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_MAX_INPUT);

/// Reads a report; the error names the file and what is wrong.
pub(crate) fn load(path: &Path) -> Result<Report, String> {
    let bytes = read_input(path, "a profpoint JSON report file")?;
    let report = Report::from_json_slice(&bytes).map_err(|e| e.in_file(path).to_string())?;
    // Drawn as it is, but not silently: a figure no run can produce came from elsewhere.
    let bad = report.impossible();
    if let Some(first) = bad.first() {
        crate::output::say(&format!(
            "{}: {} impossible figure{} (a report altered, or written by a profpoint with a bug), the first: {first}",
            path.display(),
            bad.len(),
            if bad.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(report)
}

/// The bytes of input file `path`, `what` being what it should be, in bounded memory and
/// time: opened without waiting (`O_NONBLOCK`: a FIFO without a writer does not hold the
/// open), refused unless it is a regular file of at most [`MAX_INPUT`] bytes (checked with
/// `fstat` before reading; at most the limit plus one byte is read, should it grow).
pub(crate) fn read_input(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let name = path.display();
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NONBLOCK);
    let f = o
        .open(path)
        .map_err(|e| format!("{name}: cannot read: {}", io_words(&e)))?;
    let m = f
        .metadata()
        .map_err(|e| format!("{name}: cannot read: {}", io_words(&e)))?;
    if m.is_dir() {
        return Err(format!("{name}: is a directory: expected {what}"));
    }
    if !m.is_file() {
        return Err(format!(
            "{name}: is {}, not a regular file: expected {what}",
            kind(&m)
        ));
    }
    // Relaxed: set before any reader starts.
    let limit = MAX_INPUT.load(std::sync::atomic::Ordering::Relaxed);
    let too_large = |n: u64| {
        format!(
            "{name}: {n} bytes or more, over the {limit}-byte input limit: expected {what} \
             (--max-input-size BYTES raises the limit)"
        )
    };
    if m.len() > limit {
        return Err(too_large(m.len()));
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: cannot read: {}", io_words(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, in words.
fn kind(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = m;
    "not a file"
}

/// An I/O error in words, without Rust's `(os error N)` (as the report reader says them).
pub(crate) fn io_words(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}
