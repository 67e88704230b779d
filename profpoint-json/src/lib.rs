//! JSON for profpoint's reports: serde's data model written as JSON text and read back,
//! with nothing else in the crate.
//!
//! # Why this crate exists
//!
//! rustc loads every crate in a program's dependency graph, and every trait impl those crates
//! hold joins trait selection in *every* crate of the program, also in crates that never name
//! them. serde_json holds impls such as `impl PartialEq<serde_json::Value> for u8` (and for
//! `i32`, `str`, `bool`, ...): handy for `assert_eq!(v["nr"], 5)`, but from then on `u8` has
//! two `PartialEq` impls, and code that leaned on there being only one stops compiling. In a
//! user's crate that merely depends on profpoint,
//!
//! ```ignore
//! let v: Vec<u8> = Vec::new();
//! assert_eq!(&*v, &[]); // error[E0283]: multiple impls satisfying `u8: PartialEq<_>`
//! ```
//!
//! fails: the element type of `&[]` was inferred from the only impl, and now there are two.
//! A profiler must not change whether its user's code compiles, so profpoint's rule is that no
//! crate it links (and heatmap links) implements a std trait with a type parameter for a type
//! it does not own (a primitive, a std type). serde_json breaks it; serde does not. This crate
//! is the small part of serde_json profpoint needs: a writer and a reader, through serde.
//!
//! # What it does
//!
//! [`to_string`] and [`to_string_pretty`] write any `Serialize` value. Their output is byte for
//! byte serde_json's `to_string` and `to_string_pretty` (checked by the tests against
//! serde_json on fixed and random values): two-space indentation, `"key": value`, empty `[]`
//! and `{}`, the same string escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control
//! characters as `\u00xx`, everything else, `/` and non-ASCII included, as is), integers exact
//! up to 128 bits, floats in their shortest round-trip form with `.0` on integral values
//! (`1.0`, `0.25`, `1.5e-7`, `1e+300`), NaN and infinities as `null`, `None` and unit as
//! `null`, unit variants as strings and the other variants as one-entry objects
//! (`{"V": ...}`). Map keys
//! may be strings, chars, integers, bools, finite floats, unit variants and newtypes of those
//! (written as strings, as serde_json does); other keys are an error.
//!
//! [`from_str`] and [`from_slice`] read any `DeserializeOwned` value. The input is read
//! (strict RFC 8259: no comments, no trailing commas, no leading zeros) by a serde
//! `Deserializer` straight over the text, nesting at most [`MAX_DEPTH`] arrays and objects deep
//! so hostile input cannot overflow the stack: integers go to any integer type with a
//! range check, any number to a float (and `null` to NaN, as the writer writes NaN and the
//! infinities), `null` to `None`, strings or one-entry objects to enums;
//! unknown fields are skipped. Errors say where: a syntax error its line and column (columns
//! count bytes), a type error the path of the value, as in
//! `points[3].nr: expected u64, found string "x"`.
//!
//! # How it works
//!
//! Writing (`ser.rs`) is one serializer with a `pretty` switch; the only state pretty printing
//! needs is the indentation depth and whether the current array or object has had an element
//! yet (an empty one closes on the same line). Floats (`float.rs`) take their shortest digits
//! from the standard library's `{:e}` formatting, break the rare exact tie between two
//! equally close candidates towards the even digit as serde_json's writer does, and are laid
//! out by serde_json's rules: plain notation for decimal exponents -5 to 15 (`f64`; -6 to 12
//! for `f32`), scientific otherwise. These are the rules of the serde_json this workspace
//! locks (1.0.154, whose float writer is zmij); versions that used ryu wrote `1e300` where it
//! writes `1e+300`. Upgrading serde_json can change them: the comparison tests will say so.
//!
//! Reading (`de.rs`) deserializes straight from the text: `deserialize_any` looks at the next
//! token and visits what is there (serde's visitors check it against what they want), except
//! where JSON alone cannot tell: `Option`, enums, newtypes, floats read from `null` and ignored
//! values. Strings without escapes are lent from the text, not copied. An error raised inside
//! an array element or an object value gains that index or key on its way out, so the
//! innermost error comes out with its whole path. A syntax error comes first, as if the text
//! had been parsed whole before: when a type error is on its way out, the text is parsed into
//! a tree (`parse`, also used to skip ignored values), and a syntax error found there is the
//! one reported. Reading used to build that tree for the whole document and deserialize it: a
//! 24 MB report then took about twice the memory and a third more time.
//!
//! # Extending it
//!
//! Keep the output equal to serde_json's: every new case belongs in the comparison tests
//! (`tests.rs`), which have serde_json as a dev-dependency (dev-dependencies never reach a
//! user). Keep the crate's dependencies to serde. And keep the rule above: if a `Value` type
//! is ever made public, its conveniences (`PartialEq` against numbers and strings, `From`
//! conversions, `Index`) go on `Value`'s side only: `impl PartialEq<u8> for Value` is fine,
//! `impl PartialEq<Value> for u8` is exactly the hazard this crate removes.
//!
//! # Differences from serde_json
//!
//! - `null` reads as a float (NaN), so a value with a NaN or infinite float reads back; serde_json
//!   refuses it.
//! - Reading is correctly rounded for floats (the standard library's parser); serde_json's
//!   default float parser may be one unit in the last place off on long inputs.
//! - Error messages are our own words; positions are the same kind (line, byte column).
//! - [`MAX_DEPTH`] levels of nesting are accepted; serde_json accepts one fewer.
//! - Streaming out only ([`to_writer_pretty`]); no `Value` API, no `json!` macro, no raw
//!   values.

mod de;
mod error;
mod float;
mod key;
mod parse;
mod ser;
mod string;
#[cfg(test)]
mod tests;

pub use error::Error;
pub use parse::MAX_DEPTH;

/// Writes `value` as compact JSON (no whitespace), as `serde_json::to_string` does.
///
/// Fails when the value cannot be JSON: a map key that is not a string, number, bool or char,
/// or an error the value's own `Serialize` impl raises.
pub fn to_string<T: ?Sized + serde::Serialize>(value: &T) -> Result<String, Error> {
    ser::write(value, false)
}

/// Writes `value` as indented JSON (two spaces, `"key": value`), as
/// `serde_json::to_string_pretty` does.
pub fn to_string_pretty<T: ?Sized + serde::Serialize>(value: &T) -> Result<String, Error> {
    ser::write(value, true)
}

/// Writes `value` as indented JSON to `sink`, as `serde_json::to_writer_pretty` does: the
/// same bytes as [`to_string_pretty`], passed on in pieces of about 64 KiB, so a large value
/// never exists whole as text in memory. An error of the sink, or of the value's `Serialize`
/// impl (as [`std::io::ErrorKind::Other`]), ends the write.
pub fn to_writer_pretty<T: ?Sized + serde::Serialize>(
    sink: &mut dyn std::io::Write,
    value: &T,
) -> std::io::Result<()> {
    ser::write_to(value, true, sink)
}

/// Reads a `T` from JSON text (the whole text: trailing characters other than whitespace are
/// an error).
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    de::from_text(text)
}

/// Reads a `T` from JSON bytes, which must be UTF-8.
pub fn from_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    match std::str::from_utf8(bytes) {
        Ok(text) => from_str(text),
        Err(e) => Err(Error::at(
            bytes,
            e.valid_up_to(),
            "invalid UTF-8".to_string(),
        )),
    }
}
