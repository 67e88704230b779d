//! Which annotated functions get `#[inline]`: those rustc would have made inlinable across
//! crates and codegen units by itself, had they not been annotated.
//!
//! Since Rust 1.75 rustc treats a small leaf function as if it were `#[inline]`
//! (`cross_crate_inlinable` in `rustc_mir_transform`): one whose optimized MIR has no call, no
//! assert (a bounds or division check), no drop with glue and no unwinding, in at most 100
//! statements, and that carries no `#[inline]`, `#[no_mangle]` or `#[export_name]` of its own
//! (not in incremental builds, nor without optimizations). Its body is then emitted in every
//! codegen unit that calls it, where LLVM inlines it. An annotated function is never such a
//! leaf: its guard calls into profpoint. So each call of an annotated accessor became a real
//! call: on base64's loop `GeneralPurpose::config` and `encode_padding` (one field read each)
//! were their own symbols in perf's samples of the annotated build, and nowhere in the bare
//! build (docs/budget.md, "Annotated leaves lose rustc's inlining", has the share).
//!
//! The macro sees syntax, not MIR, so it asks for less: a body with no call, method call,
//! macro, index, `?`, `for`, closure, `async` block, `.await`, division or remainder, of at
//! most [`MAX_EXPRS`] expressions, whose parameters taken by value are of types that are plainly
//! `Copy` (primitives, references, raw pointers; a `self` by value may own a `Drop`); and no
//! attribute that says otherwise. What it cannot see (an operator or a `*` that calls a
//! user's `impl`) may give an `#[inline]` to a function rustc would not have inlined: a hint on
//! a body of a few expressions, where the opposite error costs every call.

use syn::visit::{self, Visit};
use syn::{BinOp, Expr, FnArg, ItemFn, Pat, Type};

/// The most expressions a body may hold (rustc's limit is 100 MIR statements; an expression
/// makes one or more).
const MAX_EXPRS: usize = 48;

/// Whether the bare function is one rustc would inline across codegen units by itself (see
/// the module docs).
pub(crate) fn rustc_would_inline(f: &ItemFn) -> bool {
    let said_otherwise = f.attrs.iter().any(|a| {
        let text = quote::ToTokens::to_token_stream(&a.meta).to_string();
        [
            "inline",
            "no_mangle",
            "export_name",
            "target_feature",
            "naked",
        ]
        .iter()
        .any(|w| {
            text.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|t| t == *w)
        })
    });
    if said_otherwise || f.sig.asyncness.is_some() || f.sig.variadic.is_some() {
        return false;
    }
    if !f.sig.inputs.iter().all(|a| match a {
        FnArg::Receiver(r) => r.reference.is_some(),
        FnArg::Typed(t) => plainly_copy(&t.ty) && !matches!(*t.pat, Pat::Struct(_)),
    }) {
        return false;
    }
    let mut leaf = Leaf {
        exprs: 0,
        call: false,
    };
    leaf.visit_block(&f.block);
    !leaf.call && leaf.exprs <= MAX_EXPRS
}

/// Whether a value of this type plainly has no drop glue: a primitive, a reference, a raw
/// pointer, or a tuple or array of them.
fn plainly_copy(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) | Type::Ptr(_) | Type::Never(_) => true,
        Type::Paren(p) => plainly_copy(&p.elem),
        Type::Group(g) => plainly_copy(&g.elem),
        Type::Tuple(t) => t.elems.iter().all(plainly_copy),
        Type::Array(a) => plainly_copy(&a.elem),
        Type::Path(p) => {
            p.qself.is_none()
                && p.path.get_ident().is_some_and(|i| {
                    matches!(
                        i.to_string().as_str(),
                        "u8" | "u16"
                            | "u32"
                            | "u64"
                            | "u128"
                            | "usize"
                            | "i8"
                            | "i16"
                            | "i32"
                            | "i64"
                            | "i128"
                            | "isize"
                            | "f32"
                            | "f64"
                            | "bool"
                            | "char"
                    )
                })
        }
        _ => false,
    }
}

/// Counts a body's expressions and notes anything that would be a call or an assert in MIR.
struct Leaf {
    exprs: usize,
    call: bool,
}

impl<'ast> Visit<'ast> for Leaf {
    fn visit_expr(&mut self, e: &'ast Expr) {
        self.exprs += 1;
        match e {
            Expr::Call(_)
            | Expr::MethodCall(_)
            | Expr::Macro(_)
            | Expr::Index(_)
            | Expr::Try(_)
            | Expr::TryBlock(_)
            | Expr::Await(_)
            | Expr::Async(_)
            | Expr::ForLoop(_)
            | Expr::Closure(_)
            | Expr::Yield(_) => self.call = true,
            Expr::Binary(b)
                if matches!(
                    b.op,
                    BinOp::Div(_) | BinOp::Rem(_) | BinOp::DivAssign(_) | BinOp::RemAssign(_)
                ) =>
            {
                self.call = true
            }
            _ => {}
        }
        if !self.call {
            visit::visit_expr(self, e);
        }
    }

    fn visit_stmt_macro(&mut self, _: &'ast syn::StmtMacro) {
        self.call = true;
    }

    // A nested item's body is not this function's.
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inlined(src: &str) -> bool {
        rustc_would_inline(&syn::parse_str::<ItemFn>(src).unwrap())
    }

    #[test]
    fn accessors_and_plain_arithmetic_are_leaves() {
        assert!(inlined("fn config(&self) -> &Config { &self.config }"));
        assert!(inlined("fn pad(&self) -> bool { self.encode_padding }"));
        assert!(inlined(
            "fn f(x: u64, y: &mut [u8; 4]) -> u64 { let z = x * 3 + 1; if z > 9 { z } else { x ^ z } }"
        ));
        assert!(inlined("fn g() {}"));
        // A nested item's calls are its own.
        assert!(inlined(
            "fn h(x: u32) -> u32 { fn other() { work() } x + 1 }"
        ));
    }

    #[test]
    fn calls_asserts_and_owned_parameters_are_not() {
        for src in [
            "fn f(x: u64) -> u64 { g(x) }",
            "fn f(v: &[u8]) -> usize { v.len() }",
            "fn f(v: &[u8]) -> u8 { v[0] }",
            "fn f(x: u64, y: u64) -> u64 { x / y }",
            "fn f(x: u64, y: u64) -> u64 { x % y }",
            "fn f() { println!(\"hi\") }",
            "fn f() { vec![1]; }",
            "fn f(s: String) -> usize { 0 }",
            "fn f(self) -> u8 { self.0 }",
            "fn f(x: Option<u8>) -> Option<u8> { Some(x?) }",
            "fn f(v: &[u8]) -> u8 { let mut s = 0; for x in v { s ^= *x } s }",
            "fn f() -> impl Fn() { || {} }",
            "async fn f() {}",
            "#[inline(never)] fn f() {}",
            "#[inline] fn f() {}",
            "#[no_mangle] fn f() {}",
            "#[unsafe(export_name = \"g\")] fn f() {}",
        ] {
            assert!(!inlined(src), "{src}");
        }
    }

    #[test]
    fn a_long_body_is_not_a_leaf_rustc_would_copy() {
        let sum = (0..MAX_EXPRS)
            .map(|i| format!("x + {i}"))
            .collect::<Vec<_>>();
        let src = format!("fn f(x: u64) -> u64 {{ {} }}", sum.join(" ^ "));
        assert!(!inlined(&src));
        assert!(inlined("fn f(x: u64) -> u64 { x + 1 ^ x + 2 }"));
    }
}
