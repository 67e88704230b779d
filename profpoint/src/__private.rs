//! What macro expansions use. **Not a stable API**: anything here may change in any release.

pub use crate::point::{
    AsyncGuard, FnGuard, Kind, Name, OffPoint, OffToken, POINTS, Point, Segment, SplitCall,
};
pub use crate::tracepoint::TRACEPOINTS;
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "tracepoint-atomic")
))]
pub use crate::tracepoint::patch::call_hook;
pub use crate::tracepoint::probe_panicked;
/// `core`, for expansions in crates of any edition (2015 does not resolve `::core`).
pub use core;
pub use linkme;
/// `std`, for the same reason.
pub use std;

/// Refuses, at compile time, a point name that is empty or holds a control character (it
/// would give an empty or split table row): `profile_scope!` and `define_profile_point!`
/// evaluate it in a `const`, so a bad name is a compile error naming the rule.
pub const fn check_name(name: &str) {
    let b = name.as_bytes();
    assert!(!b.is_empty(), "profpoint: a point name must not be empty");
    let mut i = 0;
    while i < b.len() {
        // C0 controls and DEL; C1 controls are two bytes in UTF-8, 0xC2 0x80..=0x9F.
        let c = b[i];
        let c1 = c == 0xC2 && i + 1 < b.len() && b[i + 1] >= 0x80 && b[i + 1] <= 0x9F;
        assert!(
            !(c < 0x20 || c == 0x7F || c1),
            "profpoint: a point name must not hold control characters (newline, tab, ...)"
        );
        i += 1;
    }
}

/// A point named at run time: one of the spares a crate reserved with `__spare_points!`,
/// named `name` at `file:line`, with the user's settings by glob applied to it (the
/// `PROFPOINT_*` variables' and those of `enable`, `disable`, `set_sampling` and `count_only`
/// since, in order); counted only before those when `counted`. Claim once per thing named
/// (each claim takes a spare for the rest of the run). `None` when every spare is taken (said
/// once on stderr), when none is linked, and under the `off` feature: then leave it
/// unprofiled.
pub fn claim_point(
    name: &'static str,
    file: &'static str,
    line: u32,
    counted: bool,
) -> Option<&'static Point> {
    if cfg!(feature = "off") {
        return None;
    }
    crate::point::spare::claim(name, file, line, counted)
}
