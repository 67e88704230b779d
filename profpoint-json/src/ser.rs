//! Writing: serde's data model as JSON text, compact or pretty, laid out as serde_json does.

use crate::error::Error;
use crate::float;
use crate::key::KeyWriter;
use crate::string::write_string;
use serde::ser::{self, Serialize};

/// Writes `value` as JSON.
pub(crate) fn write<T: ?Sized + Serialize>(value: &T, pretty: bool) -> Result<String, Error> {
    let mut w = Writer {
        out: String::with_capacity(128),
        sink: None,
        pretty,
        depth: 0,
        has_element: false,
    };
    value.serialize(&mut w)?;
    Ok(w.out)
}

/// Text held before it is passed on to a sink (see [`write_to`]).
const CHUNK: usize = 64 * 1024;

/// Writes `value` to `sink` in pieces of about [`CHUNK`] bytes, so a large value never exists
/// whole as text in memory. The bytes are those [`write`] would return.
pub(crate) fn write_to<T: ?Sized + Serialize>(
    value: &T,
    pretty: bool,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut w = Writer {
        out: String::with_capacity(CHUNK + 4096),
        sink: Some(Sink {
            to: sink,
            error: None,
        }),
        pretty,
        depth: 0,
        has_element: false,
    };
    let r = value.serialize(&mut w);
    if r.is_ok() {
        w.flush();
    }
    // The sink's error first: a failed write is why later text was dropped.
    match (w.sink.and_then(|s| s.error), r) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(std::io::Error::other(e)),
        (None, Ok(())) => Ok(()),
    }
}

/// Where a streaming write goes, and the first error writing there (later text is dropped).
struct Sink<'s> {
    to: &'s mut dyn std::io::Write,
    error: Option<std::io::Error>,
}

struct Writer<'s> {
    /// Text not yet passed on (all of it, without a sink).
    out: String,
    sink: Option<Sink<'s>>,
    pretty: bool,
    /// Arrays and objects open around the current position (the indentation, when pretty).
    depth: usize,
    /// Whether the innermost open array or object has had an element. An element always sets
    /// it after it is written, so one flag (not a stack) is enough: closing an inner container
    /// happens before its parent's element is finished.
    has_element: bool,
}

impl Writer<'_> {
    /// Passes the text so far on to the sink, if there is one.
    fn flush(&mut self) {
        if let Some(sink) = &mut self.sink {
            if sink.error.is_none()
                && let Err(e) = sink.to.write_all(self.out.as_bytes())
            {
                sink.error = Some(e);
            }
            self.out.clear();
        }
    }

    /// After an element: passes a full chunk on.
    fn element_done(&mut self) {
        self.has_element = true;
        if self.out.len() >= CHUNK {
            self.flush();
        }
    }

    fn open(&mut self, bracket: char) {
        self.depth += 1;
        self.has_element = false;
        self.out.push(bracket);
    }

    fn close(&mut self, bracket: char) {
        self.depth -= 1;
        if self.pretty && self.has_element {
            self.newline();
        }
        self.out.push(bracket);
    }

    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
    }

    /// What goes before an element of an array or a key of an object.
    fn before_element(&mut self, first: bool) {
        if !first {
            self.out.push(',');
        }
        if self.pretty {
            self.newline();
        }
    }

    /// What goes between a key and its value.
    fn colon(&mut self) {
        self.out.push_str(if self.pretty { ": " } else { ":" });
    }

    fn string(&mut self, s: &str) {
        write_string(&mut self.out, s);
    }

    /// `{"variant": ` of a variant with data; the caller writes the value and closes.
    fn open_variant(&mut self, variant: &str) {
        self.open('{');
        self.before_element(true);
        self.string(variant);
        self.colon();
    }

    fn close_variant(&mut self) {
        self.has_element = true;
        self.close('}');
    }
}

impl<'a, 's> ser::Serializer for &'a mut Writer<'s> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, 's>;
    type SerializeTuple = Compound<'a, 's>;
    type SerializeTupleStruct = Compound<'a, 's>;
    type SerializeTupleVariant = Compound<'a, 's>;
    type SerializeMap = Compound<'a, 's>;
    type SerializeStruct = Compound<'a, 's>;
    type SerializeStructVariant = Compound<'a, 's>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }

    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }

    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }

    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.out.push_str(&v.to_string());
        Ok(())
    }

    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.out.push_str(&v.to_string());
        Ok(())
    }

    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }

    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }

    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }

    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.out.push_str(&v.to_string());
        Ok(())
    }

    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.out.push_str(&v.to_string());
        Ok(())
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        if v.is_finite() {
            float::write(&mut self.out, v);
        } else {
            self.out.push_str("null");
        }
        Ok(())
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        if v.is_finite() {
            float::write(&mut self.out, v);
        } else {
            self.out.push_str("null");
        }
        Ok(())
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // As serde_json: an array of numbers.
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.out.push_str("null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.string(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant);
        value.serialize(&mut *self)?;
        self.close_variant();
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a, 's>, Error> {
        self.open('[');
        Ok(Compound::new(self, false))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 's>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a, 's>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 's>, Error> {
        self.open_variant(variant);
        self.open('[');
        Ok(Compound::new(self, true))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a, 's>, Error> {
        self.open('{');
        Ok(Compound::new(self, false))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'a, 's>, Error> {
        self.serialize_map(None)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 's>, Error> {
        self.open_variant(variant);
        self.open('{');
        Ok(Compound::new(self, true))
    }
}

/// An open array or object (and, for a tuple or struct variant, the object around it).
struct Compound<'a, 's> {
    w: &'a mut Writer<'s>,
    first: bool,
    in_variant: bool,
}

impl<'a, 's> Compound<'a, 's> {
    fn new(w: &'a mut Writer<'s>, in_variant: bool) -> Compound<'a, 's> {
        Compound {
            w,
            first: true,
            in_variant,
        }
    }

    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.w.before_element(self.first);
        self.first = false;
        value.serialize(&mut *self.w)?;
        self.w.element_done();
        Ok(())
    }

    fn field<T: ?Sized + Serialize>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.w.before_element(self.first);
        self.first = false;
        self.w.string(key);
        self.w.colon();
        value.serialize(&mut *self.w)?;
        self.w.element_done();
        Ok(())
    }

    fn finish(self, bracket: char) -> Result<(), Error> {
        self.w.close(bracket);
        if self.in_variant {
            self.w.close_variant();
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish(']')
    }
}

impl ser::SerializeTuple for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish(']')
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish(']')
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish(']')
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Error> {
        self.w.before_element(self.first);
        self.first = false;
        key.serialize(KeyWriter(&mut self.w.out))
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.w.colon();
        value.serialize(&mut *self.w)?;
        self.w.element_done();
        Ok(())
    }

    fn end(self) -> Result<(), Error> {
        self.finish('}')
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish('}')
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish('}')
    }
}
