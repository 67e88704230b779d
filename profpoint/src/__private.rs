//! What macro expansions use. **Not a stable API**: anything here may change in any release.

pub use crate::point::{Kind, Name, OffPoint, POINTS, Point, Timed};
pub use crate::tracepoint::TRACEPOINTS;
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "tracepoint-atomic")
))]
pub use crate::tracepoint::patch::call_hook;
pub use crate::tracepoint::probe_panicked;
pub use linkme;

/// Returns `f` unchanged, typed `FnOnce`: `#[profile_point]` passes the function body's
/// closure through it so that the closure's kind is inferred as `FnOnce` (see the macro).
#[inline(always)]
pub fn __once<R, F: FnOnce() -> R>(f: F) -> F {
    f
}
