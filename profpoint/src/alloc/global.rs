//! The counting allocator's `GlobalAlloc` implementation: the wrapped allocator's calls with
//! the header in front of every block, and the counting around them (`mod.rs`).

use super::{Counting, outer};
use std::alloc::{GlobalAlloc, Layout};

// SAFETY: every block handed out is the wrapped allocator's block of the `outer` layout, offset
// by `off` bytes, so it has at least `layout.size()` bytes at `layout.align()` (the offset is
// a multiple of the alignment); each call gives the wrapped allocator back exactly the pointer
// and layout it handed out (the same `outer` of the caller's layout); the header lies inside
// the wrapped block, before the user's bytes. Nothing here allocates through the global
// allocator or unwinds.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if crate::OFF_BUILD {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.alloc(layout) };
        }
        // SAFETY: `l` is not zero-sized (it has the header).
        self.new_block(layout, |l| unsafe { self.inner.alloc(l) })
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if crate::OFF_BUILD {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.alloc_zeroed(layout) };
        }
        // SAFETY: as in `alloc`.
        self.new_block(layout, |l| unsafe { self.inner.alloc_zeroed(l) })
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if crate::OFF_BUILD {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.dealloc(ptr, layout) };
        }
        // The caller passes the layout it allocated with, so `outer` succeeded for it then.
        let Some((off, l)) = outer(layout) else {
            return;
        };
        // SAFETY: `ptr` came from `alloc`, `alloc_zeroed` or `realloc` above with this layout:
        // the header word precedes it and the wrapped block starts `off` bytes before it.
        unsafe {
            let header = ptr.cast::<u64>().sub(1).read();
            self.charge_free(header, layout.size());
            self.inner.dealloc(ptr.sub(off), l);
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if crate::OFF_BUILD {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.realloc(ptr, layout, new_size) };
        }
        let Some((off, l)) = outer(layout) else {
            return std::ptr::null_mut();
        };
        let Some(new_outer) = new_size.checked_add(off) else {
            return std::ptr::null_mut();
        };
        if Layout::from_size_align(new_outer, l.align()).is_err() {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `dealloc` for the block; `new_outer` is non-zero and, rounded up to
        // the alignment, does not overflow `isize` (checked just above). The wrapped
        // `realloc` keeps the first bytes, so the header moves with the block.
        unsafe {
            let header = ptr.cast::<u64>().sub(1).read();
            let base = self.inner.realloc(ptr.sub(off), l, new_outer);
            if base.is_null() {
                return base;
            }
            self.charge_realloc(header, layout.size(), new_size);
            base.add(off)
        }
    }
}

impl<A: GlobalAlloc> Counting<A> {
    /// A new block of `layout` from `wrapped` (the wrapped allocator's `alloc` or
    /// `alloc_zeroed`, called with the outer layout): counted, its header written, the user's
    /// pointer returned; a null passed through, counting nothing.
    #[inline(always)]
    fn new_block(&self, layout: Layout, wrapped: impl FnOnce(Layout) -> *mut u8) -> *mut u8 {
        let Some((off, l)) = outer(layout) else {
            return std::ptr::null_mut();
        };
        let base = wrapped(l);
        if base.is_null() {
            return base;
        }
        let header = self.charge_alloc(layout.size());
        // SAFETY: `off >= 8` bytes of the block precede the user's pointer, which is aligned
        // to `max(8, align)`, so the word before it is aligned and inside the block.
        unsafe {
            let user = base.add(off);
            user.cast::<u64>().sub(1).write(header);
            user
        }
    }
}
