//! Macro misuse is a compile error at the offending token; correct uses compile.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
    // Cases whose follow-on errors differ by tracepoint backend (the first error, at the
    // offending type, is the same).
    if profpoint::tracepoint::key::STATIC_KEYS {
        t.compile_fail("tests/ui/fail_static/*.rs");
    } else {
        t.compile_fail("tests/ui/fail_atomic/*.rs");
    }
}
