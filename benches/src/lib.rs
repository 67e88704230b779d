//! Shared helpers of the benchmarks: process CPU time (all threads, so peers that hand work to
//! a background thread pay for it) and a hardware instruction counter for the current thread.

#![allow(missing_docs)]
// Linux only, like the benches that use it (see Cargo.toml).
#![cfg(target_os = "linux")]

use std::time::Duration;

/// CPU time consumed by the whole process so far (every thread).
pub fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux defines.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Reads the time-stamp counter (the physical floor of a profile point is two of these).
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `rdtsc` has no preconditions.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// A user-space instruction counter for the calling thread (`perf_event_open`,
/// `PERF_COUNT_HW_INSTRUCTIONS`, kernel and hypervisor excluded).
#[derive(Debug)]
pub struct Instructions {
    fd: i32,
}

// Offsets into `struct perf_event_attr` (include/uapi/linux/perf_event.h).
const ATTR_SIZE: usize = 128;
const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// Bits of the flags word at offset 40: disabled, exclude_kernel, exclude_hv.
const FLAGS: u64 = 1 | (1 << 5) | (1 << 6);
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;

impl Instructions {
    /// Opens the counter, or says why it cannot.
    pub fn open() -> Result<Instructions, String> {
        let mut attr = [0u8; ATTR_SIZE];
        attr[0..4].copy_from_slice(&PERF_TYPE_HARDWARE.to_ne_bytes());
        attr[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_ne_bytes());
        attr[8..16].copy_from_slice(&PERF_COUNT_HW_INSTRUCTIONS.to_ne_bytes());
        attr[40..48].copy_from_slice(&FLAGS.to_ne_bytes());
        // SAFETY: `attr` is a zero-initialised perf_event_attr of the size it declares;
        // pid 0 / cpu -1 counts the calling thread on any CPU; no group, no flags.
        let fd =
            unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), 0, -1, -1, 0) } as i32;
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "perf_event_open(instructions) failed: {e} (no PMU in this VM, or \
                 /proc/sys/kernel/perf_event_paranoid above 2)"
            ));
        }
        Ok(Instructions { fd })
    }

    /// Instructions retired by `f` in user space.
    pub fn count(&self, f: impl FnOnce()) -> u64 {
        // SAFETY: `fd` is an open perf event owned by `self`; these ioctls take no argument.
        unsafe {
            libc::ioctl(self.fd, IOC_RESET, 0);
            libc::ioctl(self.fd, IOC_ENABLE, 0);
        }
        f();
        let mut v = 0u64;
        // SAFETY: as above; `read` writes at most 8 bytes into `v`.
        unsafe {
            libc::ioctl(self.fd, IOC_DISABLE, 0);
            libc::read(self.fd, (&mut v as *mut u64).cast(), 8);
        }
        v
    }
}

impl Drop for Instructions {
    fn drop(&mut self) {
        // SAFETY: `fd` is owned by `self` and closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// Instructions retired inside the functions matching `toggle` (a callgrind
/// `--toggle-collect` pattern) when this executable is re-run with `args`, counted exactly
/// by valgrind's callgrind: the instruction counter for machines without a reachable PMU.
pub fn callgrind_instructions(toggle: &str, args: &[&str]) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let file = std::env::temp_dir().join(format!(
        "profpoint-callgrind-{}-{}",
        std::process::id(),
        args.join("-").replace('/', "_")
    ));
    let status = std::process::Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--collect-atstart=no",
            &format!("--toggle-collect={toggle}"),
            &format!("--callgrind-out-file={}", file.display()),
        ])
        .arg(&exe)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("valgrind could not be run ({e}): apt-get install valgrind"))?;
    if !status.success() {
        return Err(format!("valgrind failed on {args:?}: {status}"));
    }
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&file);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no totals in callgrind's output for {args:?}"))
        .and_then(|total| match total {
            // A pattern that matches no function counts nothing: an error, never a figure.
            0 => Err(format!(
                "callgrind counted no instruction in {toggle} for {args:?} (the pattern matches no function)"
            )),
            n => Ok(n),
        })
}

/// The verdicts of a targets bench: each target prints PASS or MISS with its limit; a target
/// this project knows it misses carries its recorded figure (BENCHMARKS.md) and prints KNOWN
/// MISS while it is no worse than that, so the bench still catches a regression on a machine
/// where the target itself is out of reach. [`Targets::finish`] exits 1 on any MISS.
#[derive(Debug, Default)]
pub struct Targets {
    missed: Vec<String>,
}

/// How much worse than its recorded figure a known miss may measure before it counts as a
/// regression: timings on a shared 2-vCPU guest vary between runs of the same binary by less
/// than this (BENCHMARKS.md, "Known misses").
pub const KNOWN_MISS_SLACK: f64 = 0.20;

impl Targets {
    /// A target: `measured` must be at most `limit`.
    pub fn target(&mut self, name: &str, measured: f64, limit: f64, unit: &str) {
        let pass = measured <= limit;
        if !pass {
            self.missed.push(name.to_string());
        }
        println!(
            "{:<10}  {name:<60} {measured:>8.2} {unit:<6} (limit {limit:.2})",
            if pass { "PASS" } else { "MISS" }
        );
    }

    /// A target known to be missed, with the figure recorded in BENCHMARKS.md: a MISS only
    /// when `measured` is worse than `recorded` by more than [`KNOWN_MISS_SLACK`].
    pub fn known_miss(&mut self, name: &str, measured: f64, limit: f64, recorded: f64, unit: &str) {
        let verdict = if measured <= limit {
            "PASS"
        } else if measured <= recorded * (1.0 + KNOWN_MISS_SLACK) {
            "KNOWN MISS"
        } else {
            self.missed.push(name.to_string());
            "MISS"
        };
        println!(
            "{verdict:<10}  {name:<60} {measured:>8.2} {unit:<6} (limit {limit:.2}; recorded {recorded:.2}, worse than {:.2} fails)",
            recorded * (1.0 + KNOWN_MISS_SLACK)
        );
    }

    /// Prints the summary; exits 1 if any target was missed (known misses aside).
    pub fn finish(self) {
        if self.missed.is_empty() {
            println!("no target missed beyond its recorded figure");
            return;
        }
        println!("missed: {}", self.missed.join("; "));
        std::process::exit(1);
    }
}

/// Ten points (`P0` to `P9`, `profpoint::define_profile_point!`) in a module `$m` of their own,
/// and `$m::touch()`, which calls each once: the many-point benches' rows (serve_targets,
/// live_targets). The calling crate depends on profpoint.
#[macro_export]
macro_rules! ten_points {
    ($m:ident) => {
        mod $m {
            profpoint::define_profile_point!(P0);
            profpoint::define_profile_point!(P1);
            profpoint::define_profile_point!(P2);
            profpoint::define_profile_point!(P3);
            profpoint::define_profile_point!(P4);
            profpoint::define_profile_point!(P5);
            profpoint::define_profile_point!(P6);
            profpoint::define_profile_point!(P7);
            profpoint::define_profile_point!(P8);
            profpoint::define_profile_point!(P9);
            pub(super) fn touch() {
                for p in [&P0, &P1, &P2, &P3, &P4, &P5, &P6, &P7, &P8, &P9] {
                    let t = p.start();
                    p.leave(t);
                }
            }
        }
    };
}

/// A hundred points in a module `$m` of their own (ten modules of [`ten_points!`]) and
/// `$m::touch()`, which calls each once.
#[macro_export]
macro_rules! hundred_points {
    ($m:ident) => {
        mod $m {
            $crate::ten_points!(a0);
            $crate::ten_points!(a1);
            $crate::ten_points!(a2);
            $crate::ten_points!(a3);
            $crate::ten_points!(a4);
            $crate::ten_points!(a5);
            $crate::ten_points!(a6);
            $crate::ten_points!(a7);
            $crate::ten_points!(a8);
            $crate::ten_points!(a9);
            pub(super) fn touch() {
                a0::touch();
                a1::touch();
                a2::touch();
                a3::touch();
                a4::touch();
                a5::touch();
                a6::touch();
                a7::touch();
                a8::touch();
                a9::touch();
            }
        }
    };
}

/// A thousand points in a module `$m` of their own (ten of [`hundred_points!`]) and
/// `$m::touch()`, which calls each once (live_targets, serve_large).
#[macro_export]
macro_rules! thousand_points {
    ($m:ident) => {
        mod $m {
            $crate::hundred_points!(b0);
            $crate::hundred_points!(b1);
            $crate::hundred_points!(b2);
            $crate::hundred_points!(b3);
            $crate::hundred_points!(b4);
            $crate::hundred_points!(b5);
            $crate::hundred_points!(b6);
            $crate::hundred_points!(b7);
            $crate::hundred_points!(b8);
            $crate::hundred_points!(b9);
            pub(super) fn touch() {
                b0::touch();
                b1::touch();
                b2::touch();
                b3::touch();
                b4::touch();
                b5::touch();
                b6::touch();
                b7::touch();
                b8::touch();
                b9::touch();
            }
        }
    };
}
