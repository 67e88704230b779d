//! Expansion of `#[profile_point]` and `#[main]`.
//!
//! A sync function gets a block-scoped `static` point in the linker-gathered slice and a guard
//! as its first statement; the guard's drop records the call on every exit path, unwinding
//! included. An `async fn` gets the same static and its body moved into an `async move` block
//! wrapped in a timing future; a never-taken `return` of a value of the declared return type
//! pins the block's output type so `?` keeps inferring as in the original body.

use crate::attr;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType};

/// Parses the item, rejecting what the attribute cannot time, with the error on the token at
/// fault.
fn parse_fn(item: TokenStream, what: &str) -> syn::Result<ItemFn> {
    match syn::parse2::<ItemFn>(item.clone()) {
        Ok(f) => {
            if let Some(c) = &f.sig.constness {
                return Err(syn::Error::new(
                    c.span(),
                    format!(
                        "{what} cannot time a `const fn`: it may run at compile time, where there is no clock"
                    ),
                ));
            }
            Ok(f)
        }
        Err(e) => {
            if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.clone())
                && f.default.is_none()
            {
                return Err(syn::Error::new(
                    f.sig.ident.span(),
                    format!(
                        "{what} needs a function with a body; put it on the implementations instead"
                    ),
                ));
            }
            match syn::parse2::<syn::Item>(item) {
                Ok(other) => Err(syn::Error::new(
                    item_keyword_span(&other),
                    format!("{what} applies to functions only"),
                )),
                Err(_) => Err(e),
            }
        }
    }
}

/// The span of the keyword that says what an item is (`struct`, `mod`, ...).
fn item_keyword_span(item: &syn::Item) -> Span {
    use syn::Item::*;
    match item {
        Struct(s) => s.struct_token.span,
        Enum(e) => e.enum_token.span,
        Mod(m) => m.mod_token.span,
        Impl(i) => i.impl_token.span,
        Trait(t) => t.trait_token.span,
        Static(s) => s.static_token.span,
        Const(c) => c.const_token.span,
        Type(t) => t.type_token.span,
        Use(u) => u.use_token.span,
        other => other.span(),
    }
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let opts = attr::parse(args, true);
    let f = parse_fn(item, "#[profile_point]");
    let (opts, f) = match (opts, f) {
        (Ok(o), Ok(f)) => (o, f),
        (Err(mut a), Err(b)) => {
            a.combine(b);
            return Err(a);
        }
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    if cfg!(feature = "off") {
        return Ok(quote!(#f));
    }
    let krate = opts
        .krate
        .map_or_else(|| quote!(::profpoint), |p| quote!(#p));
    let private = quote!(#krate::__private);
    let span = f.sig.ident.span();
    // The default name is the path of a marker fn nested in the function (its last segment
    // is dropped at run time): `type_name` knows `module::Type::method`, the macro does not.
    let (name, marker) = match &opts.name {
        Some(lit) => (quote!(#private::Name::Static(#lit)), quote!()),
        None => (
            quote!(#private::Name::Marker(__profpoint_name)),
            quote_spanned! {span=>
                fn __profpoint_name() -> &'static str {
                    ::core::any::type_name_of_val(&__profpoint_name)
                }
            },
        ),
    };
    let is_async = f.sig.asyncness.is_some();
    let kind = if is_async {
        quote!(#private::Kind::Async)
    } else {
        quote!(#private::Kind::Sync)
    };
    let point = quote_spanned! {span=>
        #marker
        #[#private::linkme::distributed_slice(#private::POINTS)]
        #[linkme(crate = #private::linkme)]
        static __PROFPOINT_POINT: #private::Point =
            #private::Point::new(#name, #kind, ::core::file!(), ::core::line!());
    };
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = f;
    let body = if is_async {
        let stmts = &block.stmts;
        let pin_output = match &sig.output {
            ReturnType::Type(_, ty) if !mentions_impl(&quote!(#ty)) => quote! {
                #[allow(
                    unknown_lints,
                    unreachable_code,
                    clippy::diverging_sub_expression,
                    clippy::empty_loop,
                    clippy::let_unit_value,
                    clippy::needless_return
                )]
                if false {
                    let __profpoint_output: #ty = loop {};
                    return __profpoint_output;
                }
            },
            _ => quote!(),
        };
        quote! {
            #point
            #private::Timed::new(&__PROFPOINT_POINT, async move {
                #pin_output
                #(#stmts)*
            })
            .await
        }
    } else if attrs.iter().any(|a| a.path().is_ident("track_caller")) {
        // `#[track_caller]`: a closure would change what `Location::caller()` reports. A
        // guard times it; the off path then tests the status at both ends.
        quote! {
            #point
            let __profpoint_guard = __PROFPOINT_POINT.guard();
            #block
        }
    } else {
        // The body becomes a closure called from two branches: off, it is called bare (the
        // whole cost is the status test); on, under a guard. The closure's return type is the
        // function's, so `?` and `return` keep their meaning.
        let ret = match &sig.output {
            ReturnType::Type(_, ty) if !mentions_impl(&quote!(#ty)) => quote!(-> #ty),
            ReturnType::Type(..) => quote!(),
            ReturnType::Default => quote!(-> ()),
        };
        // `__once` makes the closure's expected kind `FnOnce`: a body that returns a borrow
        // of a `&mut` argument (`&mut self.x`, `self.items.iter_mut()`, a constructor keeping
        // a `&'a mut`) would otherwise be inferred `FnMut`, from which no borrow may escape.
        quote! {
            #point
            #[allow(unused_mut, clippy::redundant_closure_call)]
            let mut __profpoint_body = #private::__once(move || #ret #block);
            if __PROFPOINT_POINT.__status() == 0 {
                __profpoint_body()
            } else {
                #private::Point::__call_on(__profpoint_body, &__PROFPOINT_POINT)
            }
        }
    };
    Ok(quote! {
        #(#attrs)*
        #vis #sig {
            #body
        }
    })
}

/// Whether a type mentions `impl Trait` (which cannot be written in a `let`).
fn mentions_impl(ty: &TokenStream) -> bool {
    ty.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == "impl",
        proc_macro2::TokenTree::Group(g) => mentions_impl(&g.stream()),
        _ => false,
    })
}

pub(crate) fn expand_main(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let opts = attr::parse(args, false)?;
    let f = parse_fn(item, "#[profpoint::main]")?;
    if cfg!(feature = "off") {
        return Ok(quote!(#f));
    }
    let krate = opts
        .krate
        .map_or_else(|| quote!(::profpoint), |p| quote!(#p));
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = f;
    let stmts = &block.stmts;
    Ok(quote! {
        #(#attrs)*
        #vis #sig {
            #krate::report_at_exit();
            #(#stmts)*
        }
    })
}
