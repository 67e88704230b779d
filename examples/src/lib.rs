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
        // The types the `flame` feature's dependencies (inferno's) add impls to, each of which
        // already has several of that trait in std: `str: PartialEq<ArrayString>` (arrayvec),
        // `[T; 3]` and tuples `From<RGB<T>>` (rgb), `(T, Option<T>): From<Attr<T>>` (quick-xml).
        let t: (u8, u8, u8) = [1u8, 2, 3].into();
        let a: [u8; 3] = t.into();
        assert_eq!(a, [1, 2, 3]);
        assert!(*"ab" == *String::from("ab"));
        let pair: (u8, Option<u8>) = (1, None);
        assert_eq!(pair, (1, None));
        // Name profpoint: rustc loads a dependency (and so its dependencies) when it is used.
        assert!(profpoint::points().count() < usize::MAX);
    }
}
