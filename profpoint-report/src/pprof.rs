//! The report as a pprof profile (`profile.proto`, uncompressed; `go tool pprof` and most
//! viewers read it as is): one sample per point, at a location whose function is the point
//! (its name, file and line), with three values: calls (count), self time and total time
//! (nanoseconds). `pprof -top` ranks points by self time, the default sample type.
//!
//! When the report has a heatmap section, a fourth value, `samples` (count), carries it: one
//! sample per heatmap row (function, file and line of its first instruction where debug
//! information exists), zero in the three point values, as the points' samples are zero in
//! it. `pprof -sample_index=samples -top` ranks the sampled functions.
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

/// One sample at its own location and function.
struct Site<'a> {
    name: &'a str,
    file: &'a str,
    line: u64,
    values: Vec<u64>,
}

/// The heatmap's rows as sites: (function, file, line, samples).
#[cfg(feature = "heatmap")]
fn heatmap_sites(r: &Report) -> Vec<(String, String, u64, u64)> {
    let Some(h) = &r.heatmap else {
        return Vec::new();
    };
    h.rows
        .iter()
        .map(|row| {
            let (file, line) = row
                .location
                .as_deref()
                .and_then(|l| l.rsplit_once(':'))
                .and_then(|(f, n)| Some((f.to_string(), n.parse().ok()?)))
                .unwrap_or_default();
            let name = match &row.library {
                Some(lib) if row.function.starts_with('[') => format!("{} {lib}", row.function),
                _ => row.function.clone(),
            };
            (name, file, line, row.nr)
        })
        .collect()
}

#[cfg(not(feature = "heatmap"))]
fn heatmap_sites(_: &Report) -> Vec<(String, String, u64, u64)> {
    Vec::new()
}

pub(super) fn render(r: &Report) -> Vec<u8> {
    let mut strings = Strings(vec![String::new()]);
    let mut out = Vec::new();
    let heat = heatmap_sites(r);
    let mut types = vec![
        ("calls", "count"),
        ("self", "nanoseconds"),
        ("total", "nanoseconds"),
    ];
    if !heat.is_empty() {
        types.push(("samples", "count"));
    }
    // sample_type (field 1).
    for &(kind, unit) in &types {
        let vt = value_type(&mut strings, kind, unit);
        bytes(&mut out, 1, &vt);
    }
    let width = types.len();
    let mut sites: Vec<Site<'_>> = r
        .points
        .iter()
        .map(|p| {
            // An async point has no self time: 0, not its total.
            let mut values = vec![p.nr, p.self_ns.unwrap_or(0), p.total_ns];
            values.resize(width, 0);
            Site {
                name: &p.name,
                file: &p.file,
                line: u64::from(p.line),
                values,
            }
        })
        .collect();
    for (name, file, line, nr) in &heat {
        let mut values = vec![0; width];
        values[3] = *nr;
        sites.push(Site {
            name,
            file,
            line: *line,
            values,
        });
    }
    for (i, site) in sites.iter().enumerate() {
        let id = i as u64 + 1;
        // sample (field 2): location_id (1, packed), value (2, packed).
        let mut s = Vec::new();
        bytes(&mut s, 1, &packed(&[id]));
        bytes(&mut s, 2, &packed(&site.values));
        bytes(&mut out, 2, &s);
        // location (field 4): id (1), line (4) { function_id (1), line (2) }.
        let mut line = Vec::new();
        uint(&mut line, 1, id);
        uint(&mut line, 2, site.line);
        let mut loc = Vec::new();
        uint(&mut loc, 1, id);
        bytes(&mut loc, 4, &line);
        bytes(&mut out, 4, &loc);
        // function (field 5): id (1), name (2), system_name (3), filename (4), start_line (5).
        let mut f = Vec::new();
        uint(&mut f, 1, id);
        let name = strings.id(site.name);
        uint(&mut f, 2, name);
        uint(&mut f, 3, name);
        uint(&mut f, 4, strings.id(site.file));
        uint(&mut f, 5, site.line);
        bytes(&mut out, 5, &f);
    }
    // default_sample_type (14): self time, whatever else the profile carries.
    let default = strings.id("self");
    // time_nanos (9): the run's start; duration_nanos (10): its wall time so far.
    uint(&mut out, 9, r.run.start_unix_ns);
    uint(&mut out, 10, r.wall_ns);
    uint(&mut out, 14, default);
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
