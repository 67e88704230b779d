//! `#[profile_point]` on an `impl` block annotates every method with a body: inherent and
//! trait impls, generic ones; `const fn`s and `#[profile_point(skip)]` methods are left out, a
//! method's own options are kept, and the points are named after each method's path.

use std::collections::HashMap;

#[derive(Debug, Default)]
struct Store<T> {
    items: Vec<T>,
}

#[profpoint::profile_point]
impl<T: Clone> Store<T> {
    const fn capacity_hint() -> usize {
        8
    }

    fn new() -> Self {
        Store { items: Vec::new() }
    }

    fn push(&mut self, t: T) {
        self.items.push(t);
    }

    #[profpoint::profile_point(name = "store: first")]
    fn first(&self) -> Option<T> {
        self.items.first().cloned()
    }

    #[profpoint::profile_point(skip)]
    fn count(&self) -> usize {
        self.items.len()
    }
}

trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> String {
        "shape".into()
    }
}

#[derive(Debug)]
struct Square(f64);

#[profpoint::profile_point]
impl Shape for Square {
    fn area(&self) -> f64 {
        self.0 * self.0
    }
}

fn nr_by_name() -> HashMap<String, u64> {
    profpoint::snapshot()
        .points
        .into_iter()
        .map(|p| (p.name, p.nr))
        .collect()
}

#[test]
fn every_method_of_an_annotated_impl_is_a_point() {
    let mut s: Store<u32> = Store::new();
    s.push(1);
    s.push(2);
    assert_eq!(s.first(), Some(1));
    assert_eq!(s.count(), 2);
    assert_eq!(Store::<u32>::capacity_hint(), 8);
    assert_eq!(Square(2.0).area(), 4.0);
    assert_eq!(Square(2.0).name(), "shape");
    let nr = nr_by_name();
    assert_eq!(nr.get("bulk::Store<_>::new"), Some(&1), "{nr:?}");
    assert_eq!(nr.get("bulk::Store<_>::push"), Some(&2), "{nr:?}");
    assert_eq!(nr.get("store: first"), Some(&1), "{nr:?}");
    assert_eq!(
        nr.get("<bulk::Square as bulk::Shape>::area"),
        Some(&1),
        "{nr:?}"
    );
    for absent in ["count", "capacity_hint", "name"] {
        assert!(
            !nr.keys().any(|k| k.ends_with(absent)),
            "{absent} is not a point: {nr:?}"
        );
    }
}
