//! The calibration run at start: the loop on a thread of its own, and the fixed cost every
//! window carries measured from the windows that began and ended in it ([`Calibration`]).

use super::super::calibration::{Calibration, in_calibration_loop};
use super::super::calibration_loop;
use super::super::window::{Window, overlong};
use super::handler::{RECORDS, Shared, load};
use super::watcher::Threads;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Fewer calibration windows than this measure nothing worth subtracting.
pub(super) const MIN_CALIBRATION_WINDOWS: usize = 5;

/// Runs the calibration loop on this thread (which must have its group) for ~100 ms and
/// measures the fixed extra counts of windows that began and ended in it.
fn calibrate(shared: *mut Shared, stopping: &AtomicBool) -> Calibration {
    // SAFETY: alive while the sampler runs (stop joins this thread before freeing it).
    let s = unsafe { &*shared };
    let from = s.next.load(Ordering::Relaxed);
    let t = std::time::Instant::now();
    // A program that ends sooner stops it early (with fewer windows measured).
    // Relaxed: a stop flag.
    while t.elapsed() < Duration::from_millis(100) && !stopping.load(Ordering::Relaxed) {
        calibration_loop(1_000_000);
    }
    let to = s.next.load(Ordering::Relaxed).min(RECORDS);
    let inside = in_calibration_loop;
    let windows: Vec<Window> = (from..to)
        .map(|i| load(s, i))
        .filter(|w| inside(w.start_pc) && inside(w.end_pc))
        .collect();
    let mut c = Calibration::default();
    c.windows = windows.len() as u64;
    // Too few windows to say what a window's fixed cost is (the program ended before the
    // calibration could run its course): nothing is subtracted, and the report says so.
    if windows.len() < MIN_CALIBRATION_WINDOWS {
        return c;
    }
    // The leader: observed minus asked, the median (a window whose overflow came late, as a
    // software clock firing in the kernel does, would pull a mean up).
    let mut extra: Vec<f64> = windows
        .iter()
        .map(|w| w.deltas[0] as f64 - w.asked as f64)
        .collect();
    extra.sort_by(f64::total_cmp);
    c.fixed[0] = extra[extra.len() / 2].max(0.0);
    // The other counters: means over the windows that were not late.
    let windows: Vec<Window> = windows
        .into_iter()
        .filter(|w| !overlong(w, c.fixed[0]))
        .collect();
    let n = windows.len().max(1) as f64;
    let mean = |k: usize| windows.iter().map(|w| w.deltas[k] as f64).sum::<f64>() / n;
    // Instructions: observed minus what the loop's own IPC (from the long periods, where the
    // fixed cost is negligible) gives for the requested cycles.
    let lc: f64 = windows.iter().map(|w| w.long[0] as f64).sum();
    let li: f64 = s
        .instructions_at
        .map_or(0.0, |k| windows.iter().map(|w| w.long[k] as f64).sum());
    let ipc = if lc > 0.0 { li / lc } else { 0.0 };
    for k in 1..=s.nmembers {
        c.fixed[k] = mean(k);
    }
    // The loop itself retires instructions (and nothing else of note): only that counter
    // gets the loop's own share taken out.
    if let Some(k) = s.instructions_at {
        let asked = windows.iter().map(|w| w.asked as f64).sum::<f64>() / n;
        c.fixed[k] = (mean(k) - ipc * asked).max(0.0);
    }
    c
}

/// Starts the calibration on a thread of its own: it waits (up to 2 s) for the watcher to give
/// that thread its group, then runs [`calibrate`]. `start` returns without waiting for it.
pub(super) fn spawn_calibrator(
    threads: Threads,
    shared: *mut Shared,
    stopping: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<Calibration>> {
    let shared_addr = shared as usize;
    std::thread::Builder::new()
        .name("pmu-calibration".into())
        .spawn(move || {
            let me = crate::sys::gettid();
            let t0 = std::time::Instant::now();
            let has_group = || {
                threads
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .any(|(t, _)| *t == me)
            };
            while !has_group() {
                if t0.elapsed() > Duration::from_secs(2) {
                    return Calibration::default();
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            calibrate(shared_addr as *mut Shared, &stopping)
        })
}
