//! Our output against serde_json's, our parser against serde_json's, and the parser against
//! random input.

use crate::{
    Error, MAX_DEPTH, from_slice, from_str, to_string, to_string_pretty, to_writer_pretty,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// xorshift64*: enough randomness for tests, reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// Both forms of `v` equal serde_json's.
#[track_caller]
fn same<T: ?Sized + Serialize>(v: &T) {
    assert_eq!(to_string(v).unwrap(), serde_json::to_string(v).unwrap());
    assert_eq!(
        to_string_pretty(v).unwrap(),
        serde_json::to_string_pretty(v).unwrap()
    );
    let mut streamed = Vec::new();
    to_writer_pretty(&mut streamed, v).unwrap();
    assert_eq!(
        String::from_utf8(streamed).unwrap(),
        serde_json::to_string_pretty(v).unwrap()
    );
}

/// A sink that keeps what it is given and the largest single write.
#[derive(Default)]
struct Pieces {
    all: Vec<u8>,
    largest: usize,
    writes: usize,
}

impl std::io::Write for Pieces {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.all.extend_from_slice(b);
        self.largest = self.largest.max(b.len());
        self.writes += 1;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_large_value_is_streamed_in_pieces_with_the_same_bytes() {
    // ~1.9 MB of pretty JSON: rows of a report-like shape.
    let rows: Vec<BTreeMap<String, u64>> = (0..20_000u64)
        .map(|i| (0..4).map(|k| (format!("field{k}"), i * 7 + k)).collect())
        .collect();
    let whole = to_string_pretty(&rows).unwrap();
    let mut p = Pieces::default();
    to_writer_pretty(&mut p, &rows).unwrap();
    assert_eq!(p.all, whole.as_bytes());
    assert!(whole.len() > 1_000_000, "{}", whole.len());
    // Never more than a chunk and one element held at once.
    assert!(p.largest < 70 * 1024, "{}", p.largest);
    assert!(p.writes >= whole.len() / (70 * 1024), "{}", p.writes);
}

#[test]
fn a_failing_sink_ends_the_write_with_its_error() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(libc_enospc()))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    fn libc_enospc() -> i32 {
        28 // ENOSPC on Linux
    }
    let e = to_writer_pretty(&mut Full, &vec![1u8; 10]).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28));
}

#[test]
fn floats_are_written_as_serde_json_writes_them() {
    let fixed = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        0.5,
        1.5,
        100.0,
        123.456,
        1e15,
        1e16,
        1e17,
        1.5e16,
        123456789012345680.0,
        1e21,
        1e22,
        1e300,
        1e308,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        1e-4,
        1e-5,
        1e-6,
        1.5e-7,
        0.000123,
        0.0000123,
        0.3,
        2.0 / 3.0,
        std::f64::consts::PI,
        9007199254740993.0,
        4.35,
        99.99999999999999,
    ];
    for v in fixed {
        same(&v);
        same(&(v as f32));
    }
    for e in -330..310 {
        let v: f64 = format!("1e{e}").parse().unwrap();
        same(&v);
        same(&(v * 1.2345));
        same(&(v as f32));
    }
    // Non-finite values are `null`.
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(to_string(&v).unwrap(), "null");
        same(&v);
        same(&(v as f32));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200_000 {
        let bits = rng.next();
        same(&f64::from_bits(bits));
        same(&f32::from_bits(bits as u32));
        // Values in the ranges reports hold: percentages, ratios, seconds.
        let v =
            (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi(rng.below(12) as i32 - 3);
        same(&v);
        same(&((v * 100.0).round() / 100.0));
    }
}

#[test]
fn integers_are_exact() {
    same(&[u64::MIN, 1, 9, 10, u64::MAX]);
    same(&[i64::MIN, -1, 0, i64::MAX]);
    same(&[u128::MAX, 0]);
    same(&[i128::MIN, i128::MAX]);
    same(&(u8::MAX, i8::MIN, u16::MAX, i16::MIN, u32::MAX, i32::MIN));
    let mut rng = Rng(7);
    for _ in 0..10_000 {
        let x = rng.next();
        same(&(
            x,
            x as i64,
            (x as u128) << 64 | u128::from(rng.next()),
            x >> rng.below(64),
        ));
    }
}

#[test]
fn strings_are_escaped_as_serde_json_escapes_them() {
    for c in 0..0x800u32 {
        if let Some(c) = char::from_u32(c) {
            same(&c.to_string());
            same(&c);
            same(&format!("a{c}b{c}{c}"));
        }
    }
    for s in [
        "",
        "plain",
        "quote\"back\\slash/",
        "é ü 中文 🦀",
        "\u{7f}\u{80}\u{2028}\u{feff}",
    ] {
        same(s);
    }
    let alphabet: Vec<char> = "ab\"\\/\n\r\t\u{0}\u{1f}\u{7f}é🦀 ".chars().collect();
    let mut rng = Rng(99);
    for _ in 0..5_000 {
        let s: String = (0..rng.below(20))
            .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
            .collect();
        same(&s);
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    Unit,
    OtherUnit,
    Newtype(u32),
    Tuple(i8, String),
    EmptyTuple(),
    Struct { a: f64, b: Option<Vec<u8>> },
    EmptyStruct {},
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Newtype(String);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Pair(u8, Option<bool>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Empty {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Everything {
    name: String,
    nr: u64,
    delta: i64,
    ratio: f64,
    fixed: [f64; 3],
    maybe: Option<u32>,
    nothing: Option<u32>,
    kinds: Vec<Kind>,
    empty_vec: Vec<u8>,
    nested: Vec<Vec<u8>>,
    empty: Empty,
    unit: Unit,
    newtype: Newtype,
    pair: Pair,
    by_name: BTreeMap<String, u8>,
    by_number: BTreeMap<i32, String>,
    by_kind: BTreeMap<Kind, bool>,
    empty_map: BTreeMap<String, u8>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    skipped: Option<u8>,
    tuple: (char, (), bool),
}

impl Eq for Kind {}
impl PartialOrd for Kind {
    fn partial_cmp(&self, other: &Kind) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Kind {
    fn cmp(&self, other: &Kind) -> std::cmp::Ordering {
        format!("{self:?}").cmp(&format!("{other:?}"))
    }
}

fn everything() -> Everything {
    Everything {
        name: "a \"name\"\n".to_string(),
        nr: u64::MAX,
        delta: -5,
        ratio: 0.25,
        fixed: [1.0, 1e-7, f64::NAN],
        maybe: Some(3),
        nothing: None,
        kinds: vec![
            Kind::Unit,
            Kind::OtherUnit,
            Kind::Newtype(7),
            Kind::Tuple(-1, "x".to_string()),
            Kind::EmptyTuple(),
            Kind::Struct {
                a: 2.5,
                b: Some(vec![1, 2]),
            },
            Kind::Struct { a: 0.0, b: None },
            Kind::EmptyStruct {},
        ],
        empty_vec: vec![],
        nested: vec![vec![], vec![1], vec![]],
        empty: Empty {},
        unit: Unit,
        newtype: Newtype("n".to_string()),
        pair: Pair(1, None),
        by_name: [("b".to_string(), 2), ("a\t".to_string(), 1)].into(),
        by_number: [(-3, "minus".to_string()), (10, "ten".to_string())].into(),
        by_kind: [(Kind::Unit, true), (Kind::OtherUnit, false)].into(),
        empty_map: BTreeMap::new(),
        skipped: None,
        tuple: ('c', (), true),
    }
}

#[test]
fn structures_are_laid_out_as_serde_json_lays_them_out() {
    let e = everything();
    same(&e);
    same(&Some(&e));
    same(&vec![e.clone(), e]);
    same(&Kind::Newtype(1));
    same(&Kind::Tuple(1, String::new()));
    same(&Kind::EmptyTuple());
    same(&Kind::EmptyStruct {});
    same(&vec![Kind::EmptyStruct {}]);
    same(&Unit);
    same(&());
    same(&Empty {});
    same(&Vec::<u8>::new());
    same(&vec![Vec::<u8>::new()]);
    same(&vec![vec![Empty {}]]);
    same(&(1, [[0u8; 0]; 2], ((), [Some(1)])));
    same(&Bytes(&[1, 2, 3]));
    same(&Bytes(&[]));
    // The exact pretty form, spelled out once.
    assert_eq!(
        to_string_pretty(&Kind::Struct {
            a: 1.0,
            b: Some(vec![])
        })
        .unwrap(),
        "{\n  \"struct\": {\n    \"a\": 1.0,\n    \"b\": []\n  }\n}"
    );
}

/// A value that serializes through `serialize_bytes`.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

#[test]
fn map_keys_are_written_as_serde_json_writes_them() {
    same(&BTreeMap::from([(true, 1), (false, 2)]));
    same(&BTreeMap::from([('x', 1), ('"', 2)]));
    same(&BTreeMap::from([(u128::MAX, 1)]));
    same(&BTreeMap::from([(i8::MIN, 1)]));
    same(&BTreeMap::from([(Newtype("k".into()), 1)]));
    let float_keys = FloatKeys(vec![1.5, -0.0, 1e300, 100.0]);
    same(&float_keys);
    // Keys JSON cannot hold: both refuse.
    let bad = BTreeMap::from([(vec![1u8], 1)]);
    assert!(to_string(&bad).is_err());
    assert!(serde_json::to_string(&bad).is_err());
    let nan = FloatKeys(vec![f64::NAN]);
    assert!(to_string(&nan).is_err());
    assert!(serde_json::to_string(&nan).is_err());
}

/// A map with float keys (std has no float-keyed map).
struct FloatKeys(Vec<f64>);

impl Serialize for FloatKeys {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for k in &self.0 {
            m.serialize_entry(k, &1)?;
        }
        m.end()
    }
}

/// A random JSON tree (finite floats; serde_json's `Value` holds no other).
fn random_value(rng: &mut Rng, depth: usize) -> serde_json::Value {
    use serde_json::Value;
    let leaf = depth >= 6 || rng.chance(3);
    match rng.below(if leaf { 6 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(2)),
        2 => Value::from(rng.next() >> rng.below(64)),
        3 => Value::from(-((rng.next() >> rng.below(64)) as i64)),
        4 => loop {
            let f = if rng.chance(2) {
                f64::from_bits(rng.next())
            } else {
                (rng.below(1_000_000) as f64) / 100.0
            };
            if f.is_finite() {
                break Value::from(f);
            }
        },
        5 => Value::String(random_string(rng)),
        6 => Value::Array(
            (0..rng.below(5))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.below(5))
                .map(|_| (random_string(rng), random_value(rng, depth + 1)))
                .collect(),
        ),
    }
}

fn random_string(rng: &mut Rng) -> String {
    const PIECES: [&str; 10] = ["a", "key", "\"", "\\", "\n", "\u{1}", "é", "🦀", " ", "/"];
    (0..rng.below(6))
        .map(|_| PIECES[rng.below(PIECES.len() as u64) as usize])
        .collect()
}

#[test]
fn random_trees_match_serde_json_and_round_trip() {
    let mut rng = Rng(0x1234_5678);
    for _ in 0..5_000 {
        let v = random_value(&mut rng, 0);
        same(&v);
        for text in [to_string(&v).unwrap(), to_string_pretty(&v).unwrap()] {
            let back: serde_json::Value = from_str(&text).unwrap();
            assert_eq!(back, v, "{text}");
        }
    }
}

#[test]
fn typed_values_round_trip() {
    // NaN is written as null and reads back as NaN, which equals nothing (see below).
    let mut e = everything();
    e.fixed[2] = 3.0;
    e.by_kind.clear(); // enum keys read back only as unit variants: these are.
    e.by_kind.insert(Kind::OtherUnit, true);
    for text in [to_string(&e).unwrap(), to_string_pretty(&e).unwrap()] {
        let back: Everything = from_str(&text).unwrap();
        assert_eq!(back, e);
        let back: Everything = from_slice(text.as_bytes()).unwrap();
        assert_eq!(back, e);
        // serde_json reads what we write, and we read what it writes.
        let theirs: Everything = serde_json::from_str(&text).unwrap();
        assert_eq!(theirs, e);
    }
}

#[test]
fn null_in_a_float_field_reads_as_nan() {
    // The writer writes NaN as null (as serde_json does); we read it back as NaN, so a report
    // with a NaN figure reads back. serde_json refuses it.
    let text = to_string(&everything()).unwrap();
    let back = from_str::<Everything>(&text).unwrap();
    assert!(back.fixed[2].is_nan());
    assert!(serde_json::from_str::<Everything>(&text).is_err());
    // Elsewhere null is still no number.
    assert_eq!(
        from_str::<Vec<u64>>("[1, null]").unwrap_err().to_string(),
        "[1]: expected u64, found null"
    );
}

#[derive(Debug, PartialEq, Deserialize)]
struct Run {
    points: Vec<Point>,
    #[serde(default)]
    extra: Option<Box<Run>>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Point {
    name: String,
    nr: u64,
}

#[test]
fn type_errors_name_the_path() {
    let text = r#"{"points": [{"name": "a", "nr": 1}, {"name": "b", "nr": "x"}]}"#;
    let err = from_str::<Run>(text).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"points[1].nr: expected u64, found string "x""#
    );
    assert_eq!(err.path(), "points[1].nr");
    assert_eq!(err.line(), None);

    let text = r#"{"points": [], "extra": {"points": [{"name": "a"}]}}"#;
    let err = from_str::<Run>(text).unwrap_err();
    assert_eq!(err.to_string(), "extra.points[0]: missing field `nr`");

    let text = r#"{"points": [{"name": "a", "nr": -1}]}"#;
    assert_eq!(
        from_str::<Run>(text).unwrap_err().to_string(),
        "points[0].nr: expected u64, found integer -1"
    );
    let err = from_str::<BTreeMap<String, u8>>(r#"{"a b": 300}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"["a b"]: expected u8, found integer 300"#
    );
    let err = from_str::<Run>("[]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid length 0, expected struct Run with 2 elements"
    );
    let err = from_str::<Run>("5").unwrap_err();
    assert_eq!(err.to_string(), "expected struct Run, found integer 5");
    let long = format!("{{\"points\": {:?}}}", "y".repeat(100));
    let err = from_str::<Run>(&long).unwrap_err().to_string();
    assert!(err.len() < 120, "{err}");
}

#[test]
fn syntax_errors_give_line_and_column() {
    let err = from_str::<Run>("{\n  \"points\": [1,]\n}").unwrap_err();
    assert_eq!((err.line(), err.column()), (Some(2), Some(16)), "{err}");
    assert_eq!(err.to_string(), "expected a value at line 2 column 16");
    let err = from_str::<u8>("").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unexpected end of input, expected a value at line 1 column 1"
    );
    let err = from_str::<u8>("1 2").unwrap_err();
    assert_eq!(
        err.to_string(),
        "trailing characters after the value at line 1 column 3"
    );
    let err = from_slice::<String>(b"\"ab\xff\"").unwrap_err();
    assert_eq!(err.to_string(), "invalid UTF-8 at line 1 column 4");
    for bad in [
        "01",
        "-",
        "1.",
        ".5",
        "1e",
        "+1",
        "[1 2]",
        "{\"a\" 1}",
        "{1: 2}",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"a\nb\"",
        "nul",
        "tru",
        "[",
        "{",
        "\"abc",
        "1e400",
        "-1e400",
        "NaN",
        "Infinity",
        "[1,]",
        "{\"a\":1,}",
        "//",
        "\u{feff}1",
    ] {
        assert!(from_str::<serde_json::Value>(bad).is_err(), "{bad:?}");
        assert!(
            serde_json::from_str::<serde_json::Value>(bad).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn numbers_reach_any_numeric_type_with_range_checks() {
    assert_eq!(from_str::<u8>("255").unwrap(), 255);
    assert!(from_str::<u8>("256").is_err());
    assert_eq!(from_str::<i8>("-128").unwrap(), -128);
    assert!(from_str::<i8>("-129").is_err());
    assert!(from_str::<u64>("-1").is_err());
    assert!(from_str::<u64>("1.0").is_err());
    assert!(from_str::<u64>("18446744073709551616").is_err());
    assert_eq!(from_str::<u64>("18446744073709551615").unwrap(), u64::MAX);
    assert_eq!(from_str::<i64>("-9223372036854775808").unwrap(), i64::MIN);
    assert_eq!(
        from_str::<u128>("18446744073709551615").unwrap(),
        u128::from(u64::MAX)
    );
    assert_eq!(from_str::<f64>("5").unwrap(), 5.0);
    assert_eq!(from_str::<f64>("-5").unwrap(), -5.0);
    assert_eq!(from_str::<f64>("1e300").unwrap(), 1e300);
    assert_eq!(
        from_str::<f64>("18446744073709551616").unwrap(),
        18446744073709551616.0
    );
    assert_eq!(from_str::<f32>("0.1").unwrap(), 0.1f32);
    assert_eq!(from_str::<char>("\"é\"").unwrap(), 'é');
    assert!(from_str::<char>("\"ab\"").is_err());
    assert_eq!(
        from_str::<String>(r#""\u00e9\ud83e\udd80\/\b""#).unwrap(),
        "é🦀/\u{8}"
    );
    assert_eq!(
        from_str::<BTreeMap<i32, bool>>(r#"{"-3": true, "7": false}"#).unwrap(),
        BTreeMap::from([(-3, true), (7, false)])
    );
    assert!(from_str::<BTreeMap<i32, bool>>(r#"{"x": true}"#).is_err());
    assert_eq!(
        from_str::<(u8, Option<u8>, ())>("[1, null, null]").unwrap(),
        (1, None, ())
    );
    assert!(from_str::<(u8, u8)>("[1, 2, 3]").is_err());
    assert!(from_str::<(u8, u8)>("[1]").is_err());
}

#[test]
fn enums_options_and_unknown_fields() {
    assert_eq!(from_str::<Kind>("\"unit\"").unwrap(), Kind::Unit);
    assert_eq!(from_str::<Kind>("{\"unit\": null}").unwrap(), Kind::Unit);
    assert_eq!(
        from_str::<Kind>("{\"newtype\": 5}").unwrap(),
        Kind::Newtype(5)
    );
    assert_eq!(
        from_str::<Kind>("{\"struct\": {\"a\": 1, \"b\": null, \"c\": [{}]}}").unwrap(),
        Kind::Struct { a: 1.0, b: None }
    );
    assert_eq!(
        from_str::<Kind>("{\"newtype\": \"x\"}")
            .unwrap_err()
            .to_string(),
        "newtype: expected u32, found string \"x\""
    );
    assert!(from_str::<Kind>("\"nope\"").is_err());
    assert!(from_str::<Kind>("{\"unit\": null, \"newtype\": 1}").is_err());
    assert!(from_str::<Kind>("[]").is_err());
    assert_eq!(from_str::<Option<Option<u8>>>("null").unwrap(), None);
    assert_eq!(from_str::<Option<u8>>("4").unwrap(), Some(4));
    assert_eq!(from_str::<Unit>("null").unwrap(), Unit);
    assert_eq!(from_str::<Newtype>("\"n\"").unwrap(), Newtype("n".into()));
    let p: Point =
        from_str(r#"{"skip": {"deep": [1, {"x": null}]}, "name": "a", "nr": 2}"#).unwrap();
    assert_eq!(
        p,
        Point {
            name: "a".into(),
            nr: 2
        }
    );
    let dup = from_str::<Point>(r#"{"name": "a", "nr": 2, "nr": 3}"#).unwrap_err();
    assert_eq!(dup.to_string(), "duplicate field `nr`");
}

#[test]
fn nesting_is_bounded() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_ok());
    let err = from_str::<serde_json::Value>(&nested(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(err.column(), Some(MAX_DEPTH + 1), "{err}");
    // Deep enough to overflow the stack without the bound.
    let deep = "[{\"a\":".repeat(1_000_000);
    assert!(from_str::<serde_json::Value>(&deep).is_err());
    assert!(from_str::<serde::de::IgnoredAny>(&"[".repeat(1_000_000)).is_err());
    // serde_json's bound is one lower.
    assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH - 1)).is_ok());
    assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_err());
}

/// Equal, but for floats a few units in the last place apart: serde_json's default float
/// parser is not always correctly rounded (`9.663437592245355e-110` reads as
/// `9.663437592245357e-110`); ours is the standard library's.
fn nearly_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= x.abs().max(y.abs()) * 1e-15
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| nearly_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && nearly_equal(x, y))
        }
        _ => a == b,
    }
}

/// Random bytes, and valid documents with random damage: always `Ok` or `Err`, never a panic,
/// and the same verdict (and value) as serde_json.
#[test]
fn fuzzed_input_never_panics_and_agrees_with_serde_json() {
    let mut rng = Rng(0xdead_beef_cafe);
    let alphabet = b"{}[]\",:0123456789-+.eEtrufalsn \\u\n\xc3\xa9\xff";
    let mut oks = 0;
    for round in 0..30_000 {
        let mut bytes: Vec<u8> = if round % 3 == 0 {
            (0..rng.below(40))
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect()
        } else {
            let v = random_value(&mut rng, 0);
            let text = if rng.chance(2) {
                serde_json::to_string(&v).unwrap()
            } else {
                serde_json::to_string_pretty(&v).unwrap()
            };
            text.into_bytes()
        };
        for _ in 0..rng.below(4) {
            if bytes.is_empty() {
                break;
            }
            let i = rng.below(bytes.len() as u64) as usize;
            match rng.below(4) {
                0 => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, alphabet[rng.below(alphabet.len() as u64) as usize]),
                2 => bytes[i] = alphabet[rng.below(alphabet.len() as u64) as usize],
                _ => bytes.truncate(i),
            }
        }
        let ours: Result<serde_json::Value, Error> = from_slice(&bytes);
        let theirs: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => {
                assert!(
                    nearly_equal(a, b),
                    "{:?}: {a} {b}",
                    String::from_utf8_lossy(&bytes)
                );
                oks += 1;
            }
            (Err(_), Err(_)) => {}
            _ => panic!(
                "{:?}: ours {ours:?}, serde_json {theirs:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
        // A typed target takes other paths through the deserializer.
        let _ = from_slice::<Vec<Point>>(&bytes);
        let _ = from_slice::<Option<Kind>>(&bytes);
        let _ = from_slice::<BTreeMap<u8, Option<f32>>>(&bytes);
    }
    assert!(
        oks > 5_000,
        "{oks} documents survived: the fuzzing is too destructive"
    );
}
