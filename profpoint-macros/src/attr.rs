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

/// A point's name is one row of the report's table: not empty, no control characters.
fn check_name(name: &LitStr) -> syn::Result<()> {
    let value = name.value();
    if value.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "`name` is empty: a point needs a name to be told apart in the report",
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        let what = match c {
            '\n' => "a newline".to_string(),
            '\r' => "a carriage return".to_string(),
            '\t' => "a tab".to_string(),
            c => format!("the control character U+{:04X}", u32::from(c)),
        };
        return Err(syn::Error::new(
            name.span(),
            format!("`name` contains {what}: a point's name is printed on one line of the report"),
        ));
    }
    Ok(())
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
                    .map_err(|e| {
                        syn::Error::new(e.span(), "`name` takes a string literal: name = \"...\"")
                    })
                    .and_then(|s| check_name(&s).map(|()| opts.name = Some(s)))
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
