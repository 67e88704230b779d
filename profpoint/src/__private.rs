//! What macro expansions use. **Not a stable API**: anything here may change in any release.

pub use crate::point::{AsyncGuard, FnGuard, Guard, Kind, Name, OffPoint, OffToken, POINTS, Point};
pub use crate::tracepoint::TRACEPOINTS;
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "tracepoint-atomic")
))]
pub use crate::tracepoint::patch::call_hook;
pub use crate::tracepoint::probe_panicked;
/// `core`, for expansions in crates of any edition (2015 does not resolve `::core`).
pub use core;
pub use linkme;
/// `std`, for the same reason.
pub use std;
