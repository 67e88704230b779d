//! The fixed cost every window carries ([`Calibration`]) and where its loop lies. The loop
//! itself, `calibration_loop`, stays in `mod.rs`: reports exclude it by its path,
//! `profpoint_heatmap::pmu::calibration_loop`. The run that measures it at start is the live half's
//! (`live/calibrate.rs`): it reads the windows, and nothing here names them.

use super::calibration_loop;
use super::events::MAX_MEMBERS;
use serde::{Deserialize, Serialize};

/// The fixed cost every window carries, measured at start on a known loop (its own thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Windows measured on the calibration loop.
    pub windows: u64,
    /// Extra counts per window (group order: cycles first), subtracted from every window.
    pub fixed: [f64; MAX_MEMBERS + 1],
}

/// Whether `pc` is in the calibration loop (it is small: a few hundred bytes).
pub(super) fn in_calibration_loop(pc: u64) -> bool {
    let f = calibration_loop as fn(u64) -> u64 as usize as u64;
    pc >= f && pc < f + 512
}
