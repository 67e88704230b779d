//! The synchronisation primitives of profpoint's concurrency core, through one door: std's in
//! every build, loom's in the model-checking build (`RUSTFLAGS="--cfg loom"`, `docs/loom.md`).
//!
//! # Concept
//! The seqlock of the counter slots (`shard/`), the grace period of the probe lists
//! (`tracepoint/rcu.rs`) and the key toggling (`tracepoint/key.rs`, `tracepoint/mod.rs`) are
//! checked by loom, which runs a test under every interleaving (and every value a weak load may
//! return) within a preemption bound. Loom can only see what goes through its own types, so
//! those files take their atomics, fences, locks and spin waits from here: the models then run
//! the real code, not a copy of it.
//!
//! # Mechanism
//! - Without `cfg(loom)` every item is a re-export of std (or a function that is exactly the
//!   std call, `#[inline(always)]`): the same types and the same code as before the shim.
//! - With `cfg(loom)` the atomics, `fence`, `Mutex` and the spin waits are loom's; statics go
//!   through [`sync_static!`] (loom's atomics have no `const` constructor, so they become
//!   per-execution `loom::lazy_static!`s), and `const fn`s that build atomics through
//!   [`const_fn_unless_loom!`].
//! - What loom cannot model has a stand-in here, named as such: [`light_fence`], the reader's
//!   half of the `membarrier` pairing (see its docs).
//!
//! # Extending
//! Another file joins the models by importing from here instead of `std::sync` (its statics
//! through [`sync_static!`]); a primitive loom lacks gets a function here with its stand-in
//! documented, never a silent difference.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// A static that loom must see: an ordinary `static` normally, a per-execution
/// `loom::lazy_static!` under loom (used the same way, through `Deref`).
macro_rules! sync_static {
    ($(#[$m:meta])* static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(loom))]
        $(#[$m])*
        static $name: $t = $init;
        #[cfg(loom)]
        loom::lazy_static! {
            $(#[$m])*
            static ref $name: $t = $init;
        }
    };
}
pub(crate) use sync_static;

/// A `const fn` normally; a plain `fn` under loom, whose atomics have no `const` constructor.
macro_rules! const_fn_unless_loom {
    ($(#[$m:meta])* $vis:vis fn $name:ident ($($args:tt)*) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$m])*
        $vis const fn $name($($args)*) -> $ret $body
        #[cfg(loom)]
        $(#[$m])*
        $vis fn $name($($args)*) -> $ret $body
    };
}
pub(crate) use const_fn_unless_loom;

/// One turn of a busy wait (`std::hint::spin_loop`; under loom, a yield to the other threads,
/// so that a wait is one scheduling point rather than an unbounded loop).
#[inline(always)]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::hint::spin_loop();
}

/// Gives up the CPU (`std::thread::yield_now`; loom's under loom).
#[inline(always)]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// The reader's half of an asymmetric fence pair whose other half is
/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (`tracepoint/rcu.rs`).
///
/// Normally a compiler barrier, which is all the reader needs: membarrier(2) guarantees that
/// when the system call returns, every running thread of the process has executed a full
/// memory barrier, and that a thread not running at that moment passes through one (a context
/// switch) before it runs again; so the writer's barrier and the reader's program point are
/// ordered one way or the other, which is exactly what a `SeqCst` fence on each side gives.
///
/// **Stand-in under loom**, which cannot model a barrier executed on another thread by an
/// interrupt: a `SeqCst` fence here, and one in place of the system call (`heavy_barrier`), the
/// model of asymmetric fences in C++ proposal P1202 (`asymmetric_thread_fence_light/heavy`)
/// and folly's `asymmetricLightBarrier`/`asymmetricHeavyBarrier`.
#[inline(always)]
pub(crate) fn light_fence() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(atomic::Ordering::SeqCst);
    #[cfg(loom)]
    atomic::fence(atomic::Ordering::SeqCst);
}

/// Preemption bound of the models when `LOOM_MAX_PREEMPTIONS` does not set one: every
/// schedule with at most this many preemptions (switches away from a thread that could have
/// gone on) is explored. Loom's documentation finds 2 or 3 enough for most bugs; every bug
/// injected into these models (docs/loom.md) is found at 2.
#[cfg(all(test, loom))]
pub(crate) const DEFAULT_PREEMPTIONS: usize = 3;

/// Runs `f` under loom's model checker (every schedule within the preemption bound) and prints
/// how many it explored (`--nocapture` shows it; docs/loom.md quotes the figures).
#[cfg(all(test, loom))]
pub(crate) fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    // The seqlock reader copies ~1,400 histogram buckets: one branch point each.
    b.max_branches = b.max_branches.max(10_000);
    let bound = b.preemption_bound;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        // Relaxed: a std counter of executions, read after the checker returns.
        counted.fetch_add(1, Ordering::Relaxed);
        f();
    });
    crate::diag::warn_line!(
        "loom model {name}: {} executions explored, preemption bound {}, {:.1?}",
        runs.load(Ordering::Relaxed),
        bound.map_or("none".to_string(), |b| b.to_string()),
        start.elapsed()
    );
}
