//! stackproto: in-process stack sampling with framehop inside a SIGPROF handler.
//!
//! usage: stackproto MODE HZ DEPTH SECONDS [FOLDED_OUT]
//!   MODE: none | flat | stack | selftest (stack + one deliberate allocation in the handler)
//!   Timer: a per-thread perf task-clock event (user CPU time) routed as SIGPROF to its thread.

mod modules;
mod policy;
mod symbolize;
mod table;
mod workload;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::time::{Duration, Instant};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64};
use framehop::Unwinder;
pub use policy::SmallStore as Policy;

// ---------------------------------------------------------------- allocation proof
struct Counting;
static ALLOCS_IN_HANDLER: AtomicU64 = AtomicU64::new(0);
thread_local! {
    // const-initialised, no destructor: a plain fs-relative access (initial/local exec TLS)
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
    static CTX: Cell<*mut ThreadCtx> = const { Cell::new(std::ptr::null_mut()) };
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if IN_HANDLER.with(|f| f.get()) {
            ALLOCS_IN_HANDLER.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if IN_HANDLER.with(|f| f.get()) {
            ALLOCS_IN_HANDLER.fetch_add(1, Relaxed);
        }
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if IN_HANDLER.with(|f| f.get()) {
            ALLOCS_IN_HANDLER.fetch_add(1, Relaxed);
        }
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------- per-thread context
/// Prepared by the thread (or, in heatmap, by the watcher) before its first sample.
pub struct ThreadCtx {
    cache: CacheX86_64<Policy>,
    stack: (u64, u64),
    alt: (u64, u64),
    fd: i32,
    /// The stack framehop runs on (switched to inside the handler): gimli's CFI evaluation
    /// copies register-rule rows on the stack, too much for an 8 KiB alternate signal stack.
    ustack: Box<[u8]>,
}

pub const USTACK: usize = 32 * 1024;

struct UnwindJob {
    ctx: *mut ThreadCtx,
    pc: u64,
    sp: u64,
    bp: u64,
    out: *mut u64,
    cap: usize,
    n: usize,
}

extern "C" fn unwind_job(job: *mut UnwindJob) {
    let j = unsafe { &mut *job };
    let out = unsafe { std::slice::from_raw_parts_mut(j.out, j.cap) };
    j.n = unwind(unsafe { &mut *j.ctx }, j.pc, j.sp, j.bp, out);
}

/// Calls `f(arg)` with rsp at `top` (16-byte aligned), then comes back to our stack.
#[inline(always)]
unsafe fn call_on_stack(top: u64, f: extern "C" fn(*mut UnwindJob), arg: *mut UnwindJob) {
    unsafe {
        core::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {f}",
            "mov rsp, r12",
            top = in(reg) top,
            f = in(reg) f,
            in("rdi") arg,
            out("r12") _,
            clobber_abi("C"),
        );
    }
}

// ---------------------------------------------------------------- statistics
static MODE: AtomicUsize = AtomicUsize::new(0); // 0 none, 1 flat, 2 stack, 3 selftest
static DEPTH: AtomicUsize = AtomicUsize::new(32);
static SAMPLES: AtomicU64 = AtomicU64::new(0);
static NO_CTX: AtomicU64 = AtomicU64::new(0);
static CYCLES: AtomicU64 = AtomicU64::new(0);
static FRAMES: AtomicU64 = AtomicU64::new(0);
static END_ROOT: AtomicU64 = AtomicU64::new(0); // framehop found the root (Ok(None))
static END_DEPTH: AtomicU64 = AtomicU64::new(0); // depth limit reached
static END_READ: AtomicU64 = AtomicU64::new(0); // unwinder error (stack read refused, bad rule...)
static END_NOT_CODE: AtomicU64 = AtomicU64::new(0); // a frame outside every module
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// ALTERNATE=1: phases none / flat / stack switched every 50 ms inside one run.
static PHASE: AtomicUsize = AtomicUsize::new(usize::MAX);
static FDS: [std::sync::atomic::AtomicI32; 64] = [const { std::sync::atomic::AtomicI32::new(-1) }; 64];
static SAMPLES_BY_MODE: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
static CYCLES_BY_MODE: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
static ROUNDS_BY_PHASE: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
static CPU_NS_BY_PHASE: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
static mut TABLE: Option<table::StackTable> = None;
/// Every sample's handler time in TSC ticks (preallocated, written by index): exact quantiles.
const NDUR: usize = 1 << 20;
static DUR_IDX: AtomicUsize = AtomicUsize::new(0);
static mut DUR: Option<Box<[std::sync::atomic::AtomicU32]>> = None;
static HIST: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16]; // handler cycles, log2 buckets from 2^8

#[inline(always)]
fn rdtsc() -> u64 {
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The handler. Touches: errno, the ucontext, this thread's ThreadCtx (through a const
/// thread-local), the published unwinder (read only), the table (atomics), statistics.
extern "C" fn handler(_sig: i32, _info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let t0 = rdtsc();
    let errno = unsafe { libc::__errno_location() };
    let saved = unsafe { *errno };
    IN_HANDLER.with(|f| f.set(true));
    ACTIVE.fetch_add(1, SeqCst);
    let ctx = CTX.with(|c| c.get());
    let mode = MODE.load(Relaxed);
    if ctx.is_null() || uc.is_null() {
        NO_CTX.fetch_add(1, Relaxed);
    } else if mode != 0 {
        let ctx = unsafe { &mut *ctx };
        let g = unsafe { &(*(uc as *const libc::ucontext_t)).uc_mcontext.gregs };
        let (pc, sp, bp) = (
            g[libc::REG_RIP as usize] as u64,
            g[libc::REG_RSP as usize] as u64,
            g[libc::REG_RBP as usize] as u64,
        );
        let mut buf = [0u64; 64];
        let n = if mode == 1 {
            buf[0] = pc;
            1
        } else if mode == 4 {
            fp_walk(ctx, pc, sp, bp, &mut buf[..DEPTH.load(Relaxed)])
        } else {
            let top = (ctx.ustack.as_ptr() as u64 + ctx.ustack.len() as u64) & !15;
            let mut job = UnwindJob { ctx, pc, sp, bp, out: buf.as_mut_ptr(), cap: DEPTH.load(Relaxed), n: 1 };
            unsafe { call_on_stack(top, unwind_job, &mut job) };
            job.n
        };
        if mode == 3 && SAMPLES.load(Relaxed) == 10 {
            selftest_alloc(); // selftest: the counter must see this
        }
        FRAMES.fetch_add(n as u64, Relaxed);
        #[allow(static_mut_refs)]
        if let Some(t) = unsafe { TABLE.as_ref() } {
            t.insert(&buf[..n]);
        }
    }
    SAMPLES.fetch_add(1, Relaxed);
    ACTIVE.fetch_sub(1, SeqCst);
    IN_HANDLER.with(|f| f.set(false));
    unsafe { *errno = saved };
    let dt = rdtsc() - t0;
    CYCLES.fetch_add(dt, Relaxed);
    SAMPLES_BY_MODE[mode.min(4)].fetch_add(1, Relaxed);
    CYCLES_BY_MODE[mode.min(4)].fetch_add(dt, Relaxed);
    let b = (64 - dt.leading_zeros() as usize).saturating_sub(8).min(15);
    HIST[b].fetch_add(1, Relaxed);
    #[allow(static_mut_refs)]
    if let Some(d) = unsafe { DUR.as_ref() } {
        let i = DUR_IDX.fetch_add(1, Relaxed);
        if i < NDUR {
            d[i].store(dt.min(u32::MAX as u64) as u32, Relaxed);
        }
    }
}

/// Frame pointers only (the alternative): follow the rbp chain with the same checks.
#[inline(always)]
fn fp_walk(ctx: &ThreadCtx, pc: u64, sp: u64, mut bp: u64, out: &mut [u64]) -> usize {
    out[0] = pc;
    let p = modules::PUBLISHED.load(Acquire);
    if p.is_null() {
        return 1;
    }
    let p = unsafe { &*p };
    let (lo, hi) = (sp.saturating_sub(128).max(ctx.stack.0), ctx.stack.1);
    let mut n = 1;
    while n < out.len() {
        if bp & 7 != 0 || bp < lo || bp > hi - 16 {
            END_READ.fetch_add(1, Relaxed);
            return n;
        }
        let (next, ret) = unsafe { (std::ptr::read_volatile(bp as *const u64), std::ptr::read_volatile((bp + 8) as *const u64)) };
        if !p.is_code(ret) {
            END_NOT_CODE.fetch_add(1, Relaxed);
            return n;
        }
        out[n] = ret;
        n += 1;
        if next <= bp {
            END_ROOT.fetch_add(1, Relaxed);
            return n;
        }
        bp = next;
    }
    END_DEPTH.fetch_add(1, Relaxed);
    n
}

/// The deliberate allocation of `selftest` (kept out of line so the call-graph check can
/// name it as the one allowed allocation site).
#[inline(never)]
fn selftest_alloc() {
    black_box(Box::new(1u64));
}

/// Unwinds into `out` (leaf first). Every stack read is checked against the thread's stack
/// (or alternate stack) bounds; every frame against the published code ranges.
#[inline(always)]
fn unwind(ctx: &mut ThreadCtx, pc: u64, sp: u64, bp: u64, out: &mut [u64]) -> usize {
    let p = modules::PUBLISHED.load(Acquire);
    out[0] = pc;
    if p.is_null() {
        return 1;
    }
    let p = unsafe { &*p };
    if !p.is_code(pc) {
        END_NOT_CODE.fetch_add(1, Relaxed);
        return 1;
    }
    // The valid window: the stack that holds sp (thread stack or alternate stack), from
    // 128 bytes below sp (the red zone) to its top.
    let (lo, hi) = if sp >= ctx.stack.0 && sp < ctx.stack.1 {
        (sp.saturating_sub(128).max(ctx.stack.0), ctx.stack.1)
    } else if sp >= ctx.alt.0 && sp < ctx.alt.1 {
        (sp.saturating_sub(128).max(ctx.alt.0), ctx.alt.1)
    } else {
        END_READ.fetch_add(1, Relaxed);
        return 1;
    };
    let mut read = |a: u64| -> Result<u64, ()> {
        if a & 7 == 0 && a >= lo && a <= hi - 8 {
            Ok(unsafe { std::ptr::read_volatile(a as *const u64) })
        } else {
            Err(())
        }
    };
    let mut it = p.unwinder.iter_frames(pc, UnwindRegsX86_64::new(pc, sp, bp), &mut ctx.cache, &mut read);
    let mut n = 0;
    loop {
        if n == out.len() {
            END_DEPTH.fetch_add(1, Relaxed);
            break;
        }
        match it.next() {
            Ok(Some(f)) => {
                let a = f.address();
                if n > 0 && !p.is_code(a) {
                    END_NOT_CODE.fetch_add(1, Relaxed);
                    break;
                }
                out[n] = a;
                n += 1;
            }
            Ok(None) => {
                END_ROOT.fetch_add(1, Relaxed);
                break;
            }
            Err(_) => {
                END_READ.fetch_add(1, Relaxed);
                break;
            }
        }
    }
    n.max(1)
}

fn install() {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigfillset(&mut sa.sa_mask);
        for s in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE] {
            libc::sigdelset(&mut sa.sa_mask, s);
        }
        assert_eq!(libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut()), 0);
    }
}

// ---------------------------------------------------------------- per-thread set-up
#[repr(C)]
#[derive(Default)]
struct PerfAttr {
    kind: u32,
    size: u32,
    config: u64,
    period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup: u32,
    bp_type: u32,
    config1: u64,
}

fn gettid() -> i32 {
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

const PAINT: u8 = 0xa5;

/// Outside the handler: stack bounds (pthread_getattr_np), the alternate stack (painted to
/// measure the handler's stack use), the framehop cache, the task-clock event.
fn register_thread(hz: u64) -> *mut ThreadCtx {
    let mut stack = (0, 0);
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
            let mut addr = std::ptr::null_mut();
            let mut size = 0;
            libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
            stack = (addr as u64, addr as u64 + size as u64);
            libc::pthread_attr_destroy(&mut attr);
        }
    }
    let mut alt = (0, 0);
    unsafe {
        let mut ss: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut ss) == 0 && ss.ss_flags & libc::SS_DISABLE == 0 {
            alt = (ss.ss_sp as u64, ss.ss_sp as u64 + ss.ss_size as u64);
            std::ptr::write_bytes(ss.ss_sp as *mut u8, PAINT, ss.ss_size);
        }
    }
    let mut fd = -1;
    if hz > 0 {
        let attr = PerfAttr {
            kind: 1,   // PERF_TYPE_SOFTWARE
            size: 64,  // PERF_ATTR_SIZE_VER0
            config: 1, // PERF_COUNT_SW_TASK_CLOCK
            period: 1_000_000_000 / hz,
            flags: 1 | (1 << 5) | (1 << 6), // disabled, exclude_kernel, exclude_hv
            wakeup: 1,
            ..Default::default()
        };
        let tid = gettid();
        unsafe {
            fd = libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfAttr, tid, -1, -1, 8u64) as i32;
            assert!(fd >= 0, "perf_event_open: {}", std::io::Error::last_os_error());
            let owner: [i32; 2] = [0, tid]; // F_OWNER_TID
            assert!(libc::fcntl(fd, 15, owner.as_ptr()) == 0); // F_SETOWN_EX
            assert!(libc::fcntl(fd, 10, libc::SIGPROF) == 0); // F_SETSIG
            let fl = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_ASYNC);
        }
    }
    let ustack = vec![PAINT; USTACK].into_boxed_slice(); // written: no page fault in the handler
    let ctx = Box::into_raw(Box::new(ThreadCtx { cache: CacheX86_64::new_in(), stack, alt, fd, ustack }));
    CTX.with(|c| c.set(ctx));
    if fd >= 0 {
        unsafe { libc::ioctl(fd, 0x2400, 0) }; // ENABLE
        for slot in FDS.iter() {
            if slot.compare_exchange(-1, fd, SeqCst, SeqCst).is_ok() {
                break;
            }
        }
    }
    ctx
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn unregister_thread(ctx: *mut ThreadCtx) -> (u64, String) {
    let ctx = unsafe { &*ctx };
    for slot in FDS.iter() {
        let _ = slot.compare_exchange(ctx.fd, -1, SeqCst, SeqCst);
    }
    if ctx.fd >= 0 {
        unsafe {
            libc::ioctl(ctx.fd, 0x2401, 0); // DISABLE
            libc::close(ctx.fd);
        }
    }
    // Deepest use of the (painted) alternate stack.
    let mut used = 0;
    if ctx.alt.1 > ctx.alt.0 {
        let s = unsafe { std::slice::from_raw_parts(ctx.alt.0 as *const u8, (ctx.alt.1 - ctx.alt.0) as usize) };
        let untouched = s.iter().take_while(|&&b| b == PAINT).count();
        used = s.len() - untouched;
    }
    let st = ctx.cache.stats();
    let uused = USTACK - ctx.ustack.iter().take_while(|&&b| b == PAINT).count();
    (used as u64, format!("alt stack size {} B; unwind stack used {uused} B of {USTACK}; cache hits {} misses {}", ctx.alt.1 - ctx.alt.0, st.hits(), st.misses()))
}

fn cpu_time() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Wall mode's blocked threads: the watcher unwinds them itself from /proc's (pc, sp), with
/// its own cache and the blocked thread's bounds, no signal. Returns (frames, ok).
fn unwind_blocked(
    tid: i32,
    stack: (u64, u64),
    cache: &mut CacheX86_64<Policy>,
    out: &mut [u64],
) -> Option<usize> {
    let path = format!("/proc/self/task/{tid}/syscall");
    let before = std::fs::read_to_string(&path).ok()?;
    let f: Vec<&str> = before.split_whitespace().collect();
    if f.first() == Some(&"running") || f.len() < 9 {
        return None;
    }
    let sp = u64::from_str_radix(f[7].trim_start_matches("0x"), 16).ok()?;
    let pc = u64::from_str_radix(f[8].trim_start_matches("0x"), 16).ok()?;
    let mut ctx = ThreadCtx {
        cache: std::mem::take(cache),
        stack,
        alt: (0, 0),
        fd: -1,
        ustack: Box::new([]),
    };
    let n = unwind(&mut ctx, pc, sp, 0, out);
    *cache = ctx.cache;
    // Torn: the thread ran while we read its stack.
    if std::fs::read_to_string(&path).ok()? != before {
        WALL_TORN.fetch_add(1, Relaxed);
        return Some(1);
    }
    Some(n)
}
static WALL_TORN: AtomicU64 = AtomicU64::new(0);

#[inline(never)]
fn blocked_sleeper() {
    std::thread::sleep(Duration::from_millis(3));
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mode = match a.get(1).map(|s| s.as_str()).unwrap_or("stack") {
        "none" => 0,
        "flat" => 1,
        "stack" => 2,
        "selftest" => 3,
        "fp" => 4,
        m => panic!("mode {m}"),
    };
    let hz: u64 = a.get(2).map_or(1000, |s| s.parse().unwrap());
    let depth: usize = a.get(3).map_or(32, |s| s.parse().unwrap());
    let secs: f64 = a.get(4).map_or(3.0, |s| s.parse().unwrap());
    let out = a.get(5).cloned();
    let threads: usize = std::env::var("THREADS").ok().map_or(2, |s| s.parse().unwrap());
    assert!(depth >= 1 && depth <= 64);
    MODE.store(mode, Relaxed);
    DEPTH.store(depth, Relaxed);

    let t_setup = Instant::now();
    modules::refresh();
    let setup_unwinder = t_setup.elapsed();
    unsafe { TABLE = Some(table::StackTable::new(1 << 14, depth)) };
    unsafe { DUR = Some((0..NDUR).map(|_| std::sync::atomic::AtomicU32::new(1)).collect()) };
    install();
    let tsc0 = (rdtsc(), Instant::now());
    let cpu0 = cpu_time();

    // The watcher: picks up dlopen'ed objects (a pointer swap of a new immutable unwinder).
    // WALL=1: a thread that sleeps, whose stacks the watcher takes from /proc (wall mode).
    let wall = std::env::var("WALL").is_ok();
    let blocked: std::sync::Arc<std::sync::Mutex<Option<(i32, (u64, u64))>>> = Default::default();
    let sleeper = wall.then(|| {
        let b = blocked.clone();
        std::thread::spawn(move || {
            let ctx = register_thread(0);
            *b.lock().unwrap() = Some((gettid(), unsafe { (*ctx).stack }));
            while !STOP.load(Relaxed) {
                blocked_sleeper();
            }
        })
    });
    if std::env::var("ALTERNATE").is_ok() {
        std::thread::spawn(move || {
            let mut ph = 0usize;
            while !STOP.load(Relaxed) {
                // none: events disabled; flat and stack: enabled, handler mode switched
                let on = ph != 0;
                if on {
                    MODE.store(if ph == 1 { 1 } else { mode }, SeqCst);
                }
                for f in FDS.iter() {
                    let fd = f.load(SeqCst);
                    if fd >= 0 {
                        unsafe { libc::ioctl(fd, if on { 0x2400 } else { 0x2401 }, 0) };
                    }
                }
                PHASE.store(ph, SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                PHASE.store(usize::MAX, SeqCst);
                ph = (ph + 1) % 3;
            }
        });
    }
    let watcher = std::thread::spawn(move || {
        let mut cache = CacheX86_64::<Policy>::new_in();
        let mut out = [0u64; 64];
        let (mut n, mut t, mut frames) = (0u64, Duration::ZERO, 0usize);
        while !STOP.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(if wall { 1 } else { 20 }));
            modules::refresh();
            let target = *blocked.lock().unwrap();
            if let Some((tid, stack)) = target {
                let t0 = Instant::now();
                if let Some(k) = unwind_blocked(tid, stack, &mut cache, &mut out) {
                    t += t0.elapsed();
                    n += 1;
                    frames += k;
                    #[allow(static_mut_refs)]
                    unsafe { TABLE.as_ref().unwrap() }.insert(&out[..k]);
                }
            }
        }
        if n > 0 {
            eprintln!(
                "wall: {n} blocked-thread stacks taken by the watcher, {:.1} us each (two /proc reads + unwind), {:.1} frames, torn {}",
                t.as_secs_f64() * 1e6 / n as f64,
                frames as f64 / n as f64,
                WALL_TORN.load(Relaxed)
            );
        }
    });
    let dl = std::env::var("DLOPEN").ok();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    // STRESS=1: thread kinds from issue 14's "bad input": (id % 4) 1 = deep recursion on a
    // 64 KiB stack, 2 = vDSO calls, 3 = JIT-like anonymous code; 0 = the 9:1 workload.
    let stress = std::env::var("STRESS").is_ok();
    let jit = workload::jit_fn();
    let work = move |id: usize| {
        let ctx = register_thread(if mode == 0 { 0 } else { hz });
        let mut rounds = 0u64;
        let mut acc = 0u64;
        let kind = match std::env::var("KIND") {
            Ok(k) => k.parse().unwrap(),
            Err(_) if stress => id % 4,
            Err(_) => 0,
        };
        while Instant::now() < deadline {
            let (ph, c0) = (PHASE.load(Relaxed), thread_cpu_ns());
            acc ^= match kind {
                1 => workload::recurse(200, rounds),
                2 => workload::vdso_loop(),
                3 => workload::jit_caller(jit),
                _ => workload::round(rounds ^ (id as u64) << 32),
            };
            rounds += 1;
            if ph < 3 && PHASE.load(Relaxed) == ph {
                ROUNDS_BY_PHASE[ph].fetch_add(1, Relaxed);
                CPU_NS_BY_PHASE[ph].fetch_add(thread_cpu_ns() - c0, Relaxed);
            }
        }
        let (alt_used, cache) = unregister_thread(ctx);
        (rounds, acc, alt_used, cache)
    };
    let mut hs = Vec::new();
    for id in 1..threads {
        let b = std::thread::Builder::new();
        let b = if stress && id % 4 == 1 { b.stack_size(64 * 1024) } else { b };
        hs.push(b.spawn(move || work(id)).unwrap());
    }
    if let Some(lib) = dl {
        // a library loaded during the run: its frames are unwound after the next refresh
        std::thread::sleep(Duration::from_millis(100));
        let c = std::ffi::CString::new(lib).unwrap();
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW) };
        eprintln!("dlopen -> {:?}", h);
    }
    let mut res = vec![work(0)];
    for h in hs {
        res.push(h.join().unwrap());
    }
    STOP.store(true, Relaxed);
    watcher.join().unwrap();
    if let Some(s) = sleeper {
        s.join().unwrap();
    }
    let cpu = cpu_time() - cpu0;
    let tsc1 = (rdtsc(), Instant::now());
    let ghz = (tsc1.0 - tsc0.0) as f64 / (tsc1.1 - tsc0.1).as_nanos() as f64;
    while ACTIVE.load(SeqCst) != 0 {
        std::thread::yield_now();
    }

    let samples = SAMPLES.load(Relaxed);
    let rounds: u64 = res.iter().map(|r| r.0).sum();
    #[allow(static_mut_refs)]
    let t = unsafe { TABLE.as_ref().unwrap() };
    let p = unsafe { &*modules::PUBLISHED.load(Acquire) };
    eprintln!(
        "mode={} hz={hz} depth={depth} threads={threads} secs={secs} rounds={rounds} cpu_s={cpu:.3} rounds_per_cpu_s={:.1}",
        ["none", "flat", "stack", "selftest", "fp"][mode],
        rounds as f64 / cpu
    );
    eprintln!(
        "samples={samples} no_ctx={} handler_ns_mean={:.0} frames_mean={:.1} tsc_ghz={ghz:.3}",
        NO_CTX.load(Relaxed),
        CYCLES.load(Relaxed) as f64 / samples.max(1) as f64 / ghz,
        FRAMES.load(Relaxed) as f64 / samples.max(1) as f64
    );
    let hist: Vec<String> = HIST
        .iter()
        .enumerate()
        .filter(|(_, h)| h.load(Relaxed) > 0)
        .map(|(i, h)| format!("<{}ns:{}", ((256u64 << i) as f64 / ghz) as u64, h.load(Relaxed)))
        .collect();
    eprintln!("handler time histogram: {}", hist.join(" "));
    #[allow(static_mut_refs)]
    {
        let n = DUR_IDX.load(Relaxed).min(NDUR);
        let mut v: Vec<u32> = unsafe { DUR.as_ref().unwrap() }[..n].iter().map(|a| a.load(Relaxed)).collect();
        v.sort_unstable();
        let q = |f: f64| if n == 0 { 0.0 } else { v[((n as f64 - 1.0) * f) as usize] as f64 / ghz };
        eprintln!("handler_ns_quantiles p10={:.0} p50={:.0} p90={:.0} p99={:.0} max={:.0}", q(0.1), q(0.5), q(0.9), q(0.99), q(1.0));
    }
    eprintln!(
        "chain ends: root={} depth_limit={} read_or_rule_error={} not_code={}",
        END_ROOT.load(Relaxed),
        END_DEPTH.load(Relaxed),
        END_READ.load(Relaxed),
        END_NOT_CODE.load(Relaxed)
    );
    eprintln!(
        "table: {} slots used of {} ({} KiB), stacks {}, dropped {}",
        t.used(),
        1 << 14,
        t.bytes() / 1024,
        t.inserted.load(Relaxed),
        t.dropped.load(Relaxed)
    );
    eprintln!(
        "unwinder: {} modules, built in {:?}, retired {} (dlopen refreshes)",
        p.objects.len(),
        setup_unwinder,
        modules::RETIRED.load(Relaxed)
    );
    for (i, r) in res.iter().enumerate() {
        eprintln!("thread {i}: alt stack used {} B; {}", r.2, r.3);
    }
    eprintln!(
        "per-thread memory: gimli UnwindContext {} B (SmallStore) vs {} B (framehop's MustNotAllocateDuringUnwind), rule cache 509 x 16 B, unwind stack {} B",
        std::mem::size_of::<gimli::UnwindContext<usize, policy::Small>>(),
        std::mem::size_of::<gimli::UnwindContext<usize, <framehop::MustNotAllocateDuringUnwind as framehop::AllocationPolicy>::GimliUnwindContextStorage<usize>>>(),
        USTACK
    );
    if ROUNDS_BY_PHASE[0].load(Relaxed) > 0 {
        let cpr = |p: usize| CPU_NS_BY_PHASE[p].load(Relaxed) as f64 / ROUNDS_BY_PHASE[p].load(Relaxed).max(1) as f64;
        let base = cpr(0);
        for (p, name, m) in [(1, "flat", 1usize), (2, "stack", mode)] {
            let samples = SAMPLES_BY_MODE[m].load(Relaxed).max(1) as f64;
            let extra = CPU_NS_BY_PHASE[p].load(Relaxed) as f64 - ROUNDS_BY_PHASE[p].load(Relaxed) as f64 * base;
            eprintln!(
                "alternate {name}: rounds {} cpu/round {:.1} us (none {:.1} us) overhead {:+.2}% samples {} e2e {:.1} us/sample, handler body {:.2} us",
                ROUNDS_BY_PHASE[p].load(Relaxed),
                cpr(p) / 1e3,
                base / 1e3,
                (cpr(p) / base - 1.0) * 100.0,
                samples,
                extra / samples / 1e3,
                CYCLES_BY_MODE[m].load(Relaxed) as f64 / samples / ghz / 1e3
            );
        }
    }
    let allocs = ALLOCS_IN_HANDLER.load(Relaxed);
    eprintln!("allocations inside the handler: {allocs}");

    if let Some(path) = out {
        let t_sym = Instant::now();
        let folded = symbolize::folded(&t.drain(), &p.objects);
        std::fs::write(&path, folded).unwrap();
        eprintln!("symbolised and folded into {path} in {:?}", t_sym.elapsed());
    }
    if mode == 3 {
        assert!(allocs > 0, "selftest: the counter missed a deliberate allocation");
        eprintln!("selftest: the deliberate allocation was counted");
    } else {
        assert_eq!(allocs, 0, "the handler allocated");
    }
}
