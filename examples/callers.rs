//! Two callers of one hot function in a 9:1 ratio, the workload of the stacks' agreement check
//! with perf (`scripts/stacks-vs-perf`): every round calls `caller_a`, which calls `hot` 9
//! times, and `caller_b`, which calls it once, so a sampler's stacks should put 90% of `hot`'s
//! samples under `caller_a` and 10% under `caller_b`. `hot` does real work in std code (a sort,
//! a hash map, formatting), as the stacks prototype's workload did (docs/stacks.md, section 12).
//!
//! ```text
//! cargo run --release -p profpoint-examples --example callers -- [--rounds N] [--threads N]
//! ```
//!
//! The defaults (3000 rounds on each of 2 threads) take about 3 s of CPU in a release build.

use std::collections::HashMap;
use std::fmt::Write;
use std::hint::black_box;
use std::process::ExitCode;

/// Numbers `hot` sorts each call.
const N: usize = 2048;

struct Args {
    rounds: u64,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        rounds: 3000,
        threads: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = match flag.as_str() {
            "--rounds" | "--threads" => it
                .next()
                .ok_or_else(|| format!("{flag}: expected a number after it"))?,
            "-h" | "--help" => return Err("usage: callers [--rounds N] [--threads N]".into()),
            other => {
                return Err(format!(
                    "unknown argument {other:?}: expected --rounds N or --threads N"
                ));
            }
        };
        match (flag.as_str(), v.parse::<u64>()) {
            ("--rounds", Ok(n)) if (1..=100_000_000).contains(&n) => args.rounds = n,
            ("--threads", Ok(n)) if (1..=1024).contains(&n) => args.threads = n as usize,
            ("--rounds", _) => {
                return Err(format!(
                    "--rounds {v:?}: expected a count from 1 to 100000000"
                ));
            }
            _ => return Err(format!("--threads {v:?}: expected a count from 1 to 1024")),
        }
    }
    Ok(args)
}

/// The hot function: sorts N pseudo-random numbers, counts half of them in a hash map
/// (SipHash), formats 128 of them.
#[profpoint::profile_point]
#[inline(never)]
fn hot(seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut v: Vec<u64> = (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    v.sort_unstable();
    let mut m: HashMap<u64, u32> = HashMap::with_capacity(512);
    for y in &v[..N / 2] {
        *m.entry(y % 4096).or_insert(0) += 1;
    }
    let mut s = String::with_capacity(4096);
    for y in &v[..128] {
        let _ = write!(s, "{y:x},{} ", y % 1000);
    }
    black_box(v[N / 2] ^ m.len() as u64 ^ s.len() as u64)
}

/// Calls `hot` 9 times a round.
#[profpoint::profile_point]
#[inline(never)]
fn caller_a(seed: u64) -> u64 {
    let mut acc = 0;
    for i in 0..9 {
        acc ^= hot(black_box(seed.wrapping_add(i)));
    }
    acc
}

/// Calls `hot` once a round.
#[profpoint::profile_point]
#[inline(never)]
fn caller_b(seed: u64) -> u64 {
    hot(black_box(seed.wrapping_mul(3)))
}

/// One round: `caller_a` then `caller_b`.
#[profpoint::profile_point]
#[inline(never)]
fn round(seed: u64) -> u64 {
    black_box(caller_a(seed)) ^ black_box(caller_b(seed))
}

#[profpoint::main]
fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("callers: {e}");
            return ExitCode::from(2);
        }
    };
    let acc = std::thread::scope(|s| {
        let hs: Vec<_> = (0..args.threads as u64)
            .map(|t| {
                s.spawn(move || (0..args.rounds).fold(0u64, |acc, r| acc ^ round(t << 32 | r)))
            })
            .collect();
        hs.into_iter().fold(0u64, |acc, h| acc ^ h.join().unwrap())
    });
    println!(
        "{} rounds on {} threads: {acc:x}",
        args.rounds, args.threads
    );
    ExitCode::SUCCESS
}
