//! What registering a probe returns: the handle that unregisters it when dropped.

use super::*;

/// Unregisters its probe when dropped (or by [`ProbeHandle::unregister`]). A probe may drop
/// its own handle: that does not deadlock.
#[derive(Debug)]
#[must_use = "dropping the handle unregisters the probe at once; keep it while the probe should run"]
pub struct ProbeHandle {
    pub(super) tracepoint: Option<&'static Tracepoint>,
    pub(super) id: Option<u64>,
}

impl ProbeHandle {
    /// A handle of nothing (what `register_trace_*` returns under the `off` feature).
    #[doc(hidden)]
    pub fn __inert() -> ProbeHandle {
        ProbeHandle {
            tracepoint: None,
            id: None,
        }
    }

    /// Unregisters the probe now. When this returns, no new call of the probe starts; calls
    /// already running on other threads may still finish (see [`synchronize_unregister`]).
    ///
    /// Called from inside a probe (a probe dropping its own handle, or another's), it does not
    /// wait for other threads (two probes doing so on two threads would wait for each other):
    /// the removal is immediate on this thread, and another thread that had already checked the
    /// probe just before may still call it once. Outside probes, the guarantee is exact.
    pub fn unregister(mut self) {
        if let (Some(t), Some(id)) = (self.tracepoint, self.id.take()) {
            t.unregister(id);
        }
    }

    /// Keeps the probe registered for the rest of the program.
    pub fn forget(mut self) {
        self.id = None;
    }
}

impl Drop for ProbeHandle {
    fn drop(&mut self) {
        if let (Some(t), Some(id)) = (self.tracepoint, self.id.take()) {
            t.unregister(id);
        }
    }
}
