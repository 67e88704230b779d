//! The sampled call stacks of a run, symbolised: what the sampler's stack walker recorded.

use serde::{Deserialize, Serialize};

/// The sampled call stacks of one run, symbolised. Part of [`super::Report`] when the sampler
/// ran with stacks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StackReport {
    /// The configured maximum depth (frames per stack).
    pub depth: u32,
    /// Samples whose stack was stored (the sum of every [`SampledStack::count`]).
    pub samples: u64,
    /// Samples whose stack found no free slot in the fixed-size table (counted, not stored).
    pub dropped: u64,
    /// Stored stacks that reached [`StackReport::depth`] (their root side is missing).
    pub truncated: u64,
    /// Why chains ended before the root, most frequent first (a cut chain is still stored,
    /// with the frames found up to the cut).
    pub cuts: Vec<StackCut>,
    /// The distinct stacks, most samples first.
    pub stacks: Vec<SampledStack>,
    /// What the reader should know (missing symbols, stripped files, drops), one line each.
    pub warnings: Vec<String>,
}

/// One reason a chain ended early, and how often.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StackCut {
    /// A short reason, e.g. `no unwind info`, `outside the stack`, `not in mapped code`.
    pub reason: String,
    /// Samples whose chain ended for this reason.
    pub count: u64,
}

/// One distinct call stack and its samples.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SampledStack {
    /// Root first, leaf (the interrupted function) last; inlined frames expanded where debug
    /// information exists (each marked [`Frame::inlined`]).
    pub frames: Vec<Frame>,
    /// Samples with exactly this stack (and tag).
    pub count: u64,
    /// The opaque per-thread tag read at the sample (0 when none was registered): profpoint
    /// sets it to the thread's active profile point, so that code inlined into its caller can
    /// still be attributed to the annotated function after the run.
    #[serde(default)]
    pub tag: u32,
}

/// One frame of a [`SampledStack`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Frame {
    /// The instruction address (the pc for the leaf, the return address minus one for callers).
    pub address: u64,
    /// Demangled function name, `[unknown]` (no symbol) or `[vdso]`.
    pub function: String,
    /// Shared object file name; `None` for the main executable.
    pub library: Option<String>,
    /// `file:line` where debug information exists.
    pub location: Option<String>,
    /// True for a frame that LLVM inlined into the next frame towards the leaf's caller side
    /// (known only from debug information).
    pub inlined: bool,
}
