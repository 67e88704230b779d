//! The live half of [`super`] on systems other than Linux: the same API, and every way to
//! start it says [`PmuError::Unsupported`]. Reports of windows recorded on Linux still work.

use super::{Calibration, Event, PmuConfig, PmuError, PmuProfile};

/// Checks that this process may count hardware events: never here.
pub fn available() -> Result<(), PmuError> {
    Err(PmuError::Unsupported)
}

/// A counting group on the calling thread; cannot be opened here.
#[derive(Debug)]
pub struct Counters {
    /// No value of this type exists on this system.
    never: std::convert::Infallible,
}

impl Counters {
    /// Opens cycles and `events` on the calling thread: [`PmuError::Unsupported`] here.
    pub fn open(events: &[Event]) -> Result<Counters, PmuError> {
        Counters::open_with(Event::Cycles, events)
    }

    /// Opens `clock` and `events` on the calling thread: [`PmuError::Unsupported`] here.
    pub fn open_with(_clock: Event, _events: &[Event]) -> Result<Counters, PmuError> {
        Err(PmuError::Unsupported)
    }

    /// The group's values (never called: no `Counters` exists here).
    pub fn read(&self) -> Vec<u64> {
        match self.never {}
    }
}

/// A running sampler; cannot be started here.
#[derive(Debug)]
pub struct PmuSampler {
    /// No value of this type exists on this system.
    never: std::convert::Infallible,
}

/// Starts sampling every thread: [`PmuError::Unsupported`] here.
pub fn start(_config: PmuConfig) -> Result<PmuSampler, PmuError> {
    Err(PmuError::Unsupported)
}

impl PmuSampler {
    /// The calibration (never called: no `PmuSampler` exists here).
    pub fn calibrated(&mut self) -> Calibration {
        match self.never {}
    }

    /// Windows recorded so far (never called).
    pub fn recorded(&self) -> usize {
        match self.never {}
    }

    /// Stops sampling (never called).
    pub fn stop(self) -> PmuProfile {
        match self.never {}
    }
}
