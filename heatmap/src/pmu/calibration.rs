//! The fixed cost every window carries ([`Calibration`]) and where its loop lies. The loop
//! itself, `calibration_loop`, stays in `mod.rs`: reports exclude it by its path,
//! `profpoint_heatmap::pmu::calibration_loop`. The run that measures it at start is the live half's
//! (`live/calibrate.rs`): it reads the windows, and nothing here names them.

use super::calibration_loop;
pub use profpoint_report::heatmap::pmu::Calibration;

/// Whether `pc` is in the calibration loop (it is small: a few hundred bytes).
pub(super) fn in_calibration_loop(pc: u64) -> bool {
    let f = calibration_loop as fn(u64) -> u64 as usize as u64;
    pc >= f && pc < f + 512
}
