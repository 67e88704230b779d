//! The points as a pprof profile (`profile.proto`, uncompressed; `go tool pprof` and most
//! viewers read it as is): one sample per point, at a location whose function is the point
//! (its name, file and line), with three values: calls (count), self time and total time
//! (nanoseconds). `pprof -top` then ranks points by self time, the first time value.
//!
//! The encoder writes protobuf's wire format directly (varints, length-delimited fields):
//! the few message types needed do not justify a protobuf dependency.

use super::Report;

/// Appends a varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `field` as a varint.
fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

/// Appends field `field` as a length-delimited payload (a message, a string, a packed list).
fn bytes(out: &mut Vec<u8>, field: u32, payload: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A packed list of varints.
fn packed(values: &[u64]) -> Vec<u8> {
    let mut v = Vec::new();
    for &x in values {
        varint(&mut v, x);
    }
    v
}

/// The string table: index 0 is "".
struct Strings(Vec<String>);

impl Strings {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(i) = self.0.iter().position(|x| x == s) {
            return i as u64;
        }
        self.0.push(s.to_string());
        (self.0.len() - 1) as u64
    }
}

fn value_type(strings: &mut Strings, kind: &str, unit: &str) -> Vec<u8> {
    let mut m = Vec::new();
    uint(&mut m, 1, strings.id(kind));
    uint(&mut m, 2, strings.id(unit));
    m
}

pub(super) fn render(r: &Report) -> Vec<u8> {
    let mut strings = Strings(vec![String::new()]);
    let mut out = Vec::new();
    // sample_type (field 1): calls/count, self/nanoseconds, total/nanoseconds.
    for (kind, unit) in [
        ("calls", "count"),
        ("self", "nanoseconds"),
        ("total", "nanoseconds"),
    ] {
        let vt = value_type(&mut strings, kind, unit);
        bytes(&mut out, 1, &vt);
    }
    for (i, p) in r.points.iter().enumerate() {
        let id = i as u64 + 1;
        // sample (field 2): location_id (1, packed), value (2, packed).
        let mut s = Vec::new();
        bytes(&mut s, 1, &packed(&[id]));
        bytes(&mut s, 2, &packed(&[p.nr, p.self_ns, p.total_ns]));
        bytes(&mut out, 2, &s);
        // location (field 4): id (1), line (4) { function_id (1), line (2) }.
        let mut line = Vec::new();
        uint(&mut line, 1, id);
        uint(&mut line, 2, u64::from(p.line));
        let mut loc = Vec::new();
        uint(&mut loc, 1, id);
        bytes(&mut loc, 4, &line);
        bytes(&mut out, 4, &loc);
        // function (field 5): id (1), name (2), system_name (3), filename (4), start_line (5).
        let mut f = Vec::new();
        uint(&mut f, 1, id);
        let name = strings.id(&p.name);
        uint(&mut f, 2, name);
        uint(&mut f, 3, name);
        uint(&mut f, 4, strings.id(p.file));
        uint(&mut f, 5, u64::from(p.line));
        bytes(&mut out, 5, &f);
    }
    // time_nanos (9): the run's start; duration_nanos (10): its wall time so far.
    uint(&mut out, 9, r.run.start_unix_ns);
    uint(&mut out, 10, r.wall_ns);
    // string_table (field 6), last: every index above is assigned by now.
    let mut table = Vec::new();
    for s in &strings.0 {
        bytes(&mut table, 6, s.as_bytes());
    }
    out.extend_from_slice(&table);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_follow_the_wire_format() {
        let mut v = Vec::new();
        varint(&mut v, 1);
        varint(&mut v, 300);
        assert_eq!(v, [0x01, 0xac, 0x02]);
        let mut f = Vec::new();
        bytes(&mut f, 6, b"ab");
        assert_eq!(f, [0x32, 0x02, b'a', b'b']);
    }
}
