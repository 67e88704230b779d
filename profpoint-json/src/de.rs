//! Reading: a serde `Deserializer` straight over the text ([`from_text`]), through the parser
//! of `parse.rs`, whose tree of [`Value`]s serves what is only skipped or described in an
//! error.

use crate::error::{Error, Segment};
use crate::parse::{Parser, Value, parse};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use std::borrow::Cow;

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
