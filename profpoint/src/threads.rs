//! profpoint's own threads ([`spawn_quiet`]): the budget's controller, the signal and periodic
//! report threads, the live server's. They take no signal meant for the program.

/// Spawns one of profpoint's threads with the program's asynchronous signals blocked (the
/// synchronous faults and the samplers' signals stay deliverable), so that a signal directed at the process goes to one of the
/// program's threads: a program that blocks a signal in all its threads to `sigwait` for it
/// still gets it, and one whose default action ends the process is not taken by us.
pub(crate) fn spawn_quiet<F, T>(
    builder: std::thread::Builder,
    f: F,
) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    #[cfg(unix)]
    {
        // SAFETY: sigset_t values initialised by sigfillset/sigemptyset before use;
        // pthread_sigmask changes only the calling thread's mask, restored below.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            // Left deliverable: the synchronous faults, and the samplers' signals (the heatmap's
            // SIGPROF, the hardware-metrics windows' real-time signal), which are sent to
            // each thread and would otherwise stay pending there (real-time ones queue).
            for s in [
                libc::SIGSEGV,
                libc::SIGBUS,
                libc::SIGFPE,
                libc::SIGILL,
                libc::SIGTRAP,
                libc::SIGSYS,
                libc::SIGPROF,
            ] {
                libc::sigdelset(&mut all, s);
            }
            #[cfg(any(target_os = "linux", target_os = "android"))]
            for s in libc::SIGRTMIN()..=libc::SIGRTMAX() {
                libc::sigdelset(&mut all, s);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
            let spawned = builder.spawn(f);
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            spawned
        }
    }
    #[cfg(not(unix))]
    builder.spawn(f)
}
