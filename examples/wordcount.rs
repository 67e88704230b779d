//! The main example: a multi-threaded word count over text it generates itself (the workload
//! of the Lego kernel's heatmap design), its phases annotated with profile points; the table
//! prints at exit.
//!
//! ```text
//! cargo run --release -p profpoint-examples --example wordcount -- [--mb N] [--threads N]
//! ```
//!
//! The text is deterministic (a fixed-seed generator over a Zipf-like vocabulary), so two runs
//! of the same size count the same words: a fair input for comparing runs.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::process::ExitCode;

/// Default text size: a few hundred MB, as in the heatmap design's workload (1 GB there).
const DEFAULT_MB: usize = 256;
/// Vocabulary size: large enough that the count map misses cache sometimes.
const VOCABULARY: usize = 20_000;

struct Args {
    mb: usize,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        mb: DEFAULT_MB,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |what: &str, max: usize| -> Result<usize, String> {
            let v = it
                .next()
                .ok_or_else(|| format!("{flag}: expected {what} after it"))?;
            match v.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(format!("{flag} {v:?}: expected {what} from 1 to {max}")),
            }
        };
        match flag.as_str() {
            "--mb" => args.mb = value("a size in MB", 65_536)?,
            "--threads" => args.threads = value("a thread count", 1_024)?,
            "-h" | "--help" => {
                return Err("usage: wordcount [--mb N] [--threads N]".to_string());
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}: expected --mb N or --threads N"
                ));
            }
        }
    }
    Ok(args)
}

/// FNV-1a: a fast hash for short words (std's SipHash would dominate the profile).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type Counts<'a> = HashMap<&'a [u8], u64, BuildHasherDefault<Fnv>>;

/// A fixed-seed xorshift generator: the same text on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[profpoint::profile_point]
fn make_vocabulary() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    (0..VOCABULARY)
        .map(|_| {
            let len = 2 + (rng.next() % 9) as usize;
            (0..len).map(|_| b'a' + (rng.next() % 26) as u8).collect()
        })
        .collect()
}

/// Generates `bytes` of text: words drawn with a Zipf-like skew, 12 words to a line.
#[profpoint::profile_point]
fn generate(vocab: &[Vec<u8>], bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let mut text = Vec::with_capacity(bytes + 64);
    let mut words_on_line = 0;
    while text.len() < bytes {
        // Squaring a uniform draw skews it towards small indices: frequent words.
        let u = (rng.next() % 65_536) as usize;
        let idx = (u * u / 65_536) * VOCABULARY / 65_536;
        text.extend_from_slice(&vocab[idx]);
        words_on_line += 1;
        if words_on_line == 12 {
            text.push(b'\n');
            words_on_line = 0;
        } else {
            text.push(b' ');
        }
    }
    text
}

#[profpoint::profile_point]
fn count_line<'a>(line: &'a [u8], counts: &mut Counts<'a>) {
    for word in line.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        *counts.entry(word).or_insert(0) += 1;
    }
}

#[profpoint::profile_point]
fn count_chunk(chunk: &[u8]) -> Counts<'_> {
    let mut counts = Counts::default();
    for line in chunk.split(|&b| b == b'\n') {
        count_line(line, &mut counts);
    }
    counts
}

#[profpoint::profile_point]
fn merge<'a>(parts: Vec<Counts<'a>>) -> Counts<'a> {
    let mut all = Counts::default();
    for part in parts {
        for (w, n) in part {
            *all.entry(w).or_insert(0) += n;
        }
    }
    all
}

#[profpoint::profile_point]
fn top(counts: &Counts<'_>, n: usize) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = counts
        .iter()
        .map(|(w, c)| (String::from_utf8_lossy(w).into_owned(), *c))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// Splits `text` into `n` chunks that end at line breaks.
fn split_lines(text: &[u8], n: usize) -> Vec<&[u8]> {
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    for i in 1..=n {
        let mut end = (text.len() * i / n).max(start);
        while end < text.len() && text[end] != b'\n' {
            end += 1;
        }
        chunks.push(&text[start..end]);
        start = (end + 1).min(text.len());
    }
    chunks
}

#[profpoint::main]
fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("wordcount: {e}");
            return ExitCode::from(2);
        }
    };
    let vocab = make_vocabulary();
    // Generate in parallel, one deterministic piece per thread.
    let piece = args.mb * 1024 * 1024 / args.threads;
    let text: Vec<u8> = {
        let _g = profpoint::profile_scope!("wordcount::generate_all");
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..args.threads)
                .map(|t| {
                    let vocab = &vocab;
                    s.spawn(move || generate(vocab, piece, 0x1234_5678 + t as u64))
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        })
    };
    let parts: Vec<Counts<'_>> = {
        let _g = profpoint::profile_scope!("wordcount::count_all");
        std::thread::scope(|s| {
            let hs: Vec<_> = split_lines(&text, args.threads)
                .into_iter()
                .map(|chunk| s.spawn(move || count_chunk(chunk)))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    };
    let all = merge(parts);
    let total: u64 = all.values().sum();
    println!(
        "{} MB, {} threads: {} words, {} distinct",
        args.mb,
        args.threads,
        total,
        all.len()
    );
    for (w, n) in top(&all, 10) {
        println!("{n:>12}  {w}");
    }
    ExitCode::SUCCESS
}
