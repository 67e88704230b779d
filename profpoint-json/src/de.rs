//! Reading: a serde `Deserializer` straight over the text ([`from_text`]), and a tree of
//! [`Value`]s for what is only skipped or described in an error.

use crate::{Error, MAX_DEPTH, Segment};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use std::borrow::Cow;
use std::fmt::Write as _;

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

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, msg: &str) -> Error {
        Error::at(self.bytes, self.pos, msg.to_string())
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consumes `word` (after its first byte was seen).
    fn literal(&mut self, word: &str, value: Value<'a>) -> Result<Value<'a>, Error> {
        for &b in word.as_bytes() {
            if self.peek() != Some(b) {
                return Err(self.error(&format!("expected `{word}`")));
            }
            self.pos += 1;
        }
        Ok(value)
    }

    /// A value; `depth` arrays and objects are open around it.
    fn value(&mut self, depth: usize) -> Result<Value<'a>, Error> {
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
    fn enter(&mut self, depth: usize) -> Result<(), Error> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&format!(
                "arrays and objects nested more than {MAX_DEPTH} deep"
            )));
        }
        self.pos += 1;
        Ok(())
    }

    /// A string literal, from its opening quote.
    fn string(&mut self) -> Result<Cow<'a, str>, Error> {
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
    fn escape(&mut self, out: &mut String) -> Result<(), Error> {
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
    fn hex4(&mut self) -> Result<u32, Error> {
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

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<Value<'a>, Error> {
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

/// What a type error says was found.
pub(crate) fn describe(unexp: &Unexpected<'_>) -> String {
    match *unexp {
        Unexpected::Unit => "null".to_string(),
        Unexpected::Bool(b) => format!("boolean {b}"),
        Unexpected::Unsigned(n) => format!("integer {n}"),
        Unexpected::Signed(n) => format!("integer {n}"),
        Unexpected::Float(f) => format!("number {f}"),
        Unexpected::Str(s) => {
            // Quoted, and cut short: the value may be anything the input held.
            let mut out = String::from("string ");
            let mut short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                short.push_str("...");
            }
            let _ = write!(out, "{short:?}");
            out
        }
        Unexpected::Seq => "array".to_string(),
        Unexpected::Map => "object".to_string(),
        ref other => other.to_string(),
    }
}

impl Value<'_> {
    fn unexpected(&self) -> Unexpected<'_> {
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

/// Deserializes an object key: a string, or what a string can hold when the key type is a
/// number or a bool (as serde_json writes them: `{"5": ...}`).
struct KeyDeserializer<'k>(&'k str);

macro_rules! parsed_key {
    ($($method:ident $visit:ident $ty:ty,)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.parse::<$ty>() {
                Ok(v) => visitor.$visit(v),
                Err(_) => Err(de::Error::invalid_value(
                    Unexpected::Str(self.0),
                    &concat!("a key holding ", stringify!($ty)),
                )),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for KeyDeserializer<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    parsed_key! {
        deserialize_bool visit_bool bool,
        deserialize_i8 visit_i8 i8,
        deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32,
        deserialize_i64 visit_i64 i64,
        deserialize_i128 visit_i128 i128,
        deserialize_u8 visit_u8 u8,
        deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32,
        deserialize_u64 visit_u64 u64,
        deserialize_u128 visit_u128 u128,
        deserialize_f32 visit_f32 f32,
        deserialize_f64 visit_f64 f64,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// Reads a `T` straight from the text, without a tree: what [`crate::from_str`] does. The
/// tree ([`parse`]) remains for values read only to be skipped or described in an error.
pub(crate) fn from_text<T: de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    let value = T::deserialize(Stream {
        p: &mut p,
        depth: 0,
    })
    .map_err(|e| {
        // A syntax error anywhere comes before a type error (as when the whole text was
        // parsed first): on the way out of a type error, the text is checked whole.
        match (e.line(), parse(text)) {
            (None, Err(syntax)) => syntax,
            _ => e,
        }
    })?;
    p.skip_whitespace();
    if p.pos < p.bytes.len() {
        return Err(p.error("trailing characters after the value"));
    }
    Ok(value)
}

/// Deserializes the value at the parser's position; `depth` arrays and objects are open
/// around it.
struct Stream<'p, 'a> {
    p: &'p mut Parser<'a>,
    depth: usize,
}

impl<'a> Stream<'_, 'a> {
    /// The next value as a tree (to skip it, or to say what it is in an error).
    fn tree(self) -> Result<Value<'a>, Error> {
        self.p.value(self.depth)
    }
}

impl<'de> de::Deserializer<'de> for Stream<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Stream { p, depth } = self;
        p.skip_whitespace();
        match p.peek() {
            None => Err(p.error("unexpected end of input, expected a value")),
            Some(b'n') => {
                p.literal("null", Value::Null)?;
                visitor.visit_unit()
            }
            Some(b't') => {
                p.literal("true", Value::Null)?;
                visitor.visit_bool(true)
            }
            Some(b'f') => {
                p.literal("false", Value::Null)?;
                visitor.visit_bool(false)
            }
            Some(b'"') => match p.string()? {
                Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            },
            Some(b'-' | b'0'..=b'9') => match p.number()? {
                Value::Unsigned(n) => visitor.visit_u64(n),
                Value::Signed(n) => visitor.visit_i64(n),
                Value::Float(f) => visitor.visit_f64(f),
                _ => Err(p.error("expected a number")),
            },
            Some(b'[') => {
                p.enter(depth)?;
                let mut seq = StreamSeq {
                    p,
                    depth: depth + 1,
                    first: true,
                    done: false,
                    index: 0,
                };
                let out = visitor.visit_seq(&mut seq)?;
                // A visitor that took what it wanted (a fixed-size array) leaves the rest.
                let taken = seq.index;
                let mut n = taken;
                while de::SeqAccess::next_element::<de::IgnoredAny>(&mut seq)?.is_some() {
                    n += 1;
                }
                if n > taken {
                    return Err(de::Error::invalid_length(n, &"fewer elements"));
                }
                Ok(out)
            }
            Some(b'{') => {
                p.enter(depth)?;
                let mut map = StreamMap {
                    p,
                    depth: depth + 1,
                    first: true,
                    done: false,
                    count: 0,
                    key: None,
                };
                let out = visitor.visit_map(&mut map)?;
                let taken = map.count;
                let mut n = taken;
                while de::MapAccess::next_entry::<de::IgnoredAny, de::IgnoredAny>(&mut map)?
                    .is_some()
                {
                    n += 1;
                }
                if n > taken {
                    return Err(de::Error::invalid_length(n, &"fewer entries"));
                }
                Ok(out)
            }
            Some(_) => Err(p.error("expected a value")),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.p.skip_whitespace();
        if self.p.peek() == Some(b'n') {
            self.p.literal("null", Value::Null)?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.p.skip_whitespace();
        match self.p.peek() {
            Some(b'"') => match self.p.string()? {
                Cow::Borrowed(s) => visitor.visit_enum(s.into_deserializer()),
                Cow::Owned(s) => visitor.visit_enum(s.into_deserializer()),
            },
            Some(b'{') => {
                // `{"variant": value}`.
                let start = self.p.pos;
                self.p.enter(self.depth)?;
                self.p.skip_whitespace();
                if self.p.peek() != Some(b'"') {
                    self.p.pos = start;
                    return Err(not_a_variant(&self.tree()?));
                }
                let variant = self.p.string()?;
                self.p.skip_whitespace();
                match self.p.peek() {
                    Some(b':') => self.p.pos += 1,
                    None => return Err(self.p.error("unexpected end of input in an object")),
                    Some(_) => return Err(self.p.error("expected `:`")),
                }
                let out = visitor.visit_enum(StreamEnum {
                    p: &mut *self.p,
                    depth: self.depth + 1,
                    variant,
                })?;
                self.p.skip_whitespace();
                match self.p.peek() {
                    Some(b'}') => {
                        self.p.pos += 1;
                        Ok(out)
                    }
                    None => Err(self.p.error("unexpected end of input in an object")),
                    Some(_) => Err(self
                        .p
                        .error("expected `}`: an enum variant is an object with one entry")),
                }
            }
            _ => Err(not_a_variant(&self.tree()?)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.tree()?;
        visitor.visit_unit()
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.p.skip_whitespace();
        if self.p.peek() == Some(b'n') {
            self.p.literal("null", Value::Null)?;
            return visitor.visit_f64(f64::NAN);
        }
        self.deserialize_any(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.p.skip_whitespace();
        if self.p.peek() == Some(b'n') {
            self.p.literal("null", Value::Null)?;
            return visitor.visit_f32(f32::NAN);
        }
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The elements of an array being read.
struct StreamSeq<'p, 'a> {
    p: &'p mut Parser<'a>,
    depth: usize,
    first: bool,
    done: bool,
    index: usize,
}

impl<'de> de::SeqAccess<'de> for StreamSeq<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.done {
            return Ok(None);
        }
        self.p.skip_whitespace();
        match (self.first, self.p.peek()) {
            (_, Some(b']')) if self.first => {
                self.p.pos += 1;
                self.done = true;
                return Ok(None);
            }
            (true, _) => {}
            (false, Some(b',')) => self.p.pos += 1,
            (false, Some(b']')) => {
                self.p.pos += 1;
                self.done = true;
                return Ok(None);
            }
            (false, None) => return Err(self.p.error("unexpected end of input in an array")),
            (false, Some(_)) => return Err(self.p.error("expected `,` or `]`")),
        }
        self.first = false;
        let index = self.index;
        self.index += 1;
        seed.deserialize(Stream {
            p: self.p,
            depth: self.depth,
        })
        .map(Some)
        .map_err(|e| e.inside(Segment::Index(index)))
    }
}

/// The entries of an object being read.
struct StreamMap<'p, 'a> {
    p: &'p mut Parser<'a>,
    depth: usize,
    first: bool,
    done: bool,
    count: usize,
    /// The key just read, for the path of an error in its value.
    key: Option<Cow<'a, str>>,
}

impl<'de> de::MapAccess<'de> for StreamMap<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.done {
            return Ok(None);
        }
        self.p.skip_whitespace();
        if !self.first {
            match self.p.peek() {
                Some(b',') => {
                    self.p.pos += 1;
                    self.p.skip_whitespace();
                }
                Some(b'}') => {
                    self.p.pos += 1;
                    self.done = true;
                    return Ok(None);
                }
                None => return Err(self.p.error("unexpected end of input in an object")),
                Some(_) => return Err(self.p.error("expected `,` or `}`")),
            }
        } else if self.p.peek() == Some(b'}') {
            self.p.pos += 1;
            self.done = true;
            return Ok(None);
        }
        self.first = false;
        match self.p.peek() {
            Some(b'"') => {}
            None => return Err(self.p.error("unexpected end of input in an object")),
            Some(_) => return Err(self.p.error("expected a string key")),
        }
        let key = self.p.string()?;
        self.p.skip_whitespace();
        match self.p.peek() {
            Some(b':') => self.p.pos += 1,
            None => return Err(self.p.error("unexpected end of input in an object")),
            Some(_) => return Err(self.p.error("expected `:`")),
        }
        self.count += 1;
        let out = seed
            .deserialize(KeyDeserializer(&key))
            .map_err(|e| e.inside(Segment::Key(key.to_string())))?;
        self.key = Some(key);
        Ok(Some(out))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some(key) = self.key.take() else {
            return Err(de::Error::custom(
                "a map value was asked for before its key",
            ));
        };
        seed.deserialize(Stream {
            p: self.p,
            depth: self.depth,
        })
        .map_err(|e| e.inside(Segment::Key(key.into_owned())))
    }
}

/// The error for a value that is no enum variant.
fn not_a_variant(value: &Value<'_>) -> Error {
    de::Error::invalid_type(
        value.unexpected(),
        &"a string or an object with one entry (an enum variant)",
    )
}

/// `{"variant": value}` being read: the variant's name read, its value next.
struct StreamEnum<'p, 'a> {
    p: &'p mut Parser<'a>,
    depth: usize,
    variant: Cow<'a, str>,
}

impl<'de, 'p> de::EnumAccess<'de> for StreamEnum<'p, 'de> {
    type Error = Error;
    type Variant = StreamEnum<'p, 'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let variant = seed.deserialize(KeyDeserializer(&self.variant))?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for StreamEnum<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        self.p.skip_whitespace();
        if self.p.peek() == Some(b'n') {
            self.p.literal("null", Value::Null)?;
            return Ok(());
        }
        let other = self.p.value(self.depth)?;
        let e: Error = de::Error::invalid_type(other.unexpected(), &"null (a unit variant)");
        Err(e.inside(Segment::Key(self.variant.into_owned())))
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        let segment = Segment::Key(self.variant.to_string());
        seed.deserialize(Stream {
            p: self.p,
            depth: self.depth,
        })
        .map_err(|e| e.inside(segment))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        let segment = Segment::Key(self.variant.to_string());
        de::Deserializer::deserialize_seq(
            Stream {
                p: self.p,
                depth: self.depth,
            },
            visitor,
        )
        .map_err(|e| e.inside(segment))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let segment = Segment::Key(self.variant.to_string());
        de::Deserializer::deserialize_map(
            Stream {
                p: self.p,
                depth: self.depth,
            },
            visitor,
        )
        .map_err(|e| e.inside(segment))
    }
}
