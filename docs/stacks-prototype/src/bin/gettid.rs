//! Cost of the gettid system call here (how a process-directed sample, setitimer's, would find
//! its thread's context).
fn main() {
    let n = 1_000_000;
    let t = std::time::Instant::now();
    let mut acc = 0i64;
    for _ in 0..n {
        acc = acc.wrapping_add(unsafe { libc::syscall(libc::SYS_gettid) });
    }
    println!("gettid: {:.0} ns per call ({acc})", t.elapsed().as_nanos() as f64 / n as f64);
}
