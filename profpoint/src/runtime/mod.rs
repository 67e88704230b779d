//! The process's life around the points: what runs before `main`, while the program runs and
//! as it ends, and where its reports go. Nothing here is on a point's hot path.
//!
//! - `exit.rs`: start-up (the `.init_array` initialiser that reads the `PROFPOINT_*`
//!   variables) and the `atexit` handler it registers.
//! - `unmatched.rs`: the variables' globs that match nothing, said at start-up or at exit.
//! - `exit_report.rs`: the exit report, written once, from `atexit`, a signal's thread or
//!   [`crate::write_exit_report`].
//! - `deliver/`: [`Destination`](deliver::Destination) and the writing itself (files
//!   through an exclusive temporary file renamed over the destination, stderr and stdout).
//! - `periodic.rs`: the series of reports every `PROFPOINT_REPORT_EVERY`.
//! - `signals.rs`: SIGINT, SIGTERM and SIGHUP write the report, then end the process as the
//!   signal would have.
//! - `serve/`: the live endpoints (feature `serve`).
//! - `copies.rs`: other copies of profpoint in the same process (a library's).
//! - `fork.rs`: a forked child's locks, controller and report names.
//! - `low_fds.rs`: descriptors 0, 1 and 2 are the host's; what profpoint keeps sits above.
//!
//! A report destination's way, from its variable to the file: at start-up `exit.rs` reads
//! `PROFPOINT_REPORT` (`env::var`), `deliver/spelling.rs` parses it into destinations, and
//! `exit.rs` makes their paths absolute and plans them in `deliver/`; at exit
//! `exit_report.rs` takes the snapshot (`crate::report`) and hands it to `deliver::write_to`,
//! which calls the renderer the destination names (`profpoint-report`).

pub(crate) mod copies;
pub(crate) mod deliver;
pub(crate) mod exit;
pub(crate) mod exit_report;
pub(crate) mod fork;
#[cfg(unix)]
pub(crate) mod low_fds;
pub(crate) mod periodic;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub(crate) mod signals;
pub(crate) mod unmatched;
