//! The sandbox tests themselves (Linux: seccomp); `tests/sandbox.rs` runs them.

use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};

profpoint::tracepoint!(fn guarded(x: u64));
profpoint::tracepoint!(fn stuck(x: u64));
profpoint::tracepoint!(fn fragile(x: u64));

/// Makes `mremap` fail with EPERM for the calling thread (and threads it creates later), or
/// says why it cannot: qemu-user refuses `PR_SET_SECCOMP` (EINVAL) so that a guest cannot
/// filter the system calls the emulator itself makes.
fn deny_mremap() -> Result<(), String> {
    // Classic BPF: load the syscall number (offset 0 of seccomp_data), compare with mremap,
    // return ERRNO(EPERM) on a match, ALLOW otherwise.
    const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const BPF_JMP_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    let filter = [
        libc::sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: BPF_JMP_JEQ_K,
            jt: 0,
            jf: 1,
            k: libc::SYS_mremap as u32,
        },
        libc::sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ALLOW,
        },
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers; PR_SET_SECCOMP reads the live `prog`
    // (and the filter it points to) during the call only.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const _,
        ) != 0
        {
            return Err(format!(
                "prctl(PR_SET_SECCOMP) failed: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    // The filter works: an mremap of nothing is refused with EPERM, not EFAULT/EINVAL.
    // SAFETY: a null old address makes the kernel fail the call; nothing is mapped or moved.
    let r = unsafe { libc::mremap(std::ptr::null_mut(), 4096, 4096, 0) };
    assert_eq!(r, libc::MAP_FAILED);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EPERM)
    );
    Ok(())
}

/// In a child: installs the filter, or prints why it cannot (the parent then prints SKIPPED)
/// and returns false.
fn deny_mremap_or_say() -> bool {
    match deny_mremap() {
        Ok(()) => true,
        Err(why) => {
            println!("SKIPPED: no seccomp filter on this system: {why}");
            false
        }
    }
}

/// In the parent: true (and the child's SKIPPED line printed) when the child could not
/// install the filter.
fn skipped(name: &str, out: &str) -> bool {
    match out.lines().find(|l| l.starts_with("SKIPPED: ")) {
        Some(line) => {
            println!("SKIPPED {name}: {}", &line["SKIPPED: ".len()..]);
            true
        }
        None => false,
    }
}

fn info(name: &str) -> profpoint::tracepoint::TracepointInfo {
    profpoint::tracepoints()
        .into_iter()
        .find(|t| t.name.ends_with(name))
        .unwrap()
}

fn run_child(name: &str, report: &std::path::Path) -> Output {
    crate::common::runner::target_command(std::env::current_exe().unwrap())
        .env("PROFPOINT_TEST_CHILD", name)
        .env(
            "PROFPOINT_REPORT",
            format!("stderr,json:{}", report.display()),
        )
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("profpoint-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The JSON report's row of the tracepoint whose name ends with `name`.
fn json_row(path: &std::path::Path, name: &str) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["tracepoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"].as_str().unwrap().ends_with(name))
        .unwrap()
        .clone()
}

static CALLS: AtomicU64 = AtomicU64::new(0);

fn child(scenario: &str) {
    match scenario {
        "child_register_denied" => {
            if !deny_mremap_or_say() {
                return;
            }
            let r = register_trace_guarded(|_| {
                CALLS.fetch_add(1, Ordering::Relaxed);
            });
            match &r {
                Ok(_) => println!("register: ok"),
                Err(e) => println!("register: error: {e}"),
            }
            for i in 0..10 {
                trace_guarded(i); // the program goes on; the site stays off
            }
            let t = info("::guarded");
            println!(
                "enabled={} probes={} hits={} calls={}",
                t.enabled,
                t.probes,
                t.hits,
                CALLS.load(Ordering::Relaxed)
            );
            drop(r);
        }
        "child_switch_off_denied" => {
            let h = register_trace_stuck(|_| {
                CALLS.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
            for i in 0..5 {
                trace_stuck(i);
            }
            println!("before: calls={}", CALLS.load(Ordering::Relaxed));
            if !deny_mremap_or_say() {
                return;
            }
            drop(h); // the probe goes; the site cannot be switched back to the nop
            for i in 0..5 {
                trace_stuck(i);
            }
            let t = info("::stuck");
            println!(
                "after: enabled={} probes={} hits={} calls={} error={:?}",
                t.enabled,
                t.probes,
                t.hits,
                CALLS.load(Ordering::Relaxed),
                t.error
            );
        }
        "child_probe_panics" => {
            let _h = register_trace_fragile(|x| {
                if x < 1_000 {
                    panic!("probe failed on {x}");
                }
            })
            .unwrap();
            for i in 0..400 {
                trace_fragile(i);
            }
            println!("after: probe_panics={}", info("::fragile").probe_panics);
        }
        other => panic!("unknown child scenario {other:?}"),
    }
}

fn register_is_refused_with_seccomp_named() {
    let json = temp("register.json");
    let o = run_child("child_register_denied", &json);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    if skipped("register_is_refused_with_seccomp_named", &out) {
        return;
    }
    if !profpoint::tracepoint::key::STATIC_KEYS {
        // The portable key patches nothing: the filter is irrelevant and the probe runs.
        assert!(out.contains("register: ok"), "{out}");
        assert!(
            out.contains("enabled=true probes=1 hits=10 calls=10"),
            "{out}"
        );
        return;
    }
    // register returned an error naming seccomp and EPERM, not a W^X policy.
    let line = out
        .lines()
        .find(|l| l.starts_with("register: "))
        .unwrap_or_default();
    assert!(
        line.starts_with(
            "register: error: probe not registered: tracepoint sandbox::linux::guarded cannot be enabled"
        ),
        "{out}"
    );
    assert!(line.contains("mremap failed"), "{line}");
    assert!(line.contains("seccomp") && line.contains("EPERM"), "{line}");
    assert!(!line.contains("W^X"), "{line}");
    assert!(line.contains("`tracepoint-atomic` feature"), "{line}");
    // No probe, the site stayed off, nothing called, nothing counted.
    assert!(
        out.contains("enabled=false probes=0 hits=0 calls=0"),
        "{out}"
    );
    // One line on stderr when it happened, and the report's Tracepoints section says it.
    assert_eq!(
        err.matches("profpoint: tracepoint sandbox::linux::guarded cannot be enabled")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("Tracepoints ("), "{err}");
    assert!(
        err.lines().any(
            |l| l.starts_with("tracepoint sandbox::linux::guarded cannot be enabled")
                && l.contains("seccomp")
        ),
        "{err}"
    );
    let row = json_row(&json, "::guarded");
    assert_eq!(row["enabled"], false, "{row}");
    assert!(row["error"].as_str().unwrap().contains("seccomp"), "{row}");
    std::fs::remove_file(&json).ok();
}

fn switching_off_under_a_later_denial_is_said() {
    let json = temp("off.json");
    let o = run_child("child_switch_off_denied", &json);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("before: calls=5"), "{out}");
    if skipped("switching_off_under_a_later_denial_is_said", &out) {
        return;
    }
    if !profpoint::tracepoint::key::STATIC_KEYS {
        assert!(
            out.contains("after: enabled=false probes=0 hits=5 calls=5 error=None"),
            "{out}"
        );
        return;
    }
    // The probe is gone (never called again), but the site still jumps to the hook: the key
    // says on, the hits go on counting, and the error says why.
    assert!(
        out.contains("after: enabled=true probes=0 hits=10 calls=5 error=Some("),
        "{out}"
    );
    assert!(out.contains("cannot be switched off"), "{out}");
    assert_eq!(
        err.matches("profpoint: tracepoint sandbox::linux::stuck cannot be switched off")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("seccomp") && err.contains("EPERM"), "{err}");
    assert!(!err.contains("cannot be enabled"), "{err}");
    // The report's Tracepoints section shows it on, with the reason under the table.
    assert!(err.contains("Tracepoints ("), "{err}");
    assert!(
        err.lines()
            .any(|l| l.trim_start().starts_with("on") && l.contains("sandbox::linux::stuck")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("tracepoint sandbox::linux::stuck cannot be switched off")),
        "{err}"
    );
    let row = json_row(&json, "::stuck");
    assert_eq!(row["enabled"], true, "{row}");
    assert_eq!(row["hits"], 10, "{row}");
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .contains("cannot be switched off"),
        "{row}"
    );
    std::fs::remove_file(&json).ok();
}

/// Hostile hosts: a probe that panics on every call (400 calls, `RUST_BACKTRACE=1`): the
/// first 3 panics are printed in full by the panic hook, then one line each; the program goes
/// on and the report counts them.
fn a_panicking_probe_prints_one_line_per_panic_after_the_first_few() {
    let json = temp("panics.json");
    let o = crate::common::runner::target_command(std::env::current_exe().unwrap())
        .env("PROFPOINT_TEST_CHILD", "child_probe_panics")
        .env(
            "PROFPOINT_REPORT",
            format!("stderr,json:{}", json.display()),
        )
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("after: probe_panics=400"), "{out}");
    // The hook's message (and backtrace) for the first 3 only.
    assert_eq!(err.matches("panicked at").count(), 3, "{err}");
    assert_eq!(
        err.matches(
            "profpoint: a probe of tracepoint sandbox::linux::fragile panicked; the program goes on"
        )
        .count(),
        1,
        "{err}"
    );
    // Then one line per panic: 397 of them, the last naming the count.
    assert_eq!(err.matches("panicked again (").count(), 397, "{err}");
    assert!(err.contains("panicked again (400 times so far"), "{err}");
    // Bounded: 3 backtraces (tens of lines each) plus one line per later panic and the table.
    assert!(
        err.lines().count() < 400 + 3 * 100 + 50,
        "{}",
        err.lines().count()
    );
    assert!(
        err.contains("tracepoint sandbox::linux::fragile: its probes panicked 400 times"),
        "{err}"
    );
    assert_eq!(json_row(&json, "::fragile")["probe_panics"], 400);
    std::fs::remove_file(&json).ok();
}

pub(crate) fn main() {
    if let Ok(scenario) = std::env::var("PROFPOINT_TEST_CHILD") {
        child(&scenario);
        return;
    }
    let args = libtest_mimic::Arguments::from_args();
    let tests = vec![
        libtest_mimic::Trial::test(
            "a_panicking_probe_prints_one_line_per_panic_after_the_first_few",
            || {
                a_panicking_probe_prints_one_line_per_panic_after_the_first_few();
                Ok(())
            },
        ),
        libtest_mimic::Trial::test("register_is_refused_with_seccomp_named", || {
            register_is_refused_with_seccomp_named();
            Ok(())
        }),
        libtest_mimic::Trial::test("switching_off_under_a_later_denial_is_said", || {
            switching_off_under_a_later_denial_is_said();
            Ok(())
        }),
    ];
    libtest_mimic::run(&args, tests).exit();
}
