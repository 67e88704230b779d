//! Expansion of `tracepoint!` (a declaration) and `trace!` (a call site whose arguments are
//! evaluated only when the tracepoint is enabled).
//!
//! `tracepoint!(pub fn sched_switch(prev: &Task, next: &Task) if prev.id != next.id);` emits:
//! - `__tracepoint_sched_switch`: the `Tracepoint` static, in the linker-gathered slice;
//! - `trace_sched_switch(prev, next)`: the inline site, a key test and a call;
//! - `trace_sched_switch_enabled()`;
//! - `register_trace_sched_switch(probe) -> Result<ProbeHandle, RegisterError>`, typed: a
//!   probe with other argument types does not compile; an error when the system refuses to
//!   switch the site on (the probe is then not registered);
//! - `__tracepoint_hook_sched_switch`: the `#[cold] #[inline(never)]` hook that checks the
//!   condition and calls the probes. Everything but the key test lives here.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Token, Type, Visibility};

struct Arg {
    name: Ident,
    ty: Type,
}

struct Decl {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    args: Vec<Arg>,
    cond: Option<Expr>,
}

impl Parse for Decl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![fn]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `fn name(arg: Type, ...)`: tracepoint!(pub fn sched_switch(prev: &Task, next: &Task))",
            )
        })?;
        let name: Ident = input.parse()?;
        let content;
        syn::parenthesized!(content in input);
        let raw: Punctuated<syn::FnArg, Token![,]> = Punctuated::parse_terminated(&content)?;
        let mut args = Vec::new();
        for a in raw {
            match a {
                syn::FnArg::Typed(pt) => match *pt.pat {
                    syn::Pat::Ident(ref pi) if pi.by_ref.is_none() && pi.subpat.is_none() => args
                        .push(Arg {
                            name: pi.ident.clone(),
                            ty: (*pt.ty).clone(),
                        }),
                    ref other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "tracepoint arguments are plain `name: Type` pairs",
                        ));
                    }
                },
                syn::FnArg::Receiver(r) => {
                    return Err(syn::Error::new(
                        r.span(),
                        "a tracepoint takes no `self`: declare it at module level",
                    ));
                }
            }
        }
        let cond = if input.peek(Token![if]) {
            input.parse::<Token![if]>()?;
            Some(input.parse::<Expr>()?)
        } else {
            None
        };
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the tracepoint declaration"));
        }
        Ok(Decl {
            attrs,
            vis,
            name,
            args,
            cond,
        })
    }
}

pub(crate) fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let Decl {
        attrs,
        vis,
        name,
        args,
        cond,
    } = syn::parse2(input)?;
    let krate = quote!(::profpoint);
    let private = quote!(#krate::__private);
    let stat = format_ident!("__tracepoint_{}", name);
    if cfg!(feature = "off") {
        return Ok(expand_off(&krate, attrs, vis, &name, &args));
    }
    let site = format_ident!("trace_{}", name);
    let enabled = format_ident!("trace_{}_enabled", name);
    let register = format_ident!("register_trace_{}", name);
    let hook = format_ident!("__tracepoint_hook_{}", name);
    let names: Vec<&Ident> = args.iter().map(|a| &a.name).collect();
    let types: Vec<&Type> = args.iter().map(|a| &a.ty).collect();
    let params = quote!(#(#names: #types),*);
    let probe_ty = quote!(#private::std::boxed::Box<dyn #private::core::ops::Fn(#(#types),*) + #private::core::marker::Send + #private::core::marker::Sync>);
    let cond_check = cond.map(|c| quote!(if !(#c) { return; }));
    // Every probe gets the same arguments, so they must be `Copy` (references, integers...):
    // say so at the type, not as a "use of moved value" inside the generated hook.
    let copy_checks = types.iter().map(|ty| {
        quote_spanned! {ty.span()=> __profpoint_assert_copy::<#ty>(); }
    });
    let thunk = format_ident!("__tracepoint_thunk_{}", name);
    let atomic_site = quote! {
        if #stat.is_enabled() {
            #hook(#(#names),*);
        }
    };
    // Static keys (x86_64 Linux): the site is a 5-byte nop plus a record of (site, enabled
    // block, tracepoint) in `__profpoint_sites`; the enabled block hands a tuple of the
    // arguments to the trampoline, which calls the thunk, which calls the hook.
    let (site_body, thunk_item) = if cfg!(feature = "tracepoint-atomic") {
        (atomic_site, quote!())
    } else {
        let linux_x86 = quote!(all(target_arch = "x86_64", target_os = "linux"));
        (
            quote! {
                #[cfg(#linux_x86)]
                // SAFETY: the asm is a nop that only profpoint's patcher rewrites, into a jmp to
                // the label block; the block passes a pointer to a tuple of this tracepoint's
                // argument types to the thunk generated for exactly that tuple.
                unsafe {
                    #private::core::arch::asm!(
                        "2: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
                        ".pushsection __profpoint_sites,\"aR\",@progbits",
                        ".balign 8",
                        ".long 2b - .",
                        ".long {yes} - .",
                        ".quad {key} - .",
                        ".popsection",
                        key = sym #stat,
                        yes = label {
                            let __profpoint_args = (#(#names,)*);
                            // SAFETY: the thunk reads exactly this tuple type.
                            unsafe {
                                #private::call_hook(
                                    &raw const __profpoint_args as *const u8,
                                    #thunk,
                                );
                            }
                        },
                        options(nostack, preserves_flags),
                    );
                }
                #[cfg(not(#linux_x86))]
                {
                    #atomic_site
                }
            },
            quote! {
                #[doc(hidden)]
                #[cfg(#linux_x86)]
                #vis unsafe extern "C" fn #thunk(args: *const u8) {
                    // SAFETY: the site's enabled block passes a pointer to a live tuple of
                    // exactly these (Copy) argument types.
                    let (#(#names,)*) = unsafe { *(args as *const (#(#types,)*)) };
                    // A panicking condition must not unwind through the trampoline.
                    if ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| {
                        #hook(#(#names),*)
                    }))
                    .is_err()
                    {
                        #private::probe_panicked(#stat.name());
                    }
                }
            },
        )
    };
    let doc_site = format!("Fires tracepoint `{name}`: calls its probes when it is enabled.");
    let doc_enabled = format!("Whether tracepoint `{name}` is enabled (has probes or counts).");
    let doc_register = format!(
        "Registers a probe on tracepoint `{name}`; it runs on every firing until the handle drops. \
         An error (and no probe) when the system refuses to switch the site on."
    );
    Ok(quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #[#private::linkme::distributed_slice(#private::TRACEPOINTS)]
        #[linkme(crate = #private::linkme)]
        #vis static #stat: #krate::tracepoint::Tracepoint = #krate::tracepoint::Tracepoint::new(
            #private::core::concat!(#private::core::module_path!(), "::", #private::core::stringify!(#name)),
            #private::core::file!(),
            #private::core::line!(),
        );

        #(#attrs)*
        #[doc = #doc_site]
        #[inline(always)]
        #vis fn #site(#params) {
            #site_body
        }

        #thunk_item

        #[doc = #doc_enabled]
        #[inline(always)]
        #vis fn #enabled() -> bool {
            #stat.is_enabled()
        }

        #[doc = #doc_register]
        #vis fn #register(
            probe: impl #private::core::ops::Fn(#(#types),*) + #private::core::marker::Send + #private::core::marker::Sync + 'static,
        ) -> #private::core::result::Result<#krate::tracepoint::ProbeHandle, #krate::tracepoint::RegisterError> {
            let probe: #probe_ty = #private::std::boxed::Box::new(probe);
            #stat.__register(#private::std::boxed::Box::new(probe))
        }

        #[doc(hidden)]
        #[cold]
        #[inline(never)]
        #vis fn #hook(#params) {
            #cond_check
            #stat.__fire(|__profpoint_probe| {
                if let #private::core::option::Option::Some(__profpoint_f) =
                    __profpoint_probe.downcast::<#probe_ty>()
                {
                    __profpoint_f(#(#names),*);
                }
            });
        }

        const _: () = {
            fn __profpoint_assert_copy<T: #private::core::marker::Copy>() {}
            #[allow(dead_code)]
            fn __profpoint_check() {
                #(#copy_checks)*
            }
        };
    })
}

/// The `off` feature: the same functions, doing nothing; no static, no section entry.
fn expand_off(
    krate: &TokenStream,
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: &Ident,
    args: &[Arg],
) -> TokenStream {
    let site = format_ident!("trace_{}", name);
    let enabled = format_ident!("trace_{}_enabled", name);
    let register = format_ident!("register_trace_{}", name);
    let names: Vec<&Ident> = args.iter().map(|a| &a.name).collect();
    let types: Vec<&Type> = args.iter().map(|a| &a.ty).collect();
    let private = quote!(#krate::__private);
    quote! {
        #(#attrs)*
        #[inline(always)]
        #[allow(unused_variables)]
        #vis fn #site(#(#names: #types),*) {}

        #[inline(always)]
        #vis fn #enabled() -> bool {
            false
        }

        #vis fn #register(
            probe: impl #private::core::ops::Fn(#(#types),*) + #private::core::marker::Send + #private::core::marker::Sync + 'static,
        ) -> #private::core::result::Result<#krate::tracepoint::ProbeHandle, #krate::tracepoint::RegisterError> {
            #private::core::mem::drop(probe);
            #private::core::result::Result::Ok(#krate::tracepoint::ProbeHandle::__inert())
        }
    }
}

/// `trace!(path::name(args...))`: the site, with argument expressions evaluated only when the
/// tracepoint is enabled.
pub(crate) fn expand_trace(input: TokenStream) -> syn::Result<TokenStream> {
    let call: syn::ExprCall = syn::parse2(input).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected a call of a declared tracepoint: trace!(sched_switch(prev, next))",
        )
    })?;
    let Expr::Path(p) = &*call.func else {
        return Err(syn::Error::new(
            call.func.span(),
            "expected the tracepoint's name (a path), as declared with tracepoint!",
        ));
    };
    let mut path = p.path.clone();
    let Some(last) = path.segments.last_mut() else {
        return Err(syn::Error::new(p.span(), "expected a tracepoint name"));
    };
    let name = last.ident.clone();
    let mut stat_path = path.clone();
    if let Some(l) = stat_path.segments.last_mut() {
        l.ident = format_ident!("__tracepoint_{}", name, span = name.span());
    }
    if let Some(l) = path.segments.last_mut() {
        l.ident = format_ident!("__tracepoint_hook_{}", name, span = name.span());
    }
    let args = &call.args;
    if cfg!(feature = "off") {
        // Compiled out: the arguments are not evaluated, as when the tracepoint is disabled.
        return Ok(quote!({}));
    }
    Ok(quote! {
        if #stat_path.is_enabled() {
            #path(#args);
        }
    })
}
