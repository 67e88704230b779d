//! The JSON text's syntax: a [`Parser`] over the bytes (values, strings with their escapes,
//! numbers, the depth bound) and the tree of [`Value`]s it builds, for what is only skipped or
//! described in an error. The serde side, `de.rs`, reads through the same parser.

use crate::error::Error;

/// How deep arrays and objects may nest in a document [`crate::from_str`] accepts.
pub const MAX_DEPTH: usize = 128;
use serde::de::Unexpected;
use std::borrow::Cow;

/// A parsed JSON value. Objects keep their keys in document order (duplicates too: a struct's
/// visitor reports a duplicate field). Strings and keys without escapes borrow from the text
/// (a report has hundreds of thousands of keys: one allocation each was a good part of the
/// reading time).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    /// A non-negative integer that fits in 64 bits.
    Unsigned(u64),
    /// A negative integer that fits in 64 bits.
    Signed(i64),
    /// Any other number (with a fraction or exponent, or too large for 64 bits).
    Float(f64),
    String(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

/// Parses a whole document.
pub(crate) fn parse(text: &str) -> Result<Value<'_>, Error> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    let value = p.value(0)?;
    p.skip_whitespace();
    if p.pos < p.bytes.len() {
        return Err(p.error("trailing characters after the value"));
    }
    Ok(value)
}

/// The parser's place in the text.
pub(crate) struct Parser<'a> {
    pub(crate) text: &'a str,
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn error(&self, msg: &str) -> Error {
        Error::at(self.bytes, self.pos, msg.to_string())
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(crate) fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consumes `word` (after its first byte was seen).
    pub(crate) fn literal(&mut self, word: &str, value: Value<'a>) -> Result<Value<'a>, Error> {
        for &b in word.as_bytes() {
            if self.peek() != Some(b) {
                return Err(self.error(&format!("expected `{word}`")));
            }
            self.pos += 1;
        }
        Ok(value)
    }

    /// A value; `depth` arrays and objects are open around it.
    pub(crate) fn value(&mut self, depth: usize) -> Result<Value<'a>, Error> {
        self.skip_whitespace();
        match self.peek() {
            None => Err(self.error("unexpected end of input, expected a value")),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => {
                self.enter(depth)?;
                let mut items = Vec::new();
                self.skip_whitespace();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Value::Array(items));
                        }
                        None => return Err(self.error("unexpected end of input in an array")),
                        Some(_) => return Err(self.error("expected `,` or `]`")),
                    }
                }
            }
            Some(b'{') => {
                self.enter(depth)?;
                let mut entries = Vec::new();
                self.skip_whitespace();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Value::Object(entries));
                }
                loop {
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b'"') => {}
                        None => return Err(self.error("unexpected end of input in an object")),
                        Some(_) => return Err(self.error("expected a string key")),
                    }
                    let key = self.string()?;
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b':') => self.pos += 1,
                        None => return Err(self.error("unexpected end of input in an object")),
                        Some(_) => return Err(self.error("expected `:`")),
                    }
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                    self.skip_whitespace();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Value::Object(entries));
                        }
                        None => return Err(self.error("unexpected end of input in an object")),
                        Some(_) => return Err(self.error("expected `,` or `}`")),
                    }
                }
            }
            Some(_) => Err(self.error("expected a value")),
        }
    }

    /// Consumes the `[` or `{` of a container opened inside `depth` others.
    pub(crate) fn enter(&mut self, depth: usize) -> Result<(), Error> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&format!(
                "arrays and objects nested more than {MAX_DEPTH} deep"
            )));
        }
        self.pos += 1;
        Ok(())
    }

    /// A string literal, from its opening quote.
    pub(crate) fn string(&mut self) -> Result<Cow<'a, str>, Error> {
        self.pos += 1;
        let begin = self.pos;
        // Without an escape the string is a slice of the text.
        loop {
            match self.peek() {
                Some(b'"') => {
                    // Slices start and end at ASCII bytes: character boundaries.
                    let text: &'a str = self.text;
                    let s = &text[begin..self.pos];
                    self.pos += 1;
                    return Ok(Cow::Borrowed(s));
                }
                Some(b'\\') | None | Some(0..=0x1f) => break,
                Some(_) => self.pos += 1,
            }
        }
        let mut out = String::new();
        let mut start = begin;
        loop {
            let Some(b) = self.peek() else {
                return Err(self.error("unexpected end of input in a string"));
            };
            match b {
                b'"' => {
                    // Slices start and end at ASCII bytes: character boundaries.
                    out.push_str(&self.text[start..self.pos]);
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    out.push_str(&self.text[start..self.pos]);
                    self.pos += 1;
                    self.escape(&mut out)?;
                    start = self.pos;
                }
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    /// The escape after a `\`.
    pub(crate) fn escape(&mut self, out: &mut String) -> Result<(), Error> {
        let Some(b) = self.peek() else {
            return Err(self.error("unexpected end of input in a string"));
        };
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                self.pos += 1;
                let first = self.hex4()?;
                let c = match first {
                    0xd800..=0xdbff => {
                        // A leading surrogate: its trailing half must follow as `\uDC00`..
                        if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(self.error("lone leading surrogate in a \\u escape"));
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xdc00..=0xdfff).contains(&second) {
                            return Err(
                                self.error("expected a trailing surrogate after a leading one")
                            );
                        }
                        0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
                    }
                    0xdc00..=0xdfff => {
                        return Err(self.error("lone trailing surrogate in a \\u escape"));
                    }
                    _ => first,
                };
                out.push(char::from_u32(c).expect("surrogates were handled above"));
                return Ok(());
            }
            _ => return Err(self.error("invalid escape")),
        };
        self.pos += 1;
        out.push(c);
        Ok(())
    }

    /// Four hex digits of a `\u` escape.
    pub(crate) fn hex4(&mut self) -> Result<u32, Error> {
        let mut n = 0;
        for _ in 0..4 {
            let digit = self.peek().and_then(|b| (b as char).to_digit(16));
            let Some(d) = digit else {
                return Err(self.error("expected four hex digits after \\u"));
            };
            n = n * 16 + d;
            self.pos += 1;
        }
        Ok(n)
    }

    pub(crate) fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    pub(crate) fn number(&mut self) -> Result<Value<'a>, Error> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.error("leading zero in a number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("expected a digit")),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("expected a digit after the decimal point"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            integral = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        let literal = &self.text[start..self.pos];
        if integral {
            if negative {
                if let Ok(n) = literal.parse::<i64>() {
                    return Ok(if n == 0 {
                        // `-0`: keep the sign, as a float.
                        Value::Float(-0.0)
                    } else {
                        Value::Signed(n)
                    });
                }
            } else if let Ok(n) = literal.parse::<u64>() {
                return Ok(Value::Unsigned(n));
            }
        }
        // The grammar above is a subset of what `f64::from_str` reads (correctly rounded).
        match literal.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Float(f)),
            _ => {
                self.pos = start;
                Err(self.error("number out of range"))
            }
        }
    }
}

impl Value<'_> {
    pub(crate) fn unexpected(&self) -> Unexpected<'_> {
        match self {
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Unsigned(n) => Unexpected::Unsigned(*n),
            Value::Signed(n) => Unexpected::Signed(*n),
            Value::Float(f) => Unexpected::Float(*f),
            Value::String(s) => Unexpected::Str(s),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
        }
    }
}
