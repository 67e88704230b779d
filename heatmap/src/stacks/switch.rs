//! Running the unwind on the thread's own unwind stack: the only `asm!` of the crate.
//!
//! The handler runs on Rust's 8 KiB alternate signal stack (or on the thread's stack), of
//! which the kernel's signal frame takes nearly half, and gimli's CFI evaluation as much again
//! (docs/stacks.md, section 1.4, has the sizes): too close to the guard page, and a program's own
//! `SA_ONSTACK` handler can nest there. So the handler moves `rsp` to a per-thread stack
//! prepared by the watcher (written, so no page fault), calls the unwind, and moves back.

/// Calls `f(arg)` with `rsp` at `top`, then comes back to the caller's stack.
///
/// # Safety
///
/// `top` must be the 16-byte aligned end of writable memory that no other code uses while
/// `f` runs, large enough for `f`'s deepest use (the unwind's is a small part of 32 KiB); `f`
/// must not unwind (it is `extern "C"`: a panic aborts) and must treat `arg` per its contract.
#[inline(always)]
pub(crate) unsafe fn call_on_stack<T>(top: usize, f: extern "C" fn(*mut T), arg: *mut T) {
    debug_assert_eq!(top % 16, 0);
    // SAFETY: per the contract, `top` is the aligned end of a private stack. r12 is
    // callee-saved in the C ABI, so it survives `f` and restores our rsp; the call pushes the
    // return address at top-8, leaving rsp 16-aligned minus 8 at `f`'s entry as the ABI
    // requires; every caller-saved register is declared clobbered.
    unsafe {
        core::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {f}",
            "mov rsp, r12",
            top = in(reg) top,
            f = in(reg) f,
            in("rdi") arg,
            out("r12") _,
            clobber_abi("C"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn probe(out: *mut [usize; 2]) {
        let local = 0u8;
        // SAFETY: `out` points to a live array of the caller's.
        unsafe { (*out)[0] = std::ptr::addr_of!(local) as usize };
        // SAFETY: as above.
        unsafe { (*out)[1] += 1 };
    }

    /// The callee runs on the given stack and returns to ours.
    #[test]
    fn runs_on_the_given_stack_and_comes_back() {
        let mut stack = vec![0u8; 16 * 1024];
        let lo = stack.as_mut_ptr() as usize;
        let top = (lo + stack.len()) & !15;
        let mut out = [0usize; 2];
        // SAFETY: `top` is the aligned end of `stack`, used by nothing else; `probe` is small.
        unsafe { call_on_stack(top, probe, &mut out) };
        assert!(
            out[0] >= lo && out[0] < top,
            "local at {:#x}, stack {lo:#x}..{top:#x}",
            out[0]
        );
        assert_eq!(out[1], 1);
    }
}
