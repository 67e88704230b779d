//! Expansion of `#[profile_point]` and `#[main]`.
//!
//! A function gets a block-scoped `static` point in the linker-gathered slice and a guard as
//! the first statement of its own body (after its inner attributes and leading items); the
//! guard's drop records the call on every exit path, unwinding included. Nothing else of the
//! body changes: no closure, no inner future, so the annotated function compiles, infers,
//! lints, drops and reports `Location::caller()` exactly as the bare one. An `async fn` gets an
//! async guard instead, created when the body starts (first poll) and dropped when it
//! completes or is cancelled; it is `Send` and `Sync`, so the future keeps its auto traits.
//! Paths reach `core` through `profpoint::__private`, so crates of every edition resolve them.

use crate::attr;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ItemFn;
use syn::spanned::Spanned;

/// Whether an attribute is `#[profile_point]` (under any path: `profile_point`,
/// `profpoint::profile_point`, a re-export).
fn is_profile_point(a: &syn::Attribute) -> bool {
    a.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "profile_point")
}

/// `#[profile_point]` on an `impl` block (inherent or of a trait): every method with a body is
/// annotated, as if each had the attribute, except `const fn`s (they may run at compile time)
/// and methods marked `#[profile_point(skip)]`; a method with its own `#[profile_point(...)]`
/// (a name, say) keeps it. `crate = path` is passed on to every method.
fn expand_impl(args: TokenStream, mut block: syn::ItemImpl) -> syn::Result<TokenStream> {
    let opts = attr::parse(args.clone(), true)?;
    if let Some(name) = &opts.name {
        return Err(syn::Error::new(
            name.span(),
            "`name` names one function: on an `impl` block, put it on the method",
        ));
    }
    if let Some(span) = opts.skip {
        return Err(syn::Error::new(
            span,
            "`skip` goes on a method of the annotated `impl` block, not on the block",
        ));
    }
    let attr = match &opts.krate {
        Some(k) => quote!(#[#k::profile_point(crate = #k)]),
        None => quote!(#[::profpoint::profile_point]),
    };
    let attr: syn::Attribute = syn::parse_quote!(#attr);
    let mut errors: Option<syn::Error> = None;
    for item in &mut block.items {
        let syn::ImplItem::Fn(m) = item else { continue };
        if m.sig.constness.is_some() {
            continue;
        }
        let mut own = None;
        for (i, a) in m.attrs.iter().enumerate() {
            if is_profile_point(a) {
                own = Some(i);
            }
        }
        match own {
            None => m.attrs.insert(0, attr.clone()),
            Some(i) => {
                // The method's own attribute: `skip` leaves it out; anything else stays and
                // expands by itself.
                let args = match &m.attrs[i].meta {
                    syn::Meta::List(l) => l.tokens.clone(),
                    _ => TokenStream::new(),
                };
                match attr::parse(args, true) {
                    Ok(o) if o.skip.is_some() => {
                        if o.name.is_some() || o.krate.is_some() {
                            let e = syn::Error::new(
                                m.attrs[i].span(),
                                "`skip` leaves the method unannotated: it takes no other option",
                            );
                            match &mut errors {
                                Some(all) => all.combine(e),
                                None => errors = Some(e),
                            }
                        }
                        m.attrs.remove(i);
                    }
                    // Errors are reported when the method's attribute expands.
                    _ => {}
                }
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    Ok(quote!(#block))
}

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
                    format!("{what} applies to functions and `impl` blocks only"),
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
    if let Ok(block) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return expand_impl(args, block);
    }
    let opts = attr::parse(args, true);
    if let Ok(o) = &opts
        && let Some(span) = o.skip
    {
        return Err(syn::Error::new(
            span,
            "`skip` leaves a method out of an `impl` block annotated with #[profile_point]; \
             here there is none: remove the attribute instead",
        ));
    }
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
                    #private::core::any::type_name_of_val(&__profpoint_name)
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
            #private::Point::new(#name, #kind, #private::core::file!(), #private::core::line!());
    };
    // A small leaf rustc would have inlined across codegen units by itself stays inlinable
    // (the guard's calls make it no leaf: see `leaf`).
    let inline = crate::leaf::rustc_would_inline(&f).then(|| quote!(#[inline]));
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = f;
    // syn keeps the body's inner attributes (`#![allow(...)]`) with the outer ones: they go
    // back first in the body, where they were.
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Inner(_)));
    // The user's leading items stay ahead of the guard's `let`: an item after a statement is
    // what `clippy::items_after_statements` reports, and it must fire only where it did.
    let stmts = block.stmts;
    let lead = stmts
        .iter()
        .take_while(|s| matches!(s, syn::Stmt::Item(i) if !matches!(i, syn::Item::Macro(_))))
        .count();
    let (items, rest) = stmts.split_at(lead);
    // The body stays the function's own: a guard declared first (so dropped last, after
    // every local of the body and before the parameters, as any local) times it. Nothing is
    // moved into a closure or another future, so inference, drop order, lints,
    // `Location::caller()` and the paths of nested items are those of the bare function.
    // The sync call's token has a local of its own, so the guard is a flag and a pointer.
    let enter = if is_async {
        quote_spanned!(span=> let __profpoint_guard = __PROFPOINT_POINT.__async_enter();)
    } else {
        quote_spanned!(span=>
            let mut __profpoint_token = #private::core::mem::MaybeUninit::uninit();
            let __profpoint_guard = __PROFPOINT_POINT.__enter(&mut __profpoint_token);
        )
    };
    Ok(quote! {
        #(#outer)*
        #inline
        #vis #sig {
            #(#inner)*
            #(#items)*
            #point
            #enter
            #(#rest)*
        }
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
