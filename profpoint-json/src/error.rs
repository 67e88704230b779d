//! The one error type of reading and writing: what went wrong, and where (a syntax error's
//! line and column, a type error's path from the document's root).

use serde::de::Unexpected;
use std::fmt;
use std::fmt::Write as _;

/// Why JSON could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    msg: String,
    /// Where a syntax error is: 1-based line and byte column.
    position: Option<(usize, usize)>,
    /// Where a type error is: the keys and indices from the value that failed out to the root
    /// (innermost first, as they are added on the way out).
    path: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

impl Error {
    pub(crate) fn new(msg: String) -> Error {
        Error {
            msg,
            position: None,
            path: Vec::new(),
        }
    }

    /// A syntax error at byte `pos` of `input`.
    pub(crate) fn at(input: &[u8], pos: usize, msg: String) -> Error {
        let pos = pos.min(input.len());
        let before = &input[..pos];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        Error {
            msg,
            position: Some((line, pos - line_start + 1)),
            path: Vec::new(),
        }
    }

    /// Records that the error happened inside the array element or object value `segment`.
    pub(crate) fn inside(mut self, segment: Segment) -> Error {
        // A syntax error says where it is by line and column; a path would add nothing.
        if self.position.is_none() {
            self.path.push(segment);
        }
        self
    }

    /// The 1-based line of a syntax error (`None` for other errors).
    pub fn line(&self) -> Option<usize> {
        self.position.map(|(line, _)| line)
    }

    /// The 1-based column, in bytes, of a syntax error (`None` for other errors).
    pub fn column(&self) -> Option<usize> {
        self.position.map(|(_, column)| column)
    }

    /// The path of the value a type error is about, such as `points[3].nr` (empty for the
    /// document itself and for syntax errors).
    pub fn path(&self) -> String {
        let mut s = String::new();
        for segment in self.path.iter().rev() {
            match segment {
                Segment::Index(i) => s.push_str(&format!("[{i}]")),
                Segment::Key(k) if is_plain_key(k) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(k);
                }
                Segment::Key(k) => s.push_str(&format!("[{k:?}]")),
            }
        }
        s
    }
}

/// Whether a key reads unambiguously after a `.` in a path.
fn is_plain_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path())?;
        }
        f.write_str(&self.msg)?;
        if let Some((line, column)) = self.position {
            write!(f, " at line {line} column {column}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error::new(msg.to_string())
    }
}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Error {
        Error::new(msg.to_string())
    }

    fn invalid_type(unexp: serde::de::Unexpected<'_>, exp: &dyn serde::de::Expected) -> Error {
        Error::new(format!("expected {exp}, found {}", describe(&unexp)))
    }

    fn invalid_value(unexp: serde::de::Unexpected<'_>, exp: &dyn serde::de::Expected) -> Error {
        Error::new(format!("expected {exp}, found {}", describe(&unexp)))
    }
}

/// What a type error says was found.
fn describe(unexp: &Unexpected<'_>) -> String {
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
