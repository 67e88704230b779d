//! Glob patterns for point and tracepoint names: the project's one matcher lives in
//! `profpoint-glob` (shared with heatmap); `profpoint::glob_matches` is it.

pub(crate) use profpoint_glob::foreign_syntax;
pub use profpoint_glob::glob_matches as matches;
