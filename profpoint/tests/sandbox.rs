//! Sandboxes (a hostile host): a seccomp filter that denies `mremap` with EPERM, as a
//! container or sandbox profile does. Static-key tracepoints patch code through `mremap`, so:
//! the error names seccomp and EPERM (not W^X), `register` returns an error (and no probe),
//! switching a site off under a denial that started later is said (never silent), and the
//! report keeps its Tracepoints section saying what happened. Also (item 9) a probe that
//! panics on every call: bounded output, and the panics counted in the report.
//!
//! The filter is real and stays in a child: this test binary (its own `main`, via
//! libtest-mimic) re-runs itself with `PROFPOINT_TEST_CHILD=<scenario>`. The filter applies
//! to the thread that installs it (no TSYNC), which is the thread that registers the probes.

mod common;

#[cfg(target_os = "linux")]
#[path = "sandbox/linux.rs"]
mod linux;

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("SKIPPED sandbox: seccomp filters and code patching through mremap are Linux only");
}
