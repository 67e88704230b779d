//! framehop's allocation policy for the handler: fixed-size gimli storage, smaller than
//! framehop's own `MustNotAllocateDuringUnwind` (192 register rules a row, sized for aarch64,
//! ~25 KiB of `UnwindContext`, whose row copies overflow an 8 KiB alternate signal stack).
//! x86_64 CFI names at most 17 registers (rax..r15 and the return address): 24 rules a row,
//! 4 remembered rows, a 16-value expression stack make the context 3,344 bytes. A CFI program
//! needing more fails to evaluate: the chain is cut there (counted), nothing allocates.

use framehop::AllocationPolicy;
use gimli_cfi as gimli;

/// Rules per row.
pub(crate) const RULES: usize = 24;

/// The policy given to framehop's unwinder and caches.
pub(crate) struct SmallStore;

/// gimli's storage for both the CFI rows and expression evaluation.
pub(crate) struct Small;

impl<RO: gimli::ReaderOffset> gimli::UnwindContextStorage<RO> for Small {
    type Rules = [(gimli::Register, gimli::RegisterRule<RO>); RULES];
    type Stack = [gimli::UnwindTableRow<RO, Self>; 4];
}

impl<R: gimli::Reader> gimli::EvaluationStorage<R> for Small {
    type Stack = [gimli::Value; 16];
    type ExpressionStack = [(R, R); 2];
    type Result = [gimli::Piece<R>; 1];
}

impl AllocationPolicy for SmallStore {
    type GimliUnwindContextStorage<R: gimli::ReaderOffset> = Small;
    type GimliEvaluationStorage<R: gimli::Reader> = Small;
}
