//! The dump file: a [`Profile`] on disk, to report from later or elsewhere.
//!
//! # Format, version 3 (versions 1 and 2 are still read)
//!
//! All integers little-endian; `str` is a `u32` byte length then that many bytes of UTF-8;
//! `bytes` is a `u32` length then the bytes.
//!
//! ```text
//! magic        8 bytes  "HEATMAP\0"
//! version      u32      3 (2: the same without the stacks section; 1: also without watcher_cpu_ns)
//! mode         u8       0 = cpu, 1 = wall
//! source       u8       0 = perf task-clock, 1 = setitimer, 2 = tgkill
//! reserved     u16      0
//! requested_hz u32      1..=100000
//! shift        u32      0..=24
//! other        u64      samples outside every segment
//! proc_samples u64      wall mode: samples of blocked threads read from /proc
//! user_cpu_ns  u64      user CPU time of the process while sampling
//! sys_cpu_ns   u64      system CPU time of the process while sampling
//! wall_ns      u64      wall time of the run
//! threads      u64      threads given a perf event
//! watcher_cpu_ns u64    CPU time of the sampler's watcher thread (version 2 on)
//! n_warnings   u32, then n_warnings × str            (each <= 64 KiB)
//! n_objects    u32, then n_objects × {
//!     path str (<= 4 KiB), bias u64, kind u8 (0 main, 1 shared, 2 vdso), build_id bytes (<= 64) }
//! n_segments   u32, then n_segments × {
//!     object u32 (< n_objects), start u64, end u64 (> start), n_counts u32,
//!     then n_counts × { bucket u32 (strictly increasing, < bucket count), samples u64 (> 0) } }
//! has_stacks   u8       0 = no stacks, 1 = the stacks section follows (version 3 on)
//! stacks section: depth u32 (1..=128), dropped u64, truncated u64,
//!     n_cuts u32, then n_cuts × { reason str (<= 4 KiB), samples u64 },
//!     n_stacks u32, then n_stacks × { tag u32, samples u64 (> 0), n_frames u32 (1..=depth),
//!     then n_frames × address u64 (leaf first: the pc, then return addresses) }
//! checksum     u64      FNV-1a 64 of every byte before it, magic included
//! ```
//!
//! The reader checks magic and version first (a foreign file or a future version says so),
//! then the checksum (a corrupt file says so before any field is trusted), then every field
//! against the rules above; counts are checked against the bytes left before anything is
//! allocated. No input makes it panic: `tests/dump.rs` runs it on arbitrary bytes, on every
//! truncation of a real dump and on every single-bit flip of one.
//!
//! To change the format, bump [`VERSION`], keep reading older versions if dumps must outlive them,
//! and document the new layout here.

use std::io::Write;

use crate::buckets::{ObjectFile, ObjectKind};
use crate::config::{MAX_HZ, MAX_SHIFT, Mode};
use crate::error::DumpError;
use crate::profile::{Profile, Segment, SourceUsed};
use crate::stacks::{MAX_DEPTH, RawStack, RawStacks};

/// The first 8 bytes of every dump.
pub(crate) const MAGIC: [u8; 8] = *b"HEATMAP\0";
/// The format version this crate writes and reads.
pub(crate) const VERSION: u32 = 3;

const MAX_WARNING: usize = 64 * 1024;
const MAX_PATH: usize = 4096;
const MAX_BUILD_ID: usize = 64;

/// FNV-1a, 64 bits: small, dependency-free, and enough to tell corruption from content.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Profile {
    /// Writes this profile in the dump format (see the `dump` module docs).
    pub fn write_dump(&self, w: &mut dyn Write) -> std::io::Result<()> {
        w.write_all(&self.to_dump_bytes())
    }

    /// The dump as bytes.
    pub fn to_dump_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(1024);
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.push(match self.mode {
            Mode::Cpu => 0,
            Mode::Wall => 1,
        });
        b.push(match self.source {
            SourceUsed::PerfTaskClock => 0,
            SourceUsed::Setitimer => 1,
            SourceUsed::Tgkill => 2,
        });
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&self.requested_hz.to_le_bytes());
        b.extend_from_slice(&self.shift.to_le_bytes());
        for v in [
            self.other,
            self.proc_samples,
            self.user_cpu_ns,
            self.sys_cpu_ns,
            self.wall_ns,
            self.threads,
            self.watcher_cpu_ns,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let put_bytes = |b: &mut Vec<u8>, s: &[u8]| {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s);
        };
        let cut = |s: &str, max: usize| -> String {
            let mut end = s.len().min(max);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_owned()
        };
        b.extend_from_slice(&(self.warnings.len() as u32).to_le_bytes());
        for w in &self.warnings {
            put_bytes(&mut b, cut(w, MAX_WARNING).as_bytes());
        }
        b.extend_from_slice(&(self.objects.len() as u32).to_le_bytes());
        for o in &self.objects {
            put_bytes(&mut b, cut(&o.path, MAX_PATH).as_bytes());
            b.extend_from_slice(&o.bias.to_le_bytes());
            b.push(match o.kind {
                ObjectKind::Main => 0,
                ObjectKind::Shared => 1,
                ObjectKind::Vdso => 2,
            });
            put_bytes(&mut b, &o.build_id[..o.build_id.len().min(MAX_BUILD_ID)]);
        }
        b.extend_from_slice(&(self.segments.len() as u32).to_le_bytes());
        for s in &self.segments {
            b.extend_from_slice(&(s.object as u32).to_le_bytes());
            b.extend_from_slice(&s.start.to_le_bytes());
            b.extend_from_slice(&s.end.to_le_bytes());
            b.extend_from_slice(&(s.counts.len() as u32).to_le_bytes());
            for &(i, n) in &s.counts {
                b.extend_from_slice(&i.to_le_bytes());
                b.extend_from_slice(&n.to_le_bytes());
            }
        }
        match &self.stacks {
            None => b.push(0),
            Some(st) => {
                b.push(1);
                b.extend_from_slice(&st.depth.to_le_bytes());
                b.extend_from_slice(&st.dropped.to_le_bytes());
                b.extend_from_slice(&st.truncated.to_le_bytes());
                b.extend_from_slice(&(st.cuts.len() as u32).to_le_bytes());
                for (reason, n) in &st.cuts {
                    put_bytes(&mut b, cut(reason, MAX_PATH).as_bytes());
                    b.extend_from_slice(&n.to_le_bytes());
                }
                b.extend_from_slice(&(st.stacks.len() as u32).to_le_bytes());
                for s in &st.stacks {
                    b.extend_from_slice(&s.tag.to_le_bytes());
                    b.extend_from_slice(&s.count.to_le_bytes());
                    b.extend_from_slice(&(s.frames.len() as u32).to_le_bytes());
                    for f in &s.frames {
                        b.extend_from_slice(&f.to_le_bytes());
                    }
                }
            }
        }
        let sum = fnv1a(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads a dump written by [`write_dump`](Self::write_dump). Any input that is not a
    /// complete, intact version-1 dump is an error naming what is wrong; never a panic.
    pub fn read_dump(bytes: &[u8]) -> Result<Profile, DumpError> {
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
            let n = bytes.len().min(MAGIC.len());
            if bytes[..n] == MAGIC[..n] {
                return Err(DumpError::Truncated {
                    what: "magic",
                    offset: n,
                    len: bytes.len(),
                });
            }
            return Err(DumpError::BadMagic {
                found: bytes[..n].to_vec(),
            });
        }
        let mut r = Reader {
            bytes,
            pos: MAGIC.len(),
            end: bytes.len(),
        };
        let version = r.u32("version")?;
        if !(1..=VERSION).contains(&version) {
            return Err(DumpError::UnsupportedVersion {
                found: version,
                expected: VERSION,
            });
        }
        if bytes.len() < r.pos + 8 {
            return Err(DumpError::Truncated {
                what: "checksum",
                offset: r.pos,
                len: bytes.len(),
            });
        }
        let body_end = bytes.len() - 8;
        let stored = u64::from_le_bytes(bytes[body_end..].try_into().expect("8 bytes"));
        let computed = fnv1a(&bytes[..body_end]);
        if stored != computed {
            return Err(DumpError::Checksum { stored, computed });
        }
        r.end = body_end;
        let mode = match r.u8("mode")? {
            0 => Mode::Cpu,
            1 => Mode::Wall,
            v => return Err(invalid("mode", v, "0 (cpu) or 1 (wall)")),
        };
        let source = match r.u8("source")? {
            0 => SourceUsed::PerfTaskClock,
            1 => SourceUsed::Setitimer,
            2 => SourceUsed::Tgkill,
            v => {
                return Err(invalid(
                    "source",
                    v,
                    "0 (perf task-clock), 1 (setitimer) or 2 (tgkill)",
                ));
            }
        };
        let reserved = r.u16("reserved")?;
        if reserved != 0 {
            return Err(invalid("reserved", reserved, "0"));
        }
        let requested_hz = r.u32("requested_hz")?;
        if !(1..=MAX_HZ).contains(&requested_hz) {
            return Err(invalid("requested_hz", requested_hz, "1 to 100000"));
        }
        let shift = r.u32("shift")?;
        if shift > MAX_SHIFT {
            return Err(invalid("shift", shift, "0 to 24"));
        }
        let other = r.u64("other")?;
        let proc_samples = r.u64("proc_samples")?;
        let user_cpu_ns = r.u64("user_cpu_ns")?;
        let sys_cpu_ns = r.u64("sys_cpu_ns")?;
        let wall_ns = r.u64("wall_ns")?;
        let threads = r.u64("threads")?;
        let watcher_cpu_ns = if version >= 2 {
            r.u64("watcher_cpu_ns")?
        } else {
            0
        };

        let n = r.count("n_warnings", 4)?;
        let mut warnings = Vec::with_capacity(n);
        for _ in 0..n {
            warnings.push(r.string("warning", MAX_WARNING)?);
        }

        // Each object takes at least 4 + 8 + 1 + 4 bytes.
        let n = r.count("n_objects", 17)?;
        let mut objects = Vec::with_capacity(n);
        for _ in 0..n {
            let path = r.string("object path", MAX_PATH)?;
            let bias = r.u64("object bias")?;
            let kind = match r.u8("object kind")? {
                0 => ObjectKind::Main,
                1 => ObjectKind::Shared,
                2 => ObjectKind::Vdso,
                v => {
                    return Err(invalid(
                        "object kind",
                        v,
                        "0 (main), 1 (shared) or 2 (vdso)",
                    ));
                }
            };
            let build_id = r.bytes("build id", MAX_BUILD_ID)?.to_vec();
            objects.push(ObjectFile {
                path,
                bias,
                build_id,
                kind,
            });
        }

        // Each segment takes at least 4 + 8 + 8 + 4 bytes.
        let n = r.count("n_segments", 24)?;
        let mut segments = Vec::with_capacity(n);
        let mut in_buckets = 0u64;
        for _ in 0..n {
            let object = r.u32("segment object")? as usize;
            if object >= objects.len() {
                return Err(invalid(
                    "segment object",
                    object,
                    "an index below the number of objects",
                ));
            }
            let start = r.u64("segment start")?;
            let end = r.u64("segment end")?;
            if end <= start {
                return Err(invalid(
                    "segment end",
                    format!("{end:#x} (start {start:#x})"),
                    "an address above the segment start",
                ));
            }
            let size = 1u64 << shift;
            let buckets = (end - (start & !(size - 1))).div_ceil(size);
            let n_counts = r.count("n_counts", 12)?;
            let mut counts = Vec::with_capacity(n_counts);
            let mut prev: Option<u32> = None;
            for _ in 0..n_counts {
                let i = r.u32("bucket index")?;
                let samples = r.u64("bucket samples")?;
                if u64::from(i) >= buckets || prev.is_some_and(|p| i <= p) {
                    return Err(invalid(
                        "bucket index",
                        i,
                        "strictly increasing indexes below the segment's bucket count",
                    ));
                }
                if samples == 0 {
                    return Err(invalid("bucket samples", 0, "a non-zero count"));
                }
                in_buckets = in_buckets.checked_add(samples).ok_or_else(|| {
                    invalid("bucket samples", samples, "a total that fits in 64 bits")
                })?;
                prev = Some(i);
                counts.push((i, samples));
            }
            segments.push(Segment {
                object,
                start,
                end,
                counts,
            });
        }
        if in_buckets.checked_add(other).is_none() {
            return Err(invalid("other", other, "a total that fits in 64 bits"));
        }
        let stacks = if version >= 3 {
            read_stacks(&mut r)?
        } else {
            None
        };
        if r.pos != r.end {
            return Err(invalid(
                "length",
                format!("{} unread bytes", r.end - r.pos),
                "the checksum right after the last section",
            ));
        }
        Ok(Profile {
            mode,
            source,
            requested_hz,
            shift,
            objects,
            segments,
            other,
            proc_samples,
            user_cpu_ns,
            sys_cpu_ns,
            watcher_cpu_ns,
            wall_ns,
            threads,
            unarmed_cpu_ns: 0,
            warnings,
            stacks,
        })
    }
}

/// The stacks section (version 3 on): `None` when the run had no stacks.
fn read_stacks(r: &mut Reader<'_>) -> Result<Option<RawStacks>, DumpError> {
    match r.u8("has_stacks")? {
        0 => return Ok(None),
        1 => {}
        v => return Err(invalid("has_stacks", v, "0 (no stacks) or 1")),
    }
    let depth = r.u32("stack depth")?;
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(invalid("stack depth", depth, "1 to 128 frames"));
    }
    let dropped = r.u64("stacks dropped")?;
    let truncated = r.u64("stacks truncated")?;
    // Each cut takes at least 4 + 8 bytes.
    let n = r.count("n_cuts", 12)?;
    let mut cuts = Vec::with_capacity(n);
    for _ in 0..n {
        let reason = r.string("cut reason", MAX_PATH)?;
        cuts.push((reason, r.u64("cut samples")?));
    }
    // Each stack takes at least 4 + 8 + 4 + 8 bytes.
    let n = r.count("n_stacks", 24)?;
    let mut stacks = Vec::with_capacity(n);
    for _ in 0..n {
        let tag = r.u32("stack tag")?;
        let count = r.u64("stack samples")?;
        if count == 0 {
            return Err(invalid("stack samples", 0, "a non-zero count"));
        }
        let n_frames = r.count("n_frames", 8)?;
        if n_frames == 0 || n_frames > depth as usize {
            return Err(invalid("n_frames", n_frames, "1 to the stack depth frames"));
        }
        let mut frames = Vec::with_capacity(n_frames);
        for _ in 0..n_frames {
            frames.push(r.u64("frame address")?);
        }
        stacks.push(RawStack { frames, count, tag });
    }
    Ok(Some(RawStacks {
        depth,
        stacks,
        dropped,
        truncated,
        cuts,
    }))
}

fn invalid(what: &'static str, value: impl std::fmt::Display, expected: &'static str) -> DumpError {
    DumpError::Invalid {
        what,
        value: value.to_string(),
        expected,
    }
}

/// A bounds-checked cursor.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DumpError> {
        match self.pos.checked_add(n) {
            Some(e) if e <= self.end => {
                let s = &self.bytes[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            _ => Err(DumpError::Truncated {
                what,
                offset: self.pos,
                len: self.end,
            }),
        }
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, DumpError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, DumpError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DumpError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, DumpError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8 bytes"),
        ))
    }
    /// A count of items of at least `min_size` bytes each, checked against the bytes left.
    fn count(&mut self, what: &'static str, min_size: usize) -> Result<usize, DumpError> {
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_size) > self.end - self.pos {
            return Err(DumpError::Truncated {
                what,
                offset: self.pos,
                len: self.end,
            });
        }
        Ok(n)
    }
    fn bytes(&mut self, what: &'static str, max: usize) -> Result<&'a [u8], DumpError> {
        let n = self.u32(what)? as usize;
        if n > max {
            return Err(DumpError::Invalid {
                what,
                value: format!("{n} bytes long"),
                expected: "a length within the format's limit (see the dump module docs)",
            });
        }
        self.take(n, what)
    }
    fn string(&mut self, what: &'static str, max: usize) -> Result<String, DumpError> {
        let b = self.bytes(what, max)?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|e| invalid(what, e, "valid UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version-2 (no stacks section) and version-1 (also no watcher CPU) dumps still read, as
    /// the same profile without stacks (and with that field 0); version 3 keeps the stacks.
    #[test]
    fn older_dumps_still_read_and_stacks_round_trip() {
        let (objects, segments) = crate::buckets::discover();
        let mut p = Profile {
            mode: Mode::Cpu,
            source: SourceUsed::Tgkill,
            requested_hz: 1000,
            shift: 4,
            objects,
            segments: segments
                .iter()
                .map(|s| Segment {
                    object: s.object,
                    start: s.start,
                    end: s.end,
                    counts: vec![(3, 7)],
                })
                .collect(),
            other: 2,
            proc_samples: 0,
            user_cpu_ns: 5_000_000,
            sys_cpu_ns: 1_000,
            watcher_cpu_ns: 12_345,
            wall_ns: 6_000_000,
            threads: 2,
            unarmed_cpu_ns: 0,
            warnings: vec!["w".to_owned()],
            stacks: None,
        };
        let mut v3 = Vec::new();
        p.write_dump(&mut v3).unwrap();
        assert_eq!(Profile::read_dump(&v3).unwrap(), p);
        // Version 2: the same without the has_stacks byte before the checksum.
        let mut v2 = v3[..v3.len() - 9].to_vec();
        v2[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&2u32.to_le_bytes());
        let sum = fnv1a(&v2);
        v2.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(Profile::read_dump(&v2).unwrap(), p);
        // Version 1: version field 1, no watcher_cpu_ns (8 bytes after the 6 fixed u64s that
        // follow magic, version, mode, source, reserved, hz and shift), checksum recomputed.
        let at = MAGIC.len() + 4 + 1 + 1 + 2 + 4 + 4 + 6 * 8;
        let mut v1 = v2[..v2.len() - 8].to_vec();
        v1[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&1u32.to_le_bytes());
        v1.drain(at..at + 8);
        let sum = fnv1a(&v1);
        v1.extend_from_slice(&sum.to_le_bytes());
        p.watcher_cpu_ns = 0;
        assert_eq!(Profile::read_dump(&v1).unwrap(), p);
        // Version 3 with stacks.
        p.stacks = Some(RawStacks {
            depth: 4,
            stacks: vec![
                RawStack {
                    frames: vec![0x1000, 0x2000, 0x3000],
                    count: 5,
                    tag: 3,
                },
                RawStack {
                    frames: vec![0x1004],
                    count: 1,
                    tag: 0,
                },
            ],
            dropped: 2,
            truncated: 1,
            cuts: vec![("stack read outside the thread's stack".to_owned(), 1)],
        });
        assert_eq!(Profile::read_dump(&p.to_dump_bytes()).unwrap(), p);
        // A stack deeper than the depth is refused, naming the field.
        if let Some(st) = p.stacks.as_mut() {
            st.stacks[0].frames = vec![1; 5];
        }
        let e = Profile::read_dump(&p.to_dump_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("n_frames"), "{e}");
    }
}
