//! The report as a pprof profile (`profile.proto`), gzipped as the format asks ("the
//! serialized proto must be gzip-compressed" on disk) and as `go tool pprof`, Parca and
//! Pyroscope expect: one sample per point, at a location whose function is the point (its name,
//! file and line), with three values: calls (count), self time and total time (nanoseconds).
//! `pprof -top` ranks points by self time, the default sample type. An async point has no self
//! time: its self value is 0, so `-top` leaves it out of the self ranking, and its sample
//! carries the label `self=none (async point)` (`-raw`, `-tags`) to tell that 0 from a
//! measured one. The samples are flat (no call stacks): the total of a point includes the
//! points nested in it, so totals summed over points count nested time more than once.
//!
//! When the report has a heatmap section, a fourth value, `samples` (count), carries it: one
//! sample per heatmap row (function, file and line of its first instruction where debug
//! information exists), zero in the three point values, as the points' samples are zero in
//! it. `pprof -sample_index=samples -top` ranks the sampled functions.
//!
//! One mapping, named after the program (`run.command[0]`), holds every location and says its
//! functions are already symbolised, so pprof neither looks for the binary nor symbolises.
//!
//! The encoder writes protobuf's wire format directly (varints, length-delimited fields): the
//! few message types needed do not justify a protobuf dependency and its code generator. What
//! proves it is the consumers, not our reader: `profpoint/tests/consumers.rs` decodes the
//! output with `protoc --decode` and upstream's `profile.proto` (`third_party/pprof`) and with
//! `go tool pprof -raw` and `-top`, and compares every value with the JSON report's.

use crate::model::Report;

/// Appends a varint.
pub(crate) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `field` as a varint.
pub(crate) fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

/// Appends field `field` as a length-delimited payload (a message, a string, a packed list).
pub(crate) fn bytes(out: &mut Vec<u8>, field: u32, payload: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A packed list of varints.
pub(crate) fn packed(values: &[u64]) -> Vec<u8> {
    let mut v = Vec::new();
    for &x in values {
        varint(&mut v, x);
    }
    v
}

/// The string table: index 0 is "". Looked up through a map: a report of 10,000 points has
/// over 10,000 strings, which a linear search made quadratic.
pub(crate) struct Strings {
    pub(crate) table: Vec<String>,
    index: std::collections::HashMap<String, u64>,
}

impl Strings {
    pub(crate) fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: std::collections::HashMap::from([(String::new(), 0)]),
        }
    }

    pub(crate) fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as u64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

pub(crate) fn value_type(strings: &mut Strings, kind: &str, unit: &str) -> Vec<u8> {
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
    /// An async point: no self time (label `self=none (async point)`).
    no_self: bool,
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
            let (name, file, line) = sampled_site(
                &row.function,
                row.library.as_deref(),
                row.location.as_deref(),
            );
            (name, file, line, row.nr)
        })
        .collect()
}

/// A sampled function's site: its name (a nameless one, `[unknown]` or `[vdso]`, with its
/// file's name, so two libraries' unknowns stay apart), and the file and line of its
/// `file:line` location (empty and 0 without one).
#[cfg(feature = "heatmap")]
pub(crate) fn sampled_site(
    function: &str,
    library: Option<&str>,
    location: Option<&str>,
) -> (String, String, u64) {
    let (file, line) = location
        .and_then(|l| l.rsplit_once(':'))
        .and_then(|(f, n)| Some((f.to_string(), n.parse().ok()?)))
        .unwrap_or_default();
    let name = match library {
        Some(lib) if function.starts_with('[') => format!("{function} {lib}"),
        _ => function.to_owned(),
    };
    (name, file, line)
}

#[cfg(not(feature = "heatmap"))]
fn heatmap_sites(_: &Report) -> Vec<(String, String, u64, u64)> {
    Vec::new()
}

/// The profile, gzipped.
pub(super) fn render(r: &Report) -> Vec<u8> {
    gzip(&encode(r))
}

/// `raw` gzipped, as pprof files are.
pub(crate) fn gzip(raw: &[u8]) -> Vec<u8> {
    // The fastest level, as Go's runtime/pprof writes its profiles: 10,000 points encode in
    // ~7 ms and gzip in ~4 ms more to 352 KB here (release); the default level took ~80 ms
    // more for 300 KB.
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(raw.len() / 4),
        flate2::Compression::fast(),
    );
    // Writing into a Vec cannot fail.
    let _ = std::io::Write::write_all(&mut gz, raw);
    gz.finish().unwrap_or_default()
}

/// The profile's protobuf bytes (not compressed).
fn encode(r: &Report) -> Vec<u8> {
    let mut strings = Strings::new();
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
                no_self: p.self_ns.is_none(),
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
            no_self: false,
        });
    }
    program_mapping(&mut out, &mut strings, r);
    let (self_key, self_none) = (strings.id("self"), strings.id("none (async point)"));
    for (i, site) in sites.iter().enumerate() {
        let id = i as u64 + 1;
        // sample (field 2): location_id (1, packed), value (2, packed), label (3) { key (1),
        // str (2) }.
        let mut s = Vec::new();
        bytes(&mut s, 1, &packed(&[id]));
        bytes(&mut s, 2, &packed(&site.values));
        if site.no_self {
            let mut label = Vec::new();
            uint(&mut label, 1, self_key);
            uint(&mut label, 2, self_none);
            bytes(&mut s, 3, &label);
        }
        bytes(&mut out, 2, &s);
        location_and_function(&mut out, &mut strings, id, site.name, site.file, site.line);
    }
    // default_sample_type: self time, whatever else the profile carries.
    finish(out, strings, r, self_key)
}

/// The profile's one mapping (field 3): id (1), filename (5), has_functions (7),
/// has_filenames (8), has_line_numbers (9): the program, already symbolised.
pub(crate) fn program_mapping(out: &mut Vec<u8>, strings: &mut Strings, r: &Report) {
    program_mapping_named(
        out,
        strings,
        r.run.command.first().map_or("", String::as_str),
    );
}

/// [`program_mapping`] for the program named `program`.
pub(crate) fn program_mapping_named(out: &mut Vec<u8>, strings: &mut Strings, program: &str) {
    let mut m = Vec::new();
    uint(&mut m, 1, 1);
    uint(&mut m, 5, strings.id(program));
    for field in [7, 8, 9] {
        uint(&mut m, field, 1);
    }
    bytes(out, 3, &m);
}

/// Location `id` (field 4: id (1), mapping_id (2), line (4) { function_id (1), line (2) })
/// and its function of the same id (field 5: id (1), name (2), system_name (3), filename (4),
/// start_line (5)).
pub(crate) fn location_and_function(
    out: &mut Vec<u8>,
    strings: &mut Strings,
    id: u64,
    name: &str,
    file: &str,
    line: u64,
) {
    let mut l = Vec::new();
    uint(&mut l, 1, id);
    uint(&mut l, 2, line);
    let mut loc = Vec::new();
    uint(&mut loc, 1, id);
    uint(&mut loc, 2, 1);
    bytes(&mut loc, 4, &l);
    bytes(out, 4, &loc);
    let mut f = Vec::new();
    uint(&mut f, 1, id);
    let n = strings.id(name);
    uint(&mut f, 2, n);
    uint(&mut f, 3, n);
    uint(&mut f, 4, strings.id(file));
    uint(&mut f, 5, line);
    bytes(out, 5, &f);
}

/// The profile's tail: time_nanos (9, the run's start), duration_nanos (10, its wall time so
/// far), default_sample_type (14, the string `default`), then the string table (field 6), last
/// because every index above is assigned by now.
pub(crate) fn finish(mut out: Vec<u8>, strings: Strings, r: &Report, default: u64) -> Vec<u8> {
    uint(&mut out, 9, r.run.start_unix_ns);
    uint(&mut out, 10, r.wall_ns);
    uint(&mut out, 14, default);
    for s in &strings.table {
        bytes(&mut out, 6, s.as_bytes());
    }
    out
}

// The renderer's method on the model lives with the renderer: the model names no renderer.
impl Report {
    /// The points as a pprof profile, gzipped (protobuf inside, as pprof's readers expect):
    /// calls, self and total time per point, for `go tool pprof` and other pprof viewers.
    pub fn to_pprof(&self) -> Vec<u8> {
        render(self)
    }
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
