//! What a run records: its windows ([`Window`], one per short window) and the run's data
//! ([`PmuProfile`]), with the test that marks a window too late to credit.

use super::calibration::Calibration;
use super::config::PmuConfig;
use super::events::MAX_MEMBERS;

/// One measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    /// pc where the window began.
    pub start_pc: u64,
    /// pc where it ended.
    pub end_pc: u64,
    /// The window's length as asked of the kernel (jittered), in the leader's unit.
    pub asked: u64,
    /// Counter deltas over the window, in the group's order (the leader first).
    pub deltas: [u64; MAX_MEMBERS + 1],
    /// Counter deltas over the long period before it, which ended at `start_pc`: what uniform
    /// sampling at the long period would see (the calibration reads the loop's own IPC here).
    pub long: [u64; MAX_MEMBERS + 1],
}

/// Whether a window's leader counted well past what was asked: its overflow came late (a
/// software clock that fires inside the kernel is skipped by user-only sampling and fires again
/// a whole window later) and its end pc says nothing about what ran in between. Half a window
/// of slack beyond the fixed cost: one skipped firing doubles the count, so it is caught.
pub(super) fn overlong(w: &Window, fixed: f64) -> bool {
    w.asked > 0 && w.deltas[0] as f64 > 1.5 * w.asked as f64 + fixed
}

/// The windows of one run.
#[derive(Debug, Clone)]
pub struct PmuProfile {
    /// How it sampled.
    pub config: PmuConfig,
    /// Every window recorded.
    pub windows: Vec<Window>,
    /// The fixed cost subtracted from every window.
    pub calibration: Calibration,
    /// Threads sampled over the run (those that ended included).
    pub threads: u64,
    /// Wall seconds sampled.
    pub wall_seconds: f64,
    /// Multiplexing, throttling, dropped windows.
    pub warnings: Vec<String>,
}
