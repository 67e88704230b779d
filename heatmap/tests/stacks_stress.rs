//! The "bad input and limits" for stacks: 4 kHz for 10 s across 8 threads doing, each,
//! one hostile thing: deep recursion on a 64 KiB stack, vDSO calls, code in a JIT-like
//! anonymous executable page, a library `dlopen`ed and `dlclose`d over and over during the
//! run (and run inside), a signal handler of its own on its own alternate stack, recursion past
//! the depth limit, and the plain call chain. No crash, no hang (every thread joins before a
//! deadline), every sample accounted for (stored or dropped), and the cuts counted by reason.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::*;
use profpoint_heatmap::Config;

const RUN: Duration = Duration::from_secs(10);

#[inline(never)]
fn recurse(n: u32, acc: u64) -> u64 {
    if n == 0 {
        spin(20_000);
        return acc;
    }
    let local = std::hint::black_box([acc; 4]);
    recurse(n - 1, local[n as usize % 4].wrapping_add(1))
}

#[inline(never)]
fn vdso_loop() -> u64 {
    let mut t = 0u64;
    for _ in 0..2000 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a live timespec; CLOCK_MONOTONIC is served by the vDSO.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        t = t.wrapping_add(ts.tv_nsec as u64);
    }
    t
}

/// A page of machine code outside every loaded object: `fn(n: u64)` counting `n` down.
fn jit_page() -> extern "C" fn(u64) {
    // mov rax, rdi; 1: dec rax; jnz 1b; ret
    const CODE: [u8; 9] = [0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3];
    // SAFETY: a fresh private anonymous mapping, written then made executable (never both).
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        std::ptr::copy_nonoverlapping(CODE.as_ptr(), p as *mut u8, CODE.len());
        assert_eq!(
            libc::mprotect(p, 4096, libc::PROT_READ | libc::PROT_EXEC),
            0
        );
        std::mem::transmute::<*mut libc::c_void, extern "C" fn(u64)>(p)
    }
}

#[inline(never)]
fn jit_caller(f: extern "C" fn(u64)) {
    f(200_000);
}

/// dlopen libz, checksum a buffer inside it, dlclose; over and over.
#[inline(never)]
fn dl_cycle(buf: &[u8]) -> Result<u64, String> {
    type Crc32 = unsafe extern "C" fn(libc::c_ulong, *const u8, libc::c_uint) -> libc::c_ulong;
    // SAFETY: loading a system library by its soname; its initialisers are libz's.
    let h = unsafe { libc::dlopen(c"libz.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err("libz.so.1 cannot be dlopened".to_owned());
    }
    // SAFETY: looking up a symbol of a live handle.
    let sym = unsafe { libc::dlsym(h, c"crc32".as_ptr()) };
    let mut crc = 0;
    if !sym.is_null() {
        // SAFETY: crc32 has this C signature in every zlib.
        let f: Crc32 = unsafe { std::mem::transmute::<*mut libc::c_void, Crc32>(sym) };
        for _ in 0..20 {
            // SAFETY: `buf` is live for the call, its length fits in u32.
            crc = unsafe { f(crc, buf.as_ptr(), buf.len() as libc::c_uint) };
        }
    }
    // SAFETY: closing the handle opened above.
    unsafe { libc::dlclose(h) };
    Ok(crc)
}

static IN_HANDLER_SPINS: AtomicU64 = AtomicU64::new(0);

extern "C" fn own_handler(_sig: libc::c_int) {
    // Async-signal-safe: a register loop and an atomic.
    spin(2_000_000);
    IN_HANDLER_SPINS.fetch_add(1, Ordering::Relaxed);
}

/// A 64 KiB alternate stack for this thread and a SIGUSR1 handler that runs there.
fn own_signal_setup() {
    // SAFETY: a leaked 64 KiB buffer becomes this thread's alternate stack; the handler is
    // installed with an empty mask and SA_ONSTACK.
    unsafe {
        let stack: &'static mut [u8] = Box::leak(vec![0u8; 64 * 1024].into_boxed_slice());
        let ss = libc::stack_t {
            ss_sp: stack.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: stack.len(),
        };
        assert_eq!(libc::sigaltstack(&ss, std::ptr::null_mut()), 0);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = own_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_ONSTACK | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

#[test]
fn eight_hostile_threads_at_4khz_for_10s() {
    let _g = serial();
    let Some(s) = start_perf_or_skip(
        "eight_hostile_threads_at_4khz_for_10s",
        Config::new().hz(4000).stacks(64),
    ) else {
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(9));
    let dl_skipped = Arc::new(std::sync::Mutex::new(None::<String>));
    let jit = jit_page();
    let mut threads = Vec::new();
    for kind in 0..8u32 {
        let (stop, start, dl_skipped) = (stop.clone(), start.clone(), dl_skipped.clone());
        let b = std::thread::Builder::new().name(format!("hostile-{kind}"));
        let b = if kind == 0 {
            b.stack_size(64 * 1024)
        } else {
            b
        };
        threads.push(
            b.spawn(move || {
                if kind == 4 {
                    own_signal_setup();
                }
                let buf = vec![7u8; 64 * 1024];
                start.wait();
                let mut work = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    work = work.wrapping_add(match kind {
                        0 => recurse(100, 1),
                        1 => vdso_loop(),
                        2 => {
                            jit_caller(jit);
                            1
                        }
                        3 => match dl_cycle(&buf) {
                            Ok(c) => c,
                            Err(e) => {
                                *dl_skipped.lock().unwrap() = Some(e);
                                spin(100_000);
                                0
                            }
                        },
                        4 => {
                            // SAFETY: raising a signal this thread handles (own_handler).
                            unsafe { libc::raise(libc::SIGUSR1) };
                            1
                        }
                        5 => recurse(300, 2),
                        _ => {
                            spin(100_000);
                            1
                        }
                    });
                }
                work
            })
            .expect("spawn"),
        );
    }
    start.wait();
    let t0 = Instant::now();
    std::thread::sleep(RUN);
    stop.store(true, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(30);
    for (kind, t) in threads.into_iter().enumerate() {
        while !t.is_finished() {
            assert!(Instant::now() < deadline, "thread {kind} hangs");
            std::thread::sleep(Duration::from_millis(10));
        }
        t.join().expect("no thread panicked");
    }
    let p = s.stop();
    let r = full_report(&p);
    let st = r.stacks.expect("stacks were on");
    let with = |name: &str| -> u64 {
        st.stacks
            .iter()
            .filter(|s| s.frames.iter().any(|f| f.function.contains(name)))
            .map(|s| s.count)
            .sum()
    };
    // The vDSO's frames are named by its symbols (`__vdso_clock_gettime`), its object `[vdso]`.
    let in_vdso: u64 = st
        .stacks
        .iter()
        .filter(|s| {
            s.frames
                .iter()
                .any(|f| f.library.as_deref() == Some("[vdso]"))
        })
        .map(|s| s.count)
        .sum();
    println!(
        "stress: {:?}, {} samples, {} stored ({} distinct), dropped {}, truncated {}, cuts {:?}; \
         vdso {}, recurse {}, jit_caller {}, crc32 {}, own_handler {} (ran {} times)",
        t0.elapsed(),
        p.total_samples(),
        st.samples,
        st.stacks.len(),
        st.dropped,
        st.truncated,
        st.cuts,
        in_vdso,
        with("recurse"),
        with("jit_caller"),
        with("crc32"),
        with("own_handler"),
        IN_HANDLER_SPINS.load(Ordering::Relaxed),
    );
    if let Some(why) = dl_skipped.lock().unwrap().clone() {
        println!("SKIPPED the dlopen part of eight_hostile_threads_at_4khz_for_10s: {why}");
    }
    assert_eq!(
        st.samples + st.dropped,
        p.total_samples(),
        "every sample accounted for"
    );
    assert!(st.samples >= 1000, "{} stored samples", st.samples);
    assert!(
        st.truncated > 0,
        "recursion past depth 64 is truncated and counted"
    );
    let cut = |reason: &str| -> u64 {
        st.cuts
            .iter()
            .filter(|c| c.reason.starts_with(reason))
            .map(|c| c.count)
            .sum()
    };
    assert!(
        cut("pc not in mapped code") > 0,
        "JIT samples are cut and counted: {:?}",
        st.cuts
    );
    assert!(in_vdso > 0, "samples in the vDSO");
    assert!(
        IN_HANDLER_SPINS.load(Ordering::Relaxed) > 0,
        "the own handler ran"
    );
}
