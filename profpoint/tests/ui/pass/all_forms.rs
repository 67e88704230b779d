//! Every supported form compiles: free, method, generic, trait default, async with `?`,
//! `impl Trait` return, custom name, `crate = path`, `#[main]`.

// Two methods hide an elided lifetime on purpose (the macro must keep such signatures as
// written); rustc's lint on that style is not what this case checks.
#![allow(mismatched_lifetime_syntaxes)]

use std::fmt::Display;

mod reexport {
    pub use profpoint as pp;
}

#[profpoint::profile_point]
fn free(x: u32) -> u32 {
    x + 1
}

struct S;

impl S {
    #[profpoint::profile_point]
    fn method(&self) -> &str {
        "s"
    }

    #[profpoint::profile_point(name = "S::consume")]
    fn consume(self) {}
}

#[profpoint::profile_point]
fn generic<T: Clone + Default>(t: &T) -> T {
    t.clone()
}

trait Greeter {
    #[profpoint::profile_point]
    fn greet(&self) -> String {
        "hi".into()
    }
}

impl Greeter for S {}

#[profpoint::profile_point]
async fn fallible(s: &str) -> Result<u32, std::num::ParseIntError> {
    let v: u32 = s.parse()?;
    Ok(v)
}

#[profpoint::profile_point]
async fn no_output() {}

#[profpoint::profile_point]
fn shown() -> impl Display {
    5
}

#[profpoint::profile_point(crate = reexport::pp)]
fn through_reexport() {}

#[profpoint::profile_point]
fn early(flag: bool) -> Option<u8> {
    if flag {
        return None;
    }
    let v = Some(3)?;
    Some(v)
}

#[profpoint::profile_point]
fn mutates(mut x: u32, (a, b): (u32, u32)) -> u32 {
    x += a + b;
    x
}

#[profpoint::profile_point]
fn longest<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.len() >= b.len() {
        return a;
    }
    b
}

#[profpoint::profile_point]
fn first_word(s: &str) -> &str {
    s.split(' ').next().unwrap_or("")
}

/// # Safety
/// `p` must be valid for reads.
#[profpoint::profile_point]
unsafe fn read(p: *const u8) -> u8 {
    // SAFETY: the caller promises `p` is valid.
    unsafe { *p }
}

#[profpoint::profile_point]
extern "C" fn callback(x: i32) -> i32 {
    x * 2
}

#[profpoint::profile_point]
fn never_returns() -> ! {
    panic!("diverges")
}

#[profpoint::profile_point]
fn owned(v: Vec<String>) -> Vec<String> {
    v.into_iter().rev().collect()
}

struct Store {
    items: Vec<u8>,
}

impl Store {
    #[profpoint::profile_point]
    fn items_mut(&mut self) -> &mut Vec<u8> {
        &mut self.items
    }

    #[profpoint::profile_point]
    fn first_mut(&mut self) -> Option<&mut u8> {
        self.items.first_mut()
    }

    #[profpoint::profile_point]
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut u8> {
        self.items.iter_mut()
    }
}

#[profpoint::profile_point]
fn slot(v: &mut [u8]) -> &mut u8 {
    &mut v[0]
}

struct Wrapper<'a> {
    x: &'a mut u8,
}

impl<'a> Wrapper<'a> {
    #[profpoint::profile_point]
    fn new(x: &'a mut u8) -> Self {
        Wrapper { x }
    }
}

trait Getter {
    type Out;
    fn get(self) -> Self::Out;
}

impl<'a> Getter for &'a mut Store {
    type Out = &'a mut u8;
    #[profpoint::profile_point]
    fn get(self) -> Self::Out {
        &mut self.items[0]
    }
}

type SlotRef<'a> = &'a mut u8;

impl Store {
    #[allow(elided_lifetimes_in_paths)]
    #[profpoint::profile_point]
    fn elided(&mut self) -> std::slice::IterMut<u8> {
        self.items.iter_mut()
    }

    #[profpoint::profile_point]
    fn aliased(&mut self) -> SlotRef<'_> {
        &mut self.items[0]
    }

    #[allow(elided_lifetimes_in_paths)]
    #[profpoint::profile_point]
    fn wrapped(&mut self) -> Wrapper {
        Wrapper { x: &mut self.items[0] }
    }
}

#[profpoint::profile_point]
#[track_caller]
fn caller_line() -> u32 {
    std::panic::Location::caller().line()
}

profpoint::define_profile_point!(pub EXPLICIT);

#[profpoint::main]
fn main() {
    free(1);
    S.method();
    S.consume();
    generic(&1u8);
    S.greet();
    let _ = fallible("1");
    let _ = no_output();
    println!("{}", shown());
    through_reexport();
    early(false);
    mutates(1, (2, 3));
    longest("a", "bb");
    first_word("a b");
    // SAFETY: a valid byte.
    unsafe { read(&7u8) };
    callback(2);
    owned(vec!["a".into()]);
    let mut st = Store { items: vec![1, 2] };
    st.items_mut().push(3);
    *st.first_mut().unwrap() += 1;
    st.iter_mut().for_each(|x| *x += 1);
    *slot(&mut st.items) = 9;
    let mut b = 1u8;
    *Wrapper::new(&mut b).x += 1;
    *(&mut st).get() += 1;
    st.elided().for_each(|x| *x += 1);
    *st.aliased() += 1;
    *st.wrapped().x += 1;
    assert_eq!(caller_line(), line!());
    if std::env::var_os("NEVER_SET_PROFPOINT").is_some() {
        never_returns();
    }
    let t = EXPLICIT.start();
    EXPLICIT.leave(t);
    let _g = profpoint::profile_scope!("scope");
}
