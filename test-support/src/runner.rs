//! Starting binaries of this build under the target's runner (see [`target_command`]).

/// A command that runs `exe`, a binary of this build (this test binary, or one cargo built
/// beside it), the way cargo runs the tests: through the target's runner when one is set, e.g.
/// `CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"`
/// (`scripts/test-aarch64`). Without it, a child of a test run under an emulator would be
/// started natively and fail to exec.
pub fn target_command(exe: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    // The variable cargo reads for this target; only the cross-tested target has one here.
    let var = if cfg!(all(
        target_arch = "aarch64",
        target_os = "linux",
        target_env = "gnu"
    )) {
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER"
    } else {
        return std::process::Command::new(exe);
    };
    let runner = std::env::var(var).unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(words).arg(exe);
            cmd
        }
        None => std::process::Command::new(exe),
    }
}

/// The variable that marks a test's own child process (see [`in_own_process`]).
const CHILD: &str = "PROFPOINT_TEST_OWN_PROCESS";

/// For tests that need the process to themselves (a process-wide state such as the overhead
/// budget): `true` when this process is the test's own, and the test should run here. Under
/// cargo-nextest every test has its own process already. Under a plain `cargo test`, which
/// runs a binary's tests as threads of one process, this runs the test `name` (its path in the
/// binary, as `--exact` takes it) alone in a child of this binary, fails if the child failed,
/// and returns `false`: the caller then returns without running the test a second time.
pub fn in_own_process(name: &str) -> bool {
    if std::env::var_os("NEXTEST_EXECUTION_MODE").is_some_and(|m| m == "process-per-test")
        || std::env::var_os(CHILD).is_some()
    {
        return true;
    }
    let out = target_command(std::env::current_exe().expect("the test binary's path"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("could not start the test binary again");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "`{name}` in a process of its own: {}\nstdout:\n{text}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}
