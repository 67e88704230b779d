//! Procedural macros of profpoint. Use them through the `profpoint` crate, which re-exports
//! them and pins this crate's exact version; the expansions name `::profpoint::__private`.

#![deny(unsafe_op_in_unsafe_fn)]

use proc_macro::TokenStream;

mod attr;
mod leaf;
mod profile_point;
mod tracepoint;

/// Times every call of a function as a profile point.
///
/// Works on free functions, methods, generic functions and `async fn` (timed from first poll
/// to completion, on whichever threads poll it). Returns, `?` and panics all count.
///
/// Options: `name = "..."` (default: the function's path, e.g. `my_crate::db::Pool::get`),
/// `crate = path` (where profpoint is, for crates that re-export it).
///
/// A small leaf function that rustc would have inlined across crates by itself (no call,
/// index, division or macro in its body, no `#[inline]` of its own) gets `#[inline]`: its
/// guard's calls would otherwise make it an out-of-line call at every site.
///
/// On an `impl` block (inherent or of a trait), every method with a body is annotated, except
/// `const fn`s; `#[profile_point(skip)]` on a method leaves it out, and a method's own
/// `#[profile_point(name = "...")]` keeps its name.
#[proc_macro_attribute]
pub fn profile_point(args: TokenStream, item: TokenStream) -> TokenStream {
    profile_point::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Marks `main`: the profile-points report is written when the process exits (see
/// `profpoint::report_at_exit`). Option: `crate = path`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    profile_point::expand_main(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares a tracepoint: `tracepoint!(pub fn sched_switch(prev: &Task, next: &Task));`,
/// optionally with a condition on its arguments, evaluated only when enabled:
/// `tracepoint!(fn wakeup(task: &Task) if task.prio > 0);`. See `profpoint::tracepoint`.
#[proc_macro]
pub fn tracepoint(input: TokenStream) -> TokenStream {
    tracepoint::expand(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Fires a tracepoint with argument expressions that run only when it is enabled:
/// `trace!(sched_switch(expensive(a), b))`.
#[proc_macro]
pub fn trace(input: TokenStream) -> TokenStream {
    tracepoint::expand_trace(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
