//! Timing of `async` calls: from the first poll to completion, on whichever threads poll.

use super::*;
use hot::record_interval;

impl Point {
    /// Starts the timing of one `async` call (see [`AsyncGuard`]); call it when the call
    /// starts running (its first poll).
    #[inline]
    pub fn async_guard(&'static self) -> AsyncGuard {
        AsyncGuard {
            point: self,
            t0: None,
            origin: None,
        }
    }

    /// What `#[profile_point]` puts first in an `async fn`'s body: a guard that lives in the
    /// future's state from its first poll (when the body starts) to its completion, or its
    /// drop if it is cancelled. `Send` and `Sync`, so the future keeps its auto traits; the
    /// body stays the function's own.
    #[doc(hidden)]
    #[inline]
    pub fn __async_enter(&'static self) -> AsyncGuard {
        let mut g = self.async_guard();
        g.poll();
        g
    }

    /// Records one completed async call of `dur` ticks on the current thread, in the points
    /// tree under the node that was current at its first poll (`origin`).
    fn record_async(&'static self, dur: u64, origin: tree::Origin) {
        let index = self.index();
        // `slot_for_read`, not `slot`: the latter serves no slot without the TSC.
        let fast = shard::current().and_then(|s| Some((s, s.slot_for_read(index as usize)?)));
        let (shard, slot, borrowed) = match fast {
            Some((shard, slot)) => (shard, slot, false),
            None => {
                // First use on this thread: outside the intervals open here.
                let (shard, slot, flags) = self.slot_cold();
                (shard, slot, flags & T_BORROWED != 0)
            }
        };
        // A leaf of the points tree (its body's points attach to what is active where it is
        // polled); its self time is its total, as in its slot.
        let node = tree::async_node(shard, origin, index);
        if node != tree::NO_NODE {
            tree::add_timed(tree::node(shard, node), dur, dur);
        }
        slot.write_begin();
        bump(&slot.self_ticks, dur);
        record_interval(slot, dur);
        slot.write_end();
        if borrowed {
            shard::release(shard);
        }
    }
}

/// Times one `async` call from its first poll to its completion (or its drop, if it is
/// cancelled after starting), on whichever threads poll it. Used by `#[profile_point]` on
/// `async fn`.
pub struct AsyncGuard {
    point: &'static Point,
    t0: Option<u64>,
    /// The thread's current node in the points tree at the first poll (its parent).
    origin: tree::Origin,
}

impl std::fmt::Debug for AsyncGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncGuard")
            .field("point", &self.point.name())
            .field("t0", &self.t0)
            .finish()
    }
}

impl AsyncGuard {
    /// Marks a poll: the first one starts the clock (if the point is on at that moment).
    #[inline]
    pub fn poll(&mut self) {
        if self.t0.is_none() && self.point.is_enabled() {
            self.origin = tree::origin();
            self.t0 = Some(clock::now());
        }
    }
}

impl Drop for AsyncGuard {
    fn drop(&mut self) {
        if let Some(t0) = self.t0 {
            self.point
                .record_async(clock::now().saturating_sub(t0), self.origin);
        }
    }
}
