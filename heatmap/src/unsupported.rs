//! The sampler on systems other than Linux: the same API, and [`start`] says
//! [`StartError::Unsupported`] (the live sampler, `sampler/`, needs per-thread perf clocks,
//! `SIGPROF` routed per thread, `dl_iterate_phdr` and `/proc`). Profiles read from dumps made on
//! Linux report here as there.

use crate::config::Config;
use crate::error::StartError;
use crate::profile::{Profile, SourceUsed};

/// A running sampler; cannot be started here.
#[derive(Debug)]
pub struct Sampler {
    /// No value of this type exists on this system.
    never: std::convert::Infallible,
}

/// Starts sampling every thread of the process: [`StartError::Unsupported`] here.
pub fn start(_config: Config) -> Result<Sampler, StartError> {
    Err(StartError::Unsupported)
}

impl Sampler {
    /// Stops sampling (never called: no `Sampler` exists here).
    pub fn stop(self) -> Profile {
        match self.never {}
    }

    /// Stops sampling at the process's end (never called).
    pub fn stop_for_exit(self) -> Profile {
        match self.never {}
    }

    /// The counts so far (never called).
    pub fn snapshot(&self) -> Profile {
        match self.never {}
    }

    /// The sampling source in use (never called).
    pub fn source(&self) -> SourceUsed {
        match self.never {}
    }
}
