//! The heatmap sampler as part of the one report (feature `heatmap`).
//!
//! `PROFPOINT_HEATMAP=1` (or `cpu`, `wall`; with `PROFPOINT_HZ`, `PROFPOINT_SHIFT`) starts the
//! `heatmap` sampler before `main` with no code change; [`crate::start_heatmap`] starts it
//! from code. While it runs, every report carries its top functions; at exit it is stopped
//! (restoring the signal disposition it took) and its final profile goes into the exit report.
//! `PROFPOINT_HEATMAP_TOP` (rows, default 20) and `PROFPOINT_HEATMAP_EXCLUDE` (comma-separated
//! globs of function names) shape that section.

use crate::env;
use std::sync::Mutex;

static SAMPLER: Mutex<Option<heatmap::Sampler>> = Mutex::new(None);
static PMU: Mutex<Option<heatmap::pmu::PmuSampler>> = Mutex::new(None);

/// Starts the hardware-metrics sampler if `PROFPOINT_PMU=1`; returns whether it was asked
/// for (a report is then due even if it could not start). Errors
/// (no PMU, `perf_event_paranoid`, seccomp) are one line on stderr naming the cause and the
/// fix; the program and the rest of the report go on.
pub(crate) fn start_pmu_from_env() -> bool {
    let config = match env::pmu_config(env::var) {
        Ok(Some(c)) => c,
        Ok(None) => return false,
        Err(e) => {
            crate::diag::warn_line!("profpoint: {e}; no per-function metrics (PROFPOINT_PMU)");
            return false;
        }
    };
    let hardware = config.clock == heatmap::pmu::Event::Cycles;
    match heatmap::pmu::start(config) {
        Ok(s) => {
            *PMU.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
            true
        }
        Err(heatmap::pmu::PmuError::SignalInUse(sig)) if let Some(other) = copy_handling(sig) => {
            crate::diag::warn_line!(
                "profpoint ({}): PROFPOINT_PMU: the per-function metrics are already sampled by \
                 the profpoint copy in {other}, whose report has them; this copy's report has \
                 no such section",
                crate::runtime::copies::own_name()
            );
            true
        }
        // No PMU at all: the software mode runs the same windows on the CPU clock instead.
        Err(e @ heatmap::pmu::PmuError::NoPmu(_)) if hardware => {
            crate::diag::warn_line!("profpoint: PROFPOINT_PMU: {e}{NO_PMU_HINT}");
            true
        }
        Err(e) => {
            crate::diag::warn_line!("profpoint: PROFPOINT_PMU: {e}");
            true
        }
    }
}

/// Appended to the line that says the hardware mode found no PMU.
const NO_PMU_HINT: &str =
    "; or try PROFPOINT_PMU=software (the same windows on the CPU clock, no PMU needed)";

/// Stops the per-function metrics sampler (only when `stop`: it has no snapshot) and returns
/// its windows, not yet symbolised.
pub(crate) fn pmu_profile(stop: bool) -> Option<heatmap::pmu::PmuProfile> {
    if !stop {
        return None;
    }
    let sampler = PMU.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    Some(sampler.stop())
}

/// The object of the other profpoint copy whose handler holds signal `sig`, if one does
/// (signals exist on Unix only).
#[cfg(not(unix))]
fn copy_handling(_sig: libc::c_int) -> Option<String> {
    None
}

/// The object of the other profpoint copy whose handler holds signal `sig`, if one does.
#[cfg(unix)]
fn copy_handling(sig: libc::c_int) -> Option<String> {
    // SAFETY: `sigaction` is plain data, for which all-zero bytes are a valid value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query only (null new action); `old` is a valid, writable sigaction.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return None;
    }
    crate::runtime::copies::other_copy_at(old.sa_sigaction)
}

/// Both sections of a report. At exit (`stop`) both samplers stop before either is
/// symbolised: symbolising is the profiler's own work and must not land in the other's samples.
pub(crate) fn reports(stop: bool) -> (Option<heatmap::Report>, Option<heatmap::pmu::PmuReport>) {
    let pmu = pmu_profile(stop);
    let heat = heatmap_profile(stop);
    (
        heat.map(|p| p.report(&options())),
        pmu.map(|p| p.report(30)),
    )
}

fn sampler() -> std::sync::MutexGuard<'static, Option<heatmap::Sampler>> {
    // A panic while holding the lock leaves either a sampler or none: both are consistent.
    SAMPLER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the sampler if the environment asks; returns whether it was asked for (a report is
/// then due even if it could not start). Errors are one line on stderr: the program keeps
/// running without a heatmap.
pub(crate) fn start_from_env() -> bool {
    let config = match env::heatmap_config(env::var) {
        Ok(Some(c)) => c,
        Ok(None) => return false,
        Err(e) => {
            crate::diag::warn_line!("profpoint: {e}; no heatmap");
            return false;
        }
    };
    // A rate above what the sampler serves is clamped by it: one line at start-up says so.
    if config.get_hz() > heatmap::MAX_SERVED_HZ {
        crate::diag::warn_line!(
            "profpoint: PROFPOINT_{}",
            heatmap::served_rate_warning(config.get_hz()).replacen("hz=", "HZ=", 1)
        );
    }
    // Called from the initialiser: inside `dlopen` that runs under glibc's loader lock, which
    // the watcher thread needs before it can scan, so waiting for it would deadlock the host.
    match start(config.wait_for_first_scan(false)) {
        Ok(()) => true,
        Err(heatmap::StartError::SignalInUse { handler })
            if let Some(other) = crate::runtime::copies::other_copy_at(handler) =>
        {
            // Not "another profiler": the host's (or another library's) own profpoint.
            crate::diag::warn_line!(
                "profpoint ({}): PROFPOINT_HEATMAP: the process is already sampled by the \
                 profpoint copy in {other}, whose report has the heatmap; this copy's report \
                 has no heatmap section",
                crate::runtime::copies::own_name()
            );
            true
        }
        Err(e) => {
            crate::diag::warn_line!(
                "profpoint: PROFPOINT_HEATMAP: the sampler could not start: {e}"
            );
            true
        }
    }
}

/// Starts the sampler under profpoint's control (see [`crate::start_heatmap`]).
pub(crate) fn start(config: heatmap::Config) -> Result<(), heatmap::StartError> {
    let mut s = sampler();
    if s.is_some() {
        return Err(heatmap::StartError::AlreadyRunning);
    }
    *s = Some(heatmap::start(config)?);
    Ok(())
}

/// Why [`profile_for`] took no profile.
#[cfg(feature = "serve")]
pub(crate) enum ProfileError {
    /// The heatmap already runs for the whole process (`PROFPOINT_HEATMAP`, `start_heatmap`):
    /// its profile is in every report.
    Taken(String),
    /// The sampler cannot run here (its start failed), or the process began its exit report
    /// meanwhile (which took the sampler).
    Unavailable(String),
}

/// A profile of a window: the sampler's report, and when the window began (Unix
/// nanoseconds) and how long it lasted.
#[cfg(feature = "serve")]
pub(crate) struct Window {
    pub(crate) report: heatmap::Report,
    pub(crate) start_unix_ns: u64,
    pub(crate) duration_ns: u64,
}

/// A heatmap of the next `d` (the `serve` feature's `/debug/pprof/profile`): the sampler is
/// started at the default rate, left to run for `d` and stopped. `Err` says why not.
#[cfg(feature = "serve")]
pub(crate) fn profile_for(d: std::time::Duration) -> Result<Window, ProfileError> {
    // Stacks as the environment says (on by default where available), so the profile's pprof
    // has call chains; a bad value is said once and the profile goes flat.
    let config = match env::stacks(&env::var) {
        Ok(Some(depth)) => heatmap::Config::default().stacks(depth),
        Ok(None) => heatmap::Config::default(),
        Err(e) => {
            env::warn(&e, "flat samples");
            heatmap::Config::default()
        }
    };
    let start_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_nanos() as u64);
    let began = std::time::Instant::now();
    start(config).map_err(|e| match e {
        heatmap::StartError::AlreadyRunning => ProfileError::Taken(
            "the heatmap already runs for the whole process (PROFPOINT_HEATMAP or \
             start_heatmap): its profile is in /debug/profpoint and the exit report"
                .to_string(),
        ),
        e => ProfileError::Unavailable(format!("the sampler cannot run here: {e}")),
    })?;
    std::thread::sleep(d);
    let profile = heatmap_profile(true).ok_or_else(|| {
        ProfileError::Unavailable(
            "the process began its exit report, which took the sampler".to_string(),
        )
    })?;
    let duration_ns = began.elapsed().as_nanos() as u64;
    Ok(Window {
        report: profile.report(&options()),
        start_unix_ns,
        duration_ns,
    })
}

/// How the heatmap section is shaped, from the environment.
fn options() -> heatmap::ReportOptions {
    // No wrapper globs: `#[profile_point]` leaves an annotated function's body in the
    // function itself, so its samples land on it; samples in profpoint's own two calls are
    // profpoint's cost and are shown as such.
    let mut opts = heatmap::ReportOptions::default();
    if let Some(v) = env::var("PROFPOINT_HEATMAP_TOP") {
        match v.trim().parse::<usize>() {
            Ok(n) if (1..=100_000).contains(&n) => opts.top = n,
            _ => env::warn(
                &env::EnvError {
                    var: "PROFPOINT_HEATMAP_TOP",
                    value: v,
                    expected: env::expected("PROFPOINT_HEATMAP_TOP"),
                },
                "20",
            ),
        }
    }
    // The per-function metrics' calibration (~100 ms of CPU at its start) is the profiler's
    // own work, not the program's.
    opts.exclude = vec![heatmap::pmu::CALIBRATION_LOOP.to_owned()];
    if let Some(v) = env::var("PROFPOINT_HEATMAP_EXCLUDE") {
        match env::parse_globs("PROFPOINT_HEATMAP_EXCLUDE", &v) {
            Ok(globs) => opts.exclude.extend(globs),
            Err(e) => env::warn(&e, "no exclusion"),
        }
    }
    opts
}

/// The heatmap's profile: stopped (`stop`) or a snapshot of the running sampler.
fn heatmap_profile(stop: bool) -> Option<heatmap::Profile> {
    let mut s = sampler();
    if stop {
        // Only the exit report stops it (`reports`): a SIGPROF that was SIG_DFL stays ignored.
        Some(s.take()?.stop_for_exit())
    } else {
        Some(s.as_ref()?.snapshot())
    }
}
