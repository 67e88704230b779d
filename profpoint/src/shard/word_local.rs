//! This thread's shard pointer where TLS descriptors are not used (`word_tlsdesc.rs` says why they are elsewhere): a `const`
//! thread-local without `Drop`.

use super::Shard;
use std::cell::Cell;

thread_local! {
    static CURRENT: Cell<*const Shard> = const { Cell::new(std::ptr::null()) };
}

#[inline(always)]
pub(super) fn get() -> *const Shard {
    CURRENT.with(|c| c.get())
}

#[inline(always)]
pub(super) fn set(p: *const Shard) {
    CURRENT.with(|c| c.set(p));
}
