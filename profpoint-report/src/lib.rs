//! profpoint's report model and its renderers.
//!
//! # Concept
//! A report is a point-in-time copy of everything profpoint measured, already converted to
//! nanoseconds and percentiles, plus the run's metadata. [`Report`] is plain data: the running
//! program builds it (`profpoint::snapshot`, the exit report), and a tool reads it back from
//! its JSON form. Every format is a function of it (table, CSV, JSON, pprof, Prometheus, SVG),
//! so the exit report, periodic reports, the HTTP server and the `profpoint` command print the
//! same thing by construction, and the renderers can be tested on hand-made reports.
//!
//! # Reading is side-effect free
//! This crate installs no hook, reads no `PROFPOINT_*` variable and starts no thread: linking
//! it (as the `profpoint` command does) measures nothing. The collection side (summing the
//! per-thread counters, the reset baseline) is in `profpoint`, which re-exports these types
//! under the same names, so users still depend on `profpoint` alone.
//!
//! # Extending
//! A new section is a field of [`Report`] filled by profpoint's collector and rendered by each
//! renderer; bump [`VERSION`] only for changes that break readers (new fields do not), and
//! keep reading every older version.
//!
//! The model's structs are `#[non_exhaustive]`, so a new field breaks no user either: read
//! their fields freely, and build one from [`Report::empty`] or `Default`, then assign the
//! fields you need:
//!
//! ```
//! use profpoint_report::{PointReport, Report};
//!
//! let mut point = PointReport::default();
//! point.name = "parse".to_string();
//! point.nr = 3;
//! let mut report = Report::empty();
//! report.points.push(point);
//! assert_eq!(Report::from_json(&report.to_json()), Ok(report));
//! ```

mod check;
pub use check::OVER_SAID;
mod csv;
#[cfg(feature = "flame")]
mod flame;
mod folded;
pub mod heatmap;
mod model;
mod pprof;
mod pprof_stacks;
pub mod prometheus;
mod read;
mod svg;
mod table;

#[cfg(feature = "flame")]
pub use flame::flame_svg;
#[cfg(feature = "heatmap")]
pub use folded::stacks_folded;
pub use folded::{FoldedValue, StackSource, points_folded};
pub use model::*;
#[cfg(feature = "heatmap")]
pub use pprof_stacks::cpu_pprof;
pub use read::{MAX_READ, OLDEST_VERSION, ReadError, read};
pub use table::write_table;
