//! A smaller allocation-free storage policy than framehop's `MustNotAllocateDuringUnwind`
//! (192 register rules per row, sized for aarch64): x86_64 CFI names at most 17 registers
//! (rax..r15, RA). gimli copies rows on the stack while it runs a CFI program, so this is
//! what keeps the handler inside an 8 KiB alternate signal stack. A program needing more
//! rules than fit fails to evaluate: the chain ends there (counted), it never allocates.
use framehop::AllocationPolicy;

pub struct SmallStore;
pub struct Small;

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

pub const RULES: usize = 24;
