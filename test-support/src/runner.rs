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
