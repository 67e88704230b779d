//! What macro expansions use. **Not a stable API**: anything here may change in any release.

pub use crate::point::{Kind, Name, OffPoint, POINTS, Point, Timed};
pub use crate::tracepoint::TRACEPOINTS;
pub use linkme;
