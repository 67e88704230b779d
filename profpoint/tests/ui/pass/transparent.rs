//! The shapes that broke when whole published crates were annotated: each compiles
//! with the attribute exactly as without it, with every warning an error (a lint that fires
//! only because of the expansion fails this case).
#![deny(warnings)]
#![allow(dead_code)]

use std::fmt::Debug;

// 1. The inference of the crate itself: no dependency of profpoint adds `PartialEq` impls on
//    primitive types (serde_json's `impl PartialEq<Value> for u8` made this ambiguous).
#[profpoint::profile_point]
fn inference_stays() -> bool {
    let v: Vec<u8> = Vec::new();
    assert_eq!(&*v, &[]);
    let n: i32 = 3;
    n == 3 && "a" == "a" && true == true
}

// 2. An inner attribute at the top of the body.
#[profpoint::profile_point]
fn inner_attribute() -> u32 {
    #![allow(unused_variables)]
    let unused = 1;
    2
}

#[profpoint::profile_point]
#[track_caller]
fn inner_attribute_tracked() -> u32 {
    #![allow(unused_variables)]
    let unused = 1;
    2
}

// 3. An async fn that never returns.
#[profpoint::profile_point]
async fn never_returns() -> ! {
    loop {
        std::thread::yield_now();
    }
}

// 4. `#[track_caller]` with a one-line body (no `unused_braces`).
#[profpoint::profile_point]
#[track_caller]
fn caller_line() -> u32 {
    std::panic::Location::caller().line()
}

// 6. By-value parameters of every pattern shape, `mut` only where it is needed.
#[profpoint::profile_point]
fn patterns((a, b): (u8, u8), mut c: Vec<u8>, _: u8, ref d: String) -> usize {
    c.push(a + b);
    c.len() + d.len()
}

#[profpoint::profile_point]
async fn async_patterns((a, b): (u8, u8), mut c: Vec<u8>, _: u8) -> usize {
    c.push(a + b);
    c.len()
}

// Nested functions, leading items, items after statements (allowed where they were).
#[profpoint::profile_point]
fn outer() -> u32 {
    const K: u32 = 3;
    #[profpoint::profile_point]
    fn inner() -> u32 {
        K
    }
    let x = inner();
    x + K
}

// Generics, lifetimes, where clauses, `impl Trait` in and out, unsafe, target features.
#[profpoint::profile_point]
fn longest<'a, T: ?Sized + Debug>(a: &'a T, b: &'a T) -> &'a T
where
    T: PartialOrd,
{
    if a > b { a } else { b }
}

#[profpoint::profile_point]
fn iter_out(v: &[u32]) -> impl Iterator<Item = &u32> + '_ {
    v.iter().filter(|x| **x > 1)
}

#[profpoint::profile_point]
fn iter_in(v: impl IntoIterator<Item = u32>) -> u32 {
    v.into_iter().sum()
}

/// # Safety
/// `p` is valid for reads.
#[profpoint::profile_point]
unsafe fn read(p: *const u32) -> u32 {
    // SAFETY: the caller's promise.
    unsafe { *p }
}

#[cfg(target_arch = "x86_64")]
#[profpoint::profile_point]
#[target_feature(enable = "sse4.2")]
fn with_feature(x: u32) -> u32 {
    x.count_ones()
}

// A body that borrows from a `&mut` argument and returns the borrow.
#[profpoint::profile_point]
fn first_mut(v: &mut Vec<u32>) -> &mut u32 {
    &mut v[0]
}

// `?` with inference through `Into`, and early returns.
#[profpoint::profile_point]
fn parse_sum(a: &str, b: &str) -> Result<u64, Box<dyn std::error::Error>> {
    if a.is_empty() {
        return Ok(0);
    }
    Ok(a.parse::<u64>()? + b.parse::<u64>()?)
}

// A diverging function.
#[profpoint::profile_point]
fn diverges() -> ! {
    panic!("never called")
}

struct Counter(u32);

impl Iterator for Counter {
    type Item = u32;
    #[profpoint::profile_point]
    fn next(&mut self) -> Option<u32> {
        self.0 = self.0.checked_sub(1)?;
        Some(self.0)
    }
}

// 7. Small leaves get `#[inline]` (rustc would have inlined them across crates, unannotated),
//    but not beside the user's own inline attribute, before or after the macro (the macro's
//    unit tests check the choice; here, that each shape compiles and runs).
#[inline(never)]
#[profpoint::profile_point]
fn leaf_never_before(x: u64) -> u64 {
    x + 1
}

#[profpoint::profile_point]
#[inline(always)]
fn leaf_always_after(x: u64) -> u64 {
    x + 2
}

#[profpoint::profile_point]
fn leaf_plain(x: &u64) -> u64 {
    *x ^ 3
}

fn main() {
    assert!(inference_stays());
    assert_eq!(inner_attribute() + inner_attribute_tracked(), 4);
    let line = line!() + 1;
    assert_eq!(caller_line(), line);
    assert_eq!(patterns((1, 2), vec![], 0, String::from("ab")), 3);
    assert_eq!(outer(), 6);
    assert_eq!(*longest(&1, &2), 2);
    assert_eq!(iter_out(&[1, 2, 3]).count(), 2);
    assert_eq!(iter_in([1, 2]), 3);
    // SAFETY: a valid pointer.
    assert_eq!(unsafe { read(&7) }, 7);
    let mut v = vec![1];
    *first_mut(&mut v) = 5;
    assert_eq!(v, [5]);
    assert_eq!(parse_sum("1", "2").unwrap(), 3);
    assert_eq!(Counter(3).count(), 3);
    let _ = never_returns;
    let _ = async_patterns((1, 2), vec![], 0);
    assert_eq!(leaf_never_before(1) + leaf_always_after(1) + leaf_plain(&1), 7);
}
