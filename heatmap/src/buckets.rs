//! Buckets: one atomic counter per `1 << shift` bytes of every executable segment.
//!
//! # Concept
//!
//! This is Linux's `/proc/profile` (and Lego's kernel heatmap) moved into a process: instead of
//! recording stacks, the profiler keeps one counter per small slice of machine code and adds one
//! to the slice holding the interrupted instruction at every sample. The memory is allocated
//! once, at start, so the signal handler only has to find a counter and increment it.
//!
//! # Mechanism
//!
//! [`discover`] walks `dl_iterate_phdr(3)`: for the main executable, every shared object and
//! the vDSO, every `PT_LOAD` program header with `PF_X` is an executable segment at run-time
//! address `dlpi_addr + p_vaddr`. It also copies the GNU build id from `PT_NOTE`, so a report
//! made later from a dump can tell when the file on disk is no longer the one that ran.
//!
//! A [`Table`] lays the segments end to end in one `Box<[AtomicU64]>`: a segment starting at
//! `s` (rounded down to `1 << shift`) and ending at `e` owns `ceil((e - s) >> shift)` counters.
//! [`Table::try_hit`] binary-searches the (few, sorted) segments, bounds-checks the pc and does a
//! relaxed `fetch_add`; a pc outside every segment (a JIT page, a library `dlopen`ed less than
//! one scan ago, a bogus pc) adds to [`TableSet::other`] instead, so no sample is ever dropped
//! silently.
//!
//! Counters are `u64`: at 10 kHz on 100 threads a `u32` bucket could wrap in five days; the
//! cost is 8 bytes per 16 bytes of code at the default shift (about half the text size).
//!
//! No padding between counters: two threads hitting neighbouring buckets share a cache line,
//! but a contended `lock xadd` is a small fraction of the signal delivery that precedes it,
//! and smaller still beside the perf sample itself (BENCHMARKS.md, "Figures behind design
//! choices"), so padding would multiply the memory by eight for nothing measurable.
//!
//! # Default shift: 4 (16-byte buckets)
//!
//! rustc and GCC/Clang align function entry points to 16 bytes on x86_64 at `-O` (and 4 or 16
//! on aarch64), and buckets are aligned to `1 << shift` in the address space, so with 16-byte
//! buckets no bucket ever holds the start of two functions: aggregation by function is then
//! exact except for a function's tail sharing a bucket with the next one's padding, which is
//! never executed. Larger shifts save memory (each +1 halves it) at the price of blurring
//! small neighbouring functions, exactly as with readprofile.
//!
//! # Libraries loaded later: generations of chunks
//!
//! A [`Table`] is one chunk: the objects found by one `discover` and their counters. The
//! handler sees a [`TableSet`]: the chunks so far, searched newest first, and one shared
//! "other" counter. When the watcher notices that the dynamic loader added objects (the
//! `dlpi_adds` counter of `dl_iterate_phdr` moved), it allocates a chunk for the new objects
//! only and publishes a new set (old chunks + the new one) with one pointer store; sets and
//! chunks are never freed while sampling, so a handler still reading an older set is safe, and
//! samples it counts there land in chunks the newer set shares. A library is thus bucketed
//! within one scan interval of its `dlopen`; samples before that count as "other". A library
//! unloaded and another loaded at the same address: the newer chunk is searched first.

#[cfg(target_os = "linux")]
use std::ffi::CStr;
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicU64, Ordering};

/// What kind of file an executable segment comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// The program's own executable.
    Main,
    /// A shared object (`.so`), loaded at start-up or by `dlopen` before sampling started.
    Shared,
    /// The kernel's vDSO: in memory only, no file to read symbols from.
    Vdso,
}

/// One loaded ELF object that has at least one executable segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectFile {
    /// Absolute path of the file (for the vDSO: `[vdso]`).
    pub path: String,
    /// Load bias: run-time address minus the address in the file's symbol table.
    pub bias: u64,
    /// The GNU build id from the object's `PT_NOTE`, empty when it has none.
    pub build_id: Vec<u8>,
    /// Main executable, shared object or vDSO.
    pub kind: ObjectKind,
}

/// One executable segment of an object, in run-time addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentRange {
    /// Index into the object list.
    pub(crate) object: usize,
    /// First byte of the segment.
    pub(crate) start: u64,
    /// One past the last byte.
    pub(crate) end: u64,
}

/// Lists the executable segments of the process: none on systems other than Linux (no
/// `dl_iterate_phdr` there). Only this process's own samples need it, and there are none: the
/// samplers do not start there (their errors say so).
#[cfg(not(target_os = "linux"))]
pub(crate) fn discover() -> (Vec<ObjectFile>, Vec<SegmentRange>) {
    (Vec::new(), Vec::new())
}

/// Lists every executable `PT_LOAD` segment of every object in the process.
#[cfg(target_os = "linux")]
pub(crate) fn discover() -> (Vec<ObjectFile>, Vec<SegmentRange>) {
    struct Acc {
        objects: Vec<ObjectFile>,
        segments: Vec<SegmentRange>,
    }
    unsafe extern "C" fn callback(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes the `data` pointer we gave it (a live `&mut Acc`,
        // used by no one else during the call) and a valid `dl_phdr_info` for this object.
        let (acc, info) = unsafe { (&mut *(data as *mut Acc), &*info) };
        let phdrs: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: `dlpi_phdr` points to `dlpi_phnum` program headers mapped in memory for
            // as long as the object stays loaded, which covers this call.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let bias = info.dlpi_addr;
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: `dlpi_name` is a NUL-terminated string owned by the dynamic loader.
            unsafe { CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        let (path, kind) = if name.is_empty() {
            let exe = std::fs::read_link("/proc/self/exe")
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "[main]".to_owned());
            (exe, ObjectKind::Main)
        } else if name.starts_with('/') {
            (name, ObjectKind::Shared)
        } else if name.contains("vdso") {
            ("[vdso]".to_owned(), ObjectKind::Vdso)
        } else {
            (name, ObjectKind::Shared)
        };
        let mut build_id = Vec::new();
        for ph in phdrs {
            if ph.p_type == libc::PT_NOTE && build_id.is_empty() {
                // SAFETY: a PT_NOTE segment lies inside a PT_LOAD segment of a loaded object
                // (the loader maps it), so its `p_memsz` bytes at `bias + p_vaddr` are readable.
                let notes = unsafe {
                    std::slice::from_raw_parts(
                        (bias + ph.p_vaddr) as *const u8,
                        ph.p_memsz as usize,
                    )
                };
                build_id = find_build_id(notes).unwrap_or_default();
            }
        }
        let object = acc.objects.len();
        let mut any = false;
        for ph in phdrs {
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 && ph.p_memsz > 0 {
                any = true;
                acc.segments.push(SegmentRange {
                    object,
                    start: bias.wrapping_add(ph.p_vaddr),
                    end: bias.wrapping_add(ph.p_vaddr).wrapping_add(ph.p_memsz),
                });
            }
        }
        if any {
            acc.objects.push(ObjectFile {
                path,
                bias,
                build_id,
                kind,
            });
        }
        0
    }
    let mut acc = Acc {
        objects: Vec::new(),
        segments: Vec::new(),
    };
    // SAFETY: the callback only reads loader-provided data during the call and writes to
    // `acc`, which outlives the call; it returns 0 to continue the walk.
    unsafe { libc::dl_iterate_phdr(Some(callback), &mut acc as *mut Acc as *mut libc::c_void) };
    acc.segments.sort_by_key(|s| s.start);
    (acc.objects, acc.segments)
}

/// Finds the `NT_GNU_BUILD_ID` descriptor in a block of ELF notes.
#[cfg(target_os = "linux")]
pub(crate) fn find_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let u32_at = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let namesz = u32_at(notes, 0)? as usize;
        let descsz = u32_at(notes, 4)? as usize;
        let kind = u32_at(notes, 8)?;
        let name_end = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = name_end.checked_add(align4(descsz)?)?;
        let name = notes.get(12..12 + namesz)?;
        let desc = notes.get(name_end..name_end + descsz)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The run-time lookup structure of one segment inside a [`Table`].
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// Segment start rounded down to the bucket size: bucket `i` covers
    /// `[base + (i << shift), base + ((i + 1) << shift))`.
    pub(crate) base: u64,
    /// First byte of the segment (a pc in `[base, start)` is not in the segment).
    pub(crate) start: u64,
    /// One past the last byte of the segment.
    pub(crate) end: u64,
    /// Index of this segment's first counter in [`Table::counts`].
    pub(crate) first: usize,
    /// Number of counters.
    pub(crate) len: usize,
}

/// Preallocated counters for the executable segments of some objects (one chunk), shared
/// with the signal handler through a [`TableSet`].
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct Table {
    /// log2 of the bucket size in bytes.
    pub(crate) shift: u32,
    /// Sorted by `base`, non-overlapping.
    pub(crate) slots: Box<[Slot]>,
    /// Every segment's counters, end to end.
    pub(crate) counts: Box<[AtomicU64]>,
    /// The objects of this chunk (segments refer to them by index).
    pub(crate) objects: Vec<ObjectFile>,
    /// The segments, in slot order.
    pub(crate) segments: Vec<SegmentRange>,
}

/// What the handler counts into: every chunk so far and the shared "other".
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct TableSet {
    /// Oldest first; searched newest first.
    pub(crate) chunks: Vec<std::sync::Arc<Table>>,
    /// Samples whose pc lies outside every segment of every chunk.
    pub(crate) other: std::sync::Arc<AtomicU64>,
    /// The stack sampler, when the run captures stacks (the same one in every set).
    pub(crate) stacks: Option<std::sync::Arc<crate::stacks::Stacks>>,
}

#[cfg(target_os = "linux")]
impl TableSet {
    /// Counts one sample at `pc`. Async-signal-safe: see [`Table::try_hit`]; iterating the
    /// chunk slice allocates nothing.
    #[inline]
    pub(crate) fn hit(&self, pc: u64) {
        for chunk in self.chunks.iter().rev() {
            if chunk.try_hit(pc) {
                return;
            }
        }
        // Relaxed: an independent tally, like the buckets (see `Table::try_hit`).
        self.other.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many objects the dynamic loader has added and removed so far (`dlpi_adds`,
/// `dlpi_subs`): a cheap test for "something was `dlopen`ed or `dlclose`d".
#[cfg(target_os = "linux")]
pub(crate) fn loader_generation() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // `size` says how much of `dl_phdr_info` this glibc fills: the counters exist since
        // glibc 2.4; if they are missing, report (0, 0) and libraries are never re-scanned.
        let needed = std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs)
            + std::mem::size_of::<libc::c_ulonglong>();
        if size >= needed {
            // SAFETY: dl_iterate_phdr passes our `data` (a live `&mut (u64, u64)`) and a
            // valid `dl_phdr_info` whose first `size` bytes, counters included, are filled.
            unsafe {
                let out = &mut *(data as *mut (u64, u64));
                *out = ((*info).dlpi_adds, (*info).dlpi_subs);
            }
        }
        1 // stop after the first object: the counters are global
    }
    let mut out = (0u64, 0u64);
    // SAFETY: the callback writes only `out`, which outlives the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(first),
            &mut out as *mut (u64, u64) as *mut libc::c_void,
        )
    };
    out
}

#[cfg(target_os = "linux")]
impl Table {
    /// Allocates zeroed counters for `segments` (sorted by start, indexing `objects`) at
    /// `1 << shift` bytes each.
    pub(crate) fn new(objects: Vec<ObjectFile>, segments: Vec<SegmentRange>, shift: u32) -> Table {
        let mut slots = Vec::with_capacity(segments.len());
        let mut first = 0usize;
        for s in &segments {
            let base = s.start & !((1u64 << shift) - 1);
            let len = (s.end - base).div_ceil(1u64 << shift) as usize;
            slots.push(Slot {
                base,
                start: s.start,
                end: s.end,
                first,
                len,
            });
            first += len;
        }
        let counts = (0..first).map(|_| AtomicU64::new(0)).collect();
        Table {
            shift,
            slots: slots.into_boxed_slice(),
            counts,
            objects,
            segments,
        }
    }

    /// Counts one sample at `pc` if it lies in one of this chunk's segments; returns whether
    /// it did. Async-signal-safe: no allocation, no lock, no call into libc; reads only `self`
    /// (immutable after construction apart from the atomics).
    #[inline]
    pub(crate) fn try_hit(&self, pc: u64) -> bool {
        // The slots are sorted and non-overlapping: the candidate is the last slot whose base
        // is <= pc. `partition_point` is a plain binary search over a slice (no allocation).
        let i = self.slots.partition_point(|s| s.base <= pc);
        if i > 0 {
            let s = &self.slots[i - 1];
            if s.start <= pc && pc < s.end {
                let idx = s.first + ((pc - s.base) >> self.shift) as usize;
                if let Some(c) = self.counts.get(idx) {
                    // Relaxed: a counter is an independent tally; readers only need each
                    // increment eventually, and `stop` synchronises through the drain in
                    // `signal.rs` (SeqCst) before the final read.
                    c.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
            }
        }
        false
    }

    /// The counters of slot `i`, read now (relaxed: a snapshot may miss in-flight samples).
    pub(crate) fn read_slot(&self, i: usize) -> Vec<(u32, u64)> {
        let s = &self.slots[i];
        self.counts[s.first..s.first + s.len]
            .iter()
            .enumerate()
            .filter_map(|(b, c)| {
                // Relaxed: see `hit`.
                let n = c.load(Ordering::Relaxed);
                (n != 0).then_some((b as u32, n))
            })
            .collect()
    }
}

// The tests read this process's own objects (`discover`, Linux only).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn discover_finds_this_function_in_the_main_executable() {
        let (objects, segments) = discover();
        let pc = discover_finds_this_function_in_the_main_executable as fn() as usize as u64;
        let seg = segments
            .iter()
            .find(|s| s.start <= pc && pc < s.end)
            .expect("this function's own address lies in an executable segment");
        assert_eq!(objects[seg.object].kind, ObjectKind::Main);
        let libc_pc = libc::getpid as unsafe extern "C" fn() -> libc::pid_t as usize as u64;
        let seg = segments
            .iter()
            .find(|s| s.start <= libc_pc && libc_pc < s.end)
            .expect("getpid lies in libc's executable segment");
        assert!(
            objects[seg.object].path.contains("libc"),
            "{}",
            objects[seg.object].path
        );
    }

    #[test]
    fn hit_counts_exactly_newest_chunk_first_and_sends_outsiders_to_other() {
        let segs = [
            SegmentRange {
                object: 0,
                start: 0x1003,
                end: 0x1040,
            },
            SegmentRange {
                object: 1,
                start: 0x5000,
                end: 0x5010,
            },
        ];
        let t = std::sync::Arc::new(Table::new(Vec::new(), segs.to_vec(), 4));
        // 0x1000..0x1040 is 4 buckets, 0x5000..0x5010 is 1.
        assert_eq!(t.counts.len(), 5);
        // A later chunk overlapping the second segment (a library loaded at a freed address)
        // takes precedence there.
        let later = std::sync::Arc::new(Table::new(
            Vec::new(),
            vec![SegmentRange {
                object: 0,
                start: 0x5008,
                end: 0x5100,
            }],
            4,
        ));
        let set = TableSet {
            stacks: None,
            chunks: vec![t.clone(), later.clone()],
            other: Default::default(),
        };
        for pc in [0x1003, 0x100f, 0x1010, 0x103f, 0x5000, 0x500f, 0x50ff] {
            set.hit(pc);
        }
        for pc in [0x0, 0x1002, 0x1040, 0x4fff, 0x5100, u64::MAX] {
            set.hit(pc);
        }
        assert_eq!(t.read_slot(0), vec![(0, 2), (1, 1), (3, 1)]);
        assert_eq!(t.read_slot(1), vec![(0, 1)]);
        assert_eq!(later.read_slot(0), vec![(0, 1), (15, 1)]);
        // 0x1002 is below the segment but inside bucket 0's range; it is not code of ours.
        assert_eq!(set.other.load(Ordering::Relaxed), 6);
        let (adds, _) = loader_generation();
        assert!(adds >= 1);
    }

    #[test]
    fn build_id_note_is_parsed_and_garbage_is_not() {
        let mut note = Vec::new();
        note.extend_from_slice(&4u32.to_ne_bytes());
        note.extend_from_slice(&3u32.to_ne_bytes());
        note.extend_from_slice(&1u32.to_ne_bytes()); // NT_GNU_ABI_TAG-like, skipped
        note.extend_from_slice(b"GNU\0");
        note.extend_from_slice(&[1, 2, 3, 0]);
        note.extend_from_slice(&4u32.to_ne_bytes());
        note.extend_from_slice(&2u32.to_ne_bytes());
        note.extend_from_slice(&3u32.to_ne_bytes());
        note.extend_from_slice(b"GNU\0");
        note.extend_from_slice(&[0xab, 0xcd, 0, 0]);
        assert_eq!(find_build_id(&note), Some(vec![0xab, 0xcd]));
        assert_eq!(find_build_id(&note[..20]), None);
        assert_eq!(find_build_id(&[0xff; 40]), None);
    }
}
