//! Object keys: JSON keys are strings, so a map whose keys are numbers, bools or chars has them
//! written as the string of their JSON form, as serde_json does; any other key is an error.

use crate::error::Error;
use crate::float;
use crate::string::write_string;
use serde::ser::{self, Serialize};

/// Writes a map key: JSON keys are strings, so scalars are written as the string of their
/// JSON form (`"5"`, `"true"`, `"1.5"`); anything else is an error.
pub(crate) struct KeyWriter<'a>(pub(crate) &'a mut String);

fn key_error() -> Error {
    Error::new("a map key must be a string, number, bool or char".to_string())
}

impl KeyWriter<'_> {
    fn quoted(self, s: &str) -> Result<(), Error> {
        self.0.push('"');
        self.0.push_str(s);
        self.0.push('"');
        Ok(())
    }

    fn float<F: float::Float>(self, v: F) -> Result<(), Error> {
        if !v.is_finite() {
            return Err(Error::new("a float map key must be finite".to_string()));
        }
        let mut s = String::new();
        float::write(&mut s, v);
        self.quoted(&s)
    }
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.quoted(if v { "true" } else { "false" })
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.quoted(&v.to_string())
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_string(self.0, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_string(self.0, v);
        Ok(())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Error> {
        Err(key_error())
    }

    fn serialize_none(self) -> Result<(), Error> {
        Err(key_error())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _value: &T) -> Result<(), Error> {
        Err(key_error())
    }

    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_error())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Err(key_error())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        write_string(self.0, variant);
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
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(key_error())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_error())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_error())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_error())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_error())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_error())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(key_error())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_error())
    }
}
