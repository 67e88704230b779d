//! This thread's shard pointer: null before its first point call and after its exit.
//!
//! Every point call reads it, so how it is read is the hot path's business. A `const`
//! `thread_local!` is a general-dynamic TLS access when a library crate is compiled: a call to
//! `__tls_get_addr`, which the linker rewrites into two instructions in an executable, but
//! around which the compiler has already saved every register the call may clobber (a
//! counted-only call, as first built, spent three pushes and three pops on it). On x86_64 glibc the
//! word is a TLS variable of our own, read through a TLS descriptor (`-mtls-dialect=gnu2`'s
//! sequence), whose call clobbers only `rax` and the flags: in an executable the linker turns
//! it into a constant offset from `fs`, in a shared library loaded at start-up the descriptor
//! returns that offset, and in one loaded by `dlopen` it finds the thread's block (glibc's
//! `_dl_tlsdesc_dynamic`; its slow path allocates with `malloc`, which may use vector
//! registers, which glibc before 2.40 did not save: the asm declares them clobbered). Other
//! targets keep the `thread_local!`.

use super::Shard;

/// The word's symbol. Versioned so that two semver-incompatible profpoints in one program
/// keep a word each (the same name twice would not link).
macro_rules! name {
    () => {
        concat!(
            "__profpoint_current_shard_v",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        )
    };
}

// One zero-initialised, 8-byte-aligned TLS word (`.tbss`), hidden: private to the module
// (executable or shared library) that links this crate.
std::arch::global_asm!(
    concat!(".pushsection .tbss.", name!(), ",\"awT\",@nobits"),
    ".p2align 3",
    concat!(".globl ", name!()),
    concat!(".hidden ", name!()),
    concat!(".type ", name!(), ",@object"),
    concat!(".size ", name!(), ", 8"),
    concat!(name!(), ":"),
    ".zero 8",
    ".popsection",
    options(att_syntax)
);

/// The word's offset from the thread pointer (`fs:0`), by the TLS descriptor call, in `rax`,
/// then what `op` makes of `%fs:(%rax)`. The clobbers: the descriptor ABI keeps every register
/// but `rax` and the flags; the vector, mask and x87 registers are listed for glibc's `dlopen`
/// case above (`vector!` names those of this build: a build with AVX-512 has 16 more and
/// the mask registers). Not `nostack`: the call pushes its return address (Rust aligns the
/// stack for a call at an asm block without `nostack`).
macro_rules! with_word {
    ($op:literal, $($operands:tt)*) => {
        vector!(with_word_and, $op, $($operands)*)
    };
}

macro_rules! with_word_and {
    ([$($vector:tt)*], $op:literal, $($operands:tt)*) => {
        std::arch::asm!(
            concat!("lea ", name!(), "@tlsdesc(%rip), %rax"),
            concat!("call *", name!(), "@tlscall(%rax)"),
            $op,
            $($operands)*
            $($vector)*
            out("mm0") _, out("mm1") _, out("mm2") _, out("mm3") _,
            out("mm4") _, out("mm5") _, out("mm6") _, out("mm7") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            options(att_syntax)
        )
    };
}

/// Calls `$then!` with this build's vector registers as clobbers, then the rest.
#[cfg(not(target_feature = "avx512f"))]
macro_rules! vector {
    ($then:ident, $($rest:tt)*) => {
        $then!([
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
        ], $($rest)*)
    };
}

#[cfg(target_feature = "avx512f")]
macro_rules! vector {
    ($then:ident, $($rest:tt)*) => {
        $then!([
            out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
            out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
            out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _,
            out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
            out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
            out("zmm24") _, out("zmm25") _, out("zmm26") _, out("zmm27") _,
            out("zmm28") _, out("zmm29") _, out("zmm30") _, out("zmm31") _,
            out("k1") _, out("k2") _, out("k3") _, out("k4") _,
            out("k5") _, out("k6") _, out("k7") _,
        ], $($rest)*)
    };
}

#[inline(always)]
pub(super) fn get() -> *const Shard {
    let p: *const Shard;
    // SAFETY: the descriptor sequence is the ABI's own (the linker or `ld.so` resolves it
    // for the word defined above, which lives as long as the thread); the load reads that
    // 8-byte, aligned word of this thread's TLS block; every register the sequence may
    // change is an output or a clobber; it writes no memory but the stack below `rsp`.
    unsafe { with_word!("mov %fs:(%rax), %rax", out("rax") p,) };
    p
}

#[inline(always)]
pub(super) fn set(p: *const Shard) {
    // SAFETY: as in `get`, for a store to the same word; `p` is in a register other than
    // `rax` (an input the sequence does not touch).
    unsafe { with_word!("mov {p}, %fs:(%rax)", p = in(reg) p, out("rax") _,) };
}
