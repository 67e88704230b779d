//! Parsing of the attributes' options: `name = "..."`, `crate = path`.

use syn::parse::Parser;
use syn::{LitStr, Path};

/// Options of `#[profile_point(...)]` and `#[main(...)]`.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Option<Path>,
    /// `skip`: leave this method out of an annotated `impl` block.
    pub(crate) skip: Option<proc_macro2::Span>,
}

/// Parses `args`; `allow_name` is false for `#[main]`. Every bad option is reported, each at
/// its own token.
pub(crate) fn parse(args: proc_macro2::TokenStream, allow_name: bool) -> syn::Result<Options> {
    let mut opts = Options::default();
    let mut errors: Option<syn::Error> = None;
    let expected = if allow_name {
        "expected `name = \"...\"`, `crate = path` or `skip`"
    } else {
        "expected `crate = path`"
    };
    let parser = syn::meta::parser(|meta| {
        let result = if allow_name && meta.path.is_ident("name") {
            if opts.name.is_some() {
                Err(meta.error("`name` given twice"))
            } else {
                meta.value()
                    .and_then(|v| v.parse::<LitStr>())
                    .map(|s| opts.name = Some(s))
                    .map_err(|e| {
                        syn::Error::new(e.span(), "`name` takes a string literal: name = \"...\"")
                    })
            }
        } else if allow_name && meta.path.is_ident("skip") {
            opts.skip = Some(
                meta.path
                    .get_ident()
                    .map_or_else(proc_macro2::Span::call_site, |i| i.span()),
            );
            Ok(())
        } else if meta.path.is_ident("crate") {
            if opts.krate.is_some() {
                Err(meta.error("`crate` given twice"))
            } else {
                meta.value()
                    .and_then(|v| v.parse::<Path>())
                    .map(|p| opts.krate = Some(p))
            }
        } else {
            let shown = meta
                .path
                .get_ident()
                .map_or_else(|| "this option".to_string(), |i| format!("`{i}`"));
            // Skip a value so the next option still parses.
            if meta.input.peek(syn::Token![=]) {
                let _ = meta.value().and_then(|v| v.parse::<syn::Expr>());
            }
            Err(meta.error(format!("unknown option {shown}: {expected}")))
        };
        if let Err(e) = result {
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
        Ok(())
    });
    parser.parse2(args)?;
    match errors {
        Some(e) => Err(e),
        None => Ok(opts),
    }
}
