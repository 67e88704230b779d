//! Stacks as a pprof profile: each sample's locations chained from the leaf to the root (as
//! `profile.proto` orders them), so `go tool pprof -top -cum`, `-tree`, `-peek` and `-web`
//! show a call graph.
//!
//! Two sources, as for folded stacks (`folded.rs`): the sampler's stacks (`heatmap.stacks`,
//! one value, `samples/count`: one pprof sample per stack, the frames' function, library and
//! `file:line` as its locations) and the points tree (values `self/nanoseconds` (default) and
//! `calls/count`: one sample per tree node, its path of points as its locations). pprof's
//! flat value of a point is then its self time, summed over its paths, and its cumulative
//! value its total time (each sample counted once even where a point recurses). Self times are
//! the tree's as folded stacks give them (scaled by calls / timed where sampled).
//!
//! The flat pprof (`pprof.rs`, `to_pprof`) stays as it was: one sample per point with its calls,
//! self and total as the JSON has them.
//!
//! [`cpu_pprof`] writes the sampler's profile of a window alone, as Go's `runtime/pprof` writes
//! a CPU profile (what `/debug/pprof/profile?seconds=N` serves): sample types `samples/count`
//! and `cpu/nanoseconds` (`wall` for a wall-clock sampler), each sample's time its count times
//! the period; `period_type` and `period` the sampling interval; `time_nanos` and
//! `duration_nanos` the window. `go tool pprof`, Parca and Pyroscope read it as they read Go's,
//! with no flag. No points' figures are in it.

use crate::folded::StackSource;
use crate::model::{PointsTree, Report};
use crate::pprof::{
    Strings, bytes, finish, gzip, location_and_function, packed, program_mapping, value_type,
};
#[cfg(feature = "heatmap")]
use crate::pprof::{program_mapping_named, uint};
use std::collections::HashMap;

/// A function and its location (one location per function: a stack names functions).
#[derive(Default)]
struct Table {
    /// (name, file, line) -> location id (= function id).
    ids: HashMap<(String, String, u64), u64>,
    order: Vec<(String, String, u64)>,
}

impl Table {
    fn id(&mut self, name: &str, file: &str, line: u64) -> u64 {
        let key = (name.to_string(), file.to_string(), line);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        self.order.push(key.clone());
        let id = self.order.len() as u64;
        self.ids.insert(key, id);
        id
    }
}

/// A profile of `samples` (locations leaf first, values) with `types` (the first is the
/// default), every location in `table`.
fn encode(
    r: &Report,
    types: &[(&str, &str)],
    table: &Table,
    samples: &[(Vec<u64>, Vec<u64>)],
) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut out = Vec::new();
    for &(kind, unit) in types {
        let vt = value_type(&mut strings, kind, unit);
        bytes(&mut out, 1, &vt);
    }
    for (locs, values) in samples {
        let mut s = Vec::new();
        bytes(&mut s, 1, &packed(locs));
        bytes(&mut s, 2, &packed(values));
        bytes(&mut out, 2, &s);
    }
    program_mapping(&mut out, &mut strings, r);
    for (i, (name, file, line)) in table.order.iter().enumerate() {
        location_and_function(&mut out, &mut strings, i as u64 + 1, name, file, *line);
    }
    let default = strings.id(types[0].0);
    finish(out, strings, r, default)
}

/// The points tree's samples: one per node with a value, locations leaf first.
fn tree_samples(tree: &PointsTree, table: &mut Table) -> Vec<(Vec<u64>, Vec<u64>)> {
    // Each node's location, made when a rendered path first holds it (0: not yet): a node
    // past the cut is in no path.
    let mut loc = vec![0u64; tree.nodes.len()];
    // A path past `PATH_DEPTH` is cut there, one `...` location standing for the rest, and the
    // nodes below the cut are one sample (as in folded stacks): linear in the nodes.
    let cut = tree.path_cut();
    let mut samples = Vec::new();
    let mut deep: std::collections::BTreeMap<usize, (u64, u64)> = Default::default();
    for (i, n) in tree.nodes.iter().enumerate() {
        let (self_ns, calls) = (n.est_self_ns(), n.calls);
        if self_ns == 0 && calls == 0 {
            continue;
        }
        match cut.end(i) {
            (end, true) => {
                let e = deep.entry(end).or_default();
                *e = (e.0.saturating_add(self_ns), e.1.saturating_add(calls));
            }
            (end, false) => {
                let locs = path_locs(tree, end, &mut loc, table);
                samples.push((locs, vec![self_ns, calls]));
            }
        }
    }
    for (end, (self_ns, calls)) in deep {
        let mut locs = vec![table.id(crate::model::CUT_FRAME, "", 0)];
        locs.extend(path_locs(tree, end, &mut loc, table));
        samples.push((locs, vec![self_ns, calls]));
    }
    samples
}

/// The locations of node `i`'s path, leaf first (`i` within `PATH_DEPTH`).
fn path_locs(tree: &PointsTree, i: usize, loc: &mut [u64], table: &mut Table) -> Vec<u64> {
    let mut locs = Vec::new();
    let mut at = Some(i);
    while let Some(j) = at {
        if locs.len() == crate::model::PATH_DEPTH {
            break;
        }
        if loc[j] == 0 {
            let n = &tree.nodes[j];
            loc[j] = table.id(&n.name, &n.file, u64::from(n.line));
        }
        locs.push(loc[j]);
        at = tree.nodes[j].parent.filter(|&p| p < j);
    }
    locs
}

/// The sampled stacks' samples.
#[cfg(feature = "heatmap")]
fn stack_samples(
    stacks: &crate::heatmap::StackReport,
    table: &mut Table,
) -> Vec<(Vec<u64>, Vec<u64>)> {
    stacks
        .stacks
        .iter()
        .filter(|s| !s.frames.is_empty() && s.count > 0)
        .map(|s| {
            let locs = s
                .frames
                .iter()
                .rev()
                .map(|f| {
                    let (name, file, line) = crate::pprof::sampled_site(
                        &f.function,
                        f.library.as_deref(),
                        f.location.as_deref(),
                    );
                    table.id(&name, &file, line)
                })
                .collect();
            (locs, vec![s.count])
        })
        .collect()
}

impl Report {
    /// A pprof profile (gzipped) with stacks of `source` (see [`Report::stack_source`]);
    /// empty of samples when the report lacks it.
    pub fn to_pprof_stacks_of(&self, source: StackSource) -> Vec<u8> {
        let mut table = Table::default();
        let raw = match source {
            StackSource::Points => {
                let samples = self
                    .tree
                    .as_ref()
                    .map(|t| tree_samples(t, &mut table))
                    .unwrap_or_default();
                encode(
                    self,
                    &[("self", "nanoseconds"), ("calls", "count")],
                    &table,
                    &samples,
                )
            }
            StackSource::Sampled => {
                #[cfg(feature = "heatmap")]
                let samples = self
                    .heatmap
                    .as_ref()
                    .and_then(|h| h.stacks.as_ref())
                    .map(|s| stack_samples(s, &mut table))
                    .unwrap_or_default();
                #[cfg(not(feature = "heatmap"))]
                let samples = Vec::new();
                encode(self, &[("samples", "count")], &table, &samples)
            }
        };
        gzip(&raw)
    }

    /// A pprof profile with stacks: the sampled stacks when the report has them, else the
    /// points tree.
    pub fn to_pprof_stacks(&self) -> Vec<u8> {
        self.to_pprof_stacks_of(self.stack_source().unwrap_or(StackSource::Points))
    }

    /// A pprof profile of the points tree, whatever else the report holds.
    pub fn to_points_pprof(&self) -> Vec<u8> {
        self.to_pprof_stacks_of(StackSource::Points)
    }
}

/// The sampler's profile `heat` of the window from `start_unix_ns`, `duration_ns` long, as a
/// gzipped CPU profile of program `program`, the way Go's `runtime/pprof` writes one (see the
/// module's documentation): the sampled stacks when the sampler took them, else one flat
/// sample per row of the heatmap (its top functions). Samples whose stack found no room in the
/// sampler's table are one sample at `[stack table full]`.
#[cfg(feature = "heatmap")]
pub fn cpu_pprof(
    heat: &crate::heatmap::Report,
    program: &str,
    start_unix_ns: u64,
    duration_ns: u64,
) -> Vec<u8> {
    let kind = if heat.mode == "wall" { "wall" } else { "cpu" };
    let period = 1_000_000_000 / u64::from(heat.requested_hz.max(1));
    let mut table = Table::default();
    let mut samples = match &heat.stacks {
        Some(st) => {
            let mut v = stack_samples(st, &mut table);
            if st.dropped > 0 {
                v.push((
                    vec![table.id("[stack table full]", "", 0)],
                    vec![st.dropped],
                ));
            }
            v
        }
        None => heat
            .rows
            .iter()
            .filter(|row| row.nr > 0)
            .map(|row| {
                let (name, file, line) = crate::pprof::sampled_site(
                    &row.function,
                    row.library.as_deref(),
                    row.location.as_deref(),
                );
                (vec![table.id(&name, &file, line)], vec![row.nr])
            })
            .collect(),
    };
    for (_, values) in &mut samples {
        let n = values[0];
        values.push(n.saturating_mul(period));
    }
    let mut strings = Strings::new();
    let mut out = Vec::new();
    for (k, unit) in [("samples", "count"), (kind, "nanoseconds")] {
        let vt = value_type(&mut strings, k, unit);
        bytes(&mut out, 1, &vt);
    }
    for (locs, values) in &samples {
        let mut s = Vec::new();
        bytes(&mut s, 1, &packed(locs));
        bytes(&mut s, 2, &packed(values));
        bytes(&mut out, 2, &s);
    }
    program_mapping_named(&mut out, &mut strings, program);
    for (i, (name, file, line)) in table.order.iter().enumerate() {
        location_and_function(&mut out, &mut strings, i as u64 + 1, name, file, *line);
    }
    // time_nanos (9), duration_nanos (10), period_type (11), period (12),
    // default_sample_type (14), then the string table (6).
    uint(&mut out, 9, start_unix_ns);
    uint(&mut out, 10, duration_ns);
    let pt = value_type(&mut strings, kind, "nanoseconds");
    bytes(&mut out, 11, &pt);
    uint(&mut out, 12, period);
    uint(&mut out, 14, strings.id(kind));
    for s in &strings.table {
        bytes(&mut out, 6, s.as_bytes());
    }
    gzip(&out)
}

#[cfg(all(test, feature = "heatmap"))]
mod tests {
    use super::cpu_pprof;
    use crate::folded::tests::{heat, stacks};

    /// A protobuf field: its number, its varint value (0 for a payload) and its payload.
    type Field = (u64, u64, Vec<u8>);

    /// The fields of message `b`.
    fn fields(mut b: &[u8]) -> Vec<Field> {
        fn varint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            if key & 7 == 2 {
                let n = varint(&mut b) as usize;
                out.push((key >> 3, 0, b[..n].to_vec()));
                b = &b[n..];
            } else {
                out.push((key >> 3, varint(&mut b), Vec::new()));
            }
        }
        out
    }

    fn packed(b: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        let (mut v, mut shift) = (0u64, 0);
        for &byte in b {
            v |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                out.push(v);
                (v, shift) = (0, 0);
            }
        }
        out
    }

    /// The decoded profile: its top-level fields and its string table.
    fn decode(gz: &[u8]) -> (Vec<Field>, Vec<String>) {
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz), &mut raw).unwrap();
        let top = fields(&raw);
        let strings = top
            .iter()
            .filter(|f| f.0 == 6)
            .map(|f| String::from_utf8(f.2.clone()).unwrap())
            .collect();
        (top, strings)
    }

    fn value_type(b: &[u8], strings: &[String]) -> (String, String) {
        let g = fields(b);
        let s = |n| strings[g.iter().find(|f| f.0 == n).map_or(0, |f| f.1) as usize].clone();
        (s(1), s(2))
    }

    #[test]
    fn a_cpu_profile_is_written_as_gos_with_the_stacks_and_the_window() {
        let mut st = stacks();
        st.dropped = 5;
        let (top, strings) = decode(&cpu_pprof(&heat(Some(st)), "prog", 7, 2_000_000_000));
        let types: Vec<_> = top
            .iter()
            .filter(|f| f.0 == 1)
            .map(|f| value_type(&f.2, &strings))
            .collect();
        let t = |k: &str, u: &str| (k.to_string(), u.to_string());
        assert_eq!(types, [t("samples", "count"), t("cpu", "nanoseconds")]);
        let varint = |n| top.iter().find(|f| f.0 == n).map(|f| f.1);
        assert_eq!(varint(9), Some(7), "time_nanos");
        assert_eq!(varint(10), Some(2_000_000_000), "duration_nanos");
        let period = 1_000_000_000 / 997;
        assert_eq!(varint(12), Some(period), "period");
        assert_eq!(strings[varint(14).unwrap() as usize], "cpu", "default");
        let pt = top.iter().find(|f| f.0 == 11).unwrap();
        assert_eq!(value_type(&pt.2, &strings), t("cpu", "nanoseconds"));
        // Samples: their stacks leaf first (the frameless stack left out), cpu = count x
        // period, and the dropped samples at one location of their own.
        let samples: Vec<(usize, Vec<u64>)> = top
            .iter()
            .filter(|f| f.0 == 2)
            .map(|f| {
                let g = fields(&f.2);
                let get = |n| packed(&g.iter().find(|x| x.0 == n).unwrap().2);
                (get(1).len(), get(2))
            })
            .collect();
        let depths: Vec<usize> = samples.iter().map(|s| s.0).collect();
        assert_eq!(depths, [3, 3, 3, 1, 1]);
        for (_, v) in &samples {
            assert_eq!(v[1], v[0] * period, "{v:?}");
        }
        let counts: Vec<u64> = samples.iter().map(|s| s.1[0]).collect();
        assert_eq!(counts, [81, 10, 9, 12, 5]);
        assert!(strings.iter().any(|s| s == "[stack table full]"));
        // No points' figures.
        assert!(!strings.iter().any(|s| s == "self" || s == "calls"));
    }

    #[test]
    fn without_stacks_a_cpu_profile_has_the_rows_and_a_wall_sampler_says_wall() {
        let mut h = heat(None);
        h.mode = "wall".into();
        h.rows = vec![crate::heatmap::Row {
            address: 0x1000,
            function: "hot".into(),
            library: None,
            nr: 40,
            percent: 100.0,
            location: Some("src/hot.rs:12".into()),
            inlined: Vec::new(),
        }];
        let (top, strings) = decode(&cpu_pprof(&h, "prog", 0, 1));
        let types: Vec<_> = top
            .iter()
            .filter(|f| f.0 == 1)
            .map(|f| value_type(&f.2, &strings).0)
            .collect();
        assert_eq!(types, ["samples", "wall"]);
        let samples: Vec<_> = top.iter().filter(|f| f.0 == 2).collect();
        assert_eq!(samples.len(), 1);
        assert!(strings.iter().any(|s| s == "hot") && strings.iter().any(|s| s == "src/hot.rs"));
    }
}
