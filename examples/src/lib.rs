//! Examples of profpoint live beside this file: see `wordcount.rs`.

/// A crate that depends on profpoint alone sees every trait impl of profpoint's dependencies.
/// None of them may add impls of a std trait with a type parameter for a type it does not own
/// (serde_json's `impl PartialEq<Value> for u8` did: the assertion below then stops compiling,
/// E0283). This test is that user's crate.
#[cfg(test)]
mod inference {
    #[test]
    fn profpoint_adds_no_impls_that_break_inference() {
        let v: Vec<u8> = Vec::new();
        assert_eq!(&*v, &[]);
        let s = String::new();
        assert!(s == *"");
        // Name profpoint: rustc loads a dependency (and so its dependencies) when it is used.
        assert!(profpoint::points().count() < usize::MAX);
    }
}
