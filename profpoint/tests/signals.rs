//! Ctrl-C and `kill` lose nothing: a process ended by SIGINT, SIGTERM or SIGHUP
//! writes its report, then ends exactly as the signal would have ended it; a program's own
//! handler (or ignored signal) stands; a second signal during the report ends the process at
//! once; a signal during the program's own exit report lets it finish, then ends the process.
//!
//! Each scenario runs in a child (this test binary again, its own `main` via libtest-mimic,
//! with `PROFPOINT_TEST_CHILD=<scenario>`): the signals end processes.

mod common;

#[cfg(unix)]
#[path = "signals/unix.rs"]
mod unix;

#[cfg(unix)]
fn main() {
    unix::main();
}

#[cfg(not(unix))]
fn main() {
    println!(
        "SKIPPED signals: the report on SIGINT, SIGTERM and SIGHUP is Unix only (Windows: not yet)"
    );
}
