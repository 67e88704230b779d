//! Symbolisation after the fact: bucket addresses to function names, from ELF symbol tables.
//!
//! # Mechanism
//!
//! For each object of a profile that has samples, the file at its recorded path is mapped
//! (`mmap`, read only) and parsed with the `object` crate; its `.symtab` (or, for a stripped
//! shared object, its `.dynsym`) function symbols are sorted by address. A run-time address is
//! turned into a file address by subtracting the object's load bias, then found by binary
//! search: the last symbol starting at or below it, if the address lies within its size (a
//! zero-sized symbol extends to the next one). Names are demangled (`rustc-demangle`, without
//! the hash) only for the symbols actually reported, so set-up stays ~1 ms per MB of text.
//!
//! A missing file, an unparsable one, or an address no symbol covers gives `[unknown]`. The
//! vDSO has no file: its symbols are read from this process's own vDSO image (found by
//! `getauxval(AT_SYSINFO_EHDR)`, bounded by its `/proc/self/maps` line) when that is the vDSO
//! that ran (same build id), so time in `clock_gettime` shows as `__vdso_clock_gettime`; its
//! other addresses, or all of them when the report is read on another kernel, give `[vdso]`. When the file's GNU build id differs from the one
//! recorded at sampling time, the file has been rebuilt since: names may be wrong, and the
//! report carries a warning saying so.
//!
//! Where the file (or its build-id debug file) carries DWARF, `addr2line` adds the source
//! location (`file:line`) of an address and the chain of functions inlined at it, for the
//! rows reported only, for objects that carry DWARF themselves (the program, built with
//! debug info; system libraries' separate debug files give names only). The DWARF sections are read in place from the mapping; compressed ones
//! (Debian's debug files) are decompressed into boxes owned next to the mapping. Sections that
//! lines and inline frames never need (location lists, macros, public names) are not loaded:
//! decompressing libc's location lists alone would cost tens of milliseconds.
//!
//! # Bounds
//!
//! The objects come from a dump, which anyone may have made. A file is read once however many
//! objects name it (objects are keyed by the file's device, inode, size and modification time,
//! and the build id they expect): a dump listing one binary 2,000 times loads it once. At most
//! [`MAX_FILES`] distinct files are read; the objects of the rest show as `[unknown]`, and one
//! warning says so. A compressed DWARF section is decompressed only when its stated size is
//! at most [`MAX_SECTION`] and [`MAX_RATIO`] times its compressed bytes (DWARF compresses
//! 3-10 times; a small file whose sections inflate to gigabytes does not pass), and while the
//! sections decompressed so far stay within [`MAX_DECOMPRESSED`]; a section refused gives one
//! warning, and that file has no source lines.

use std::borrow::Cow;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// Slices borrowed from a [`Mapped`] file or a decompressed box, both owned by the same
/// [`FileSyms`] as the context and dropped after it (see `FileSyms`).
type Dwarf = addr2line::Context<gimli::EndianSlice<'static, gimli::RunTimeEndian>>;

use crate::buckets::{ObjectFile, ObjectKind};

/// A function symbol, in file addresses.
#[derive(Debug, Clone)]
struct Sym {
    addr: u64,
    /// 0 when the symbol table gives no size.
    size: u64,
    name: Box<str>,
}

/// The symbols of one object file.
///
/// Field order matters: `dwarf` borrows from `_decompressed` and `_map` through `'static`
/// slices, and Rust drops fields in declaration order, so the context goes first.
#[derive(Default)]
struct FileSyms {
    syms: Vec<Sym>,
    /// The file (and no debug file) has no `.symtab`: only exported names, if any.
    stripped: bool,
    /// Line tables and inline information, when the file has DWARF.
    dwarf: Option<Dwarf>,
    /// Decompressed DWARF sections (their heap addresses never move).
    _decompressed: Vec<Box<[u8]>>,
    /// The file mapping the uncompressed DWARF sections point into.
    _map: Option<Mapped>,
}

impl std::fmt::Debug for FileSyms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSyms")
            .field("syms", &self.syms.len())
            .field("dwarf", &self.dwarf.is_some())
            .finish()
    }
}

/// Source information for one address, from DWARF.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SourceInfo {
    /// `file:line` of the address.
    pub(crate) location: Option<String>,
    /// Functions inlined at the address, outermost first (the symbol's own function excluded).
    pub(crate) inlined: Vec<String>,
}

/// What an address resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Run-time address of the function's first byte (or the address itself if unknown).
    pub(crate) start: u64,
    /// Demangled name, `[unknown]` or `[vdso]`.
    pub(crate) function: String,
    /// File name of the shared object, `None` for the main executable.
    pub(crate) library: Option<String>,
}

/// The most distinct files one report reads symbols from (a process maps a few hundred).
pub(crate) const MAX_FILES: usize = 1024;
/// The largest decompressed DWARF section read, bytes.
pub(crate) const MAX_SECTION: u64 = 512 << 20;
/// The most a compressed section may state it inflates to, as a multiple of its compressed
/// bytes (plus 1 MiB, for small sections).
pub(crate) const MAX_RATIO: u64 = 64;
/// The most bytes of DWARF one report decompresses, over every section of every file.
pub(crate) const MAX_DECOMPRESSED: u64 = 1 << 30;

/// What makes two objects the same file for symbols: the file (device, inode, size,
/// modification time; its path when it cannot be read) and the build id expected of it (which
/// picks its debug file and decides the warning).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FileKey {
    /// Device, inode, size, modification time (seconds, nanoseconds), build id (Unix's
    /// `stat` fields).
    #[cfg(unix)]
    File(u64, u64, u64, i64, i64, Vec<u8>),
    Path(String, Vec<u8>),
    /// The vDSO, one per object (it has no file).
    Vdso(usize),
}

impl FileKey {
    fn of(index: usize, o: &ObjectFile) -> FileKey {
        if o.kind == ObjectKind::Vdso {
            return FileKey::Vdso(index);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // `stat` opens nothing: a FIFO named here does not block.
            if let Ok(m) = std::fs::metadata(&o.path) {
                return FileKey::File(
                    m.dev(),
                    m.ino(),
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec(),
                    o.build_id.clone(),
                );
            }
        }
        FileKey::Path(o.path.clone(), o.build_id.clone())
    }
}

/// Symbol tables of a profile's objects, loaded on first use.
#[derive(Debug)]
pub(crate) struct Symbolizer<'p> {
    objects: &'p [ObjectFile],
    files: Vec<Option<std::rc::Rc<FileSyms>>>,
    /// Every file read so far, by what makes it the same (see [`FileKey`]).
    by_key: std::collections::HashMap<FileKey, std::rc::Rc<FileSyms>>,
    /// DWARF bytes decompressed so far (at most [`MAX_DECOMPRESSED`]).
    decompressed: u64,
    /// Problems found while loading (missing file, build id mismatch).
    pub(crate) warnings: Vec<String>,
}

impl<'p> Symbolizer<'p> {
    pub(crate) fn new(objects: &'p [ObjectFile]) -> Self {
        Symbolizer {
            objects,
            files: objects.iter().map(|_| None).collect(),
            by_key: std::collections::HashMap::new(),
            decompressed: 0,
            warnings: Vec::new(),
        }
    }

    /// Distinct files read (each at most once).
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn files_read(&self) -> usize {
        self.by_key.len()
    }

    /// The symbols of `object`, read on first use: from the file another object of the same
    /// file read, else from the file (at most [`MAX_FILES`] of them).
    fn load_object(&mut self, object: usize) {
        if self.files[object].is_some() {
            return;
        }
        let o = &self.objects[object];
        let key = FileKey::of(object, o);
        if let Some(f) = self.by_key.get(&key) {
            self.files[object] = Some(f.clone());
            return;
        }
        let syms = if self.by_key.len() >= MAX_FILES {
            if self.by_key.len() == MAX_FILES {
                self.warnings.push(format!(
                    "the profile names more than {MAX_FILES} distinct object files: only the \
                     first {MAX_FILES} are read, the functions of the others show as [unknown]"
                ));
            }
            FileSyms::default()
        } else if o.kind == ObjectKind::Vdso {
            load_vdso(o).unwrap_or_default()
        } else {
            match load(o, &mut self.decompressed) {
                Ok((syms, warnings)) => {
                    self.warnings.extend(warnings);
                    syms
                }
                Err(w) => {
                    self.warnings.push(w);
                    FileSyms::default()
                }
            }
        };
        let syms = std::rc::Rc::new(syms);
        // Past the cap the key is still recorded (as empty): the warning is said once.
        self.by_key.insert(key, syms.clone());
        self.files[object] = Some(syms);
    }

    /// Resolves run-time address `addr` of object `object`.
    pub(crate) fn lookup(&mut self, object: usize, addr: u64) -> Resolved {
        let o = &self.objects[object];
        let library = match o.kind {
            ObjectKind::Main => None,
            ObjectKind::Vdso => Some("[vdso]".to_owned()),
            ObjectKind::Shared => Some(
                std::path::Path::new(&o.path)
                    .file_name()
                    .map_or_else(|| o.path.clone(), |n| n.to_string_lossy().into_owned()),
            ),
        };
        self.load_object(object);
        let o = &self.objects[object];
        let syms = &self.files[object].as_ref().expect("loaded above").syms;
        let file_addr = addr.wrapping_sub(o.bias);
        let i = syms.partition_point(|s| s.addr <= file_addr);
        if i > 0 {
            let s = &syms[i - 1];
            let end = if s.size > 0 {
                s.addr + s.size
            } else {
                syms.get(i).map_or(u64::MAX, |n| n.addr)
            };
            if file_addr < end {
                return Resolved {
                    start: s.addr.wrapping_add(o.bias),
                    function: demangle(&s.name),
                    library,
                };
            }
        }
        Resolved {
            start: addr,
            function: if o.kind == ObjectKind::Vdso {
                "[vdso]"
            } else {
                "[unknown]"
            }
            .to_owned(),
            library,
        }
    }

    /// Whether `object`'s file was found without a symbol table (stripped; no debug file).
    /// False until [`lookup`](Self::lookup) loaded it.
    pub(crate) fn stripped(&self, object: usize) -> bool {
        matches!(self.files.get(object), Some(Some(f)) if f.stripped)
    }

    /// `file:line` and inline chain of run-time address `addr` of `object`, where DWARF exists.
    /// Call after `lookup` for the same object (which loads the file).
    pub(crate) fn source_info(&mut self, object: usize, addr: u64) -> SourceInfo {
        let o = &self.objects[object];
        let Some(Some(ctx)) = self
            .files
            .get(object)
            .map(|f| f.as_ref().and_then(|f| f.dwarf.as_ref()))
        else {
            return SourceInfo::default();
        };
        let file_addr = addr.wrapping_sub(o.bias);
        let mut info = SourceInfo::default();
        if let Ok(Some(addr2line::Location {
            file: Some(file),
            line: Some(line),
            ..
        })) = ctx.find_location(file_addr)
        {
            info.location = Some(format!("{file}:{line}"));
        }
        if let Ok(mut frames) = ctx.find_frames(file_addr).skip_all_loads() {
            let mut names = Vec::new();
            while let Ok(Some(frame)) = frames.next() {
                if let Some(name) = frame.function.as_ref().and_then(|f| f.raw_name().ok()) {
                    names.push(demangle(name.as_ref()));
                }
            }
            // Frames come innermost first; the last is the function the symbol names.
            names.pop();
            names.reverse();
            info.inlined = names;
        }
        info
    }

    /// Resolves a bucket `[addr, addr + size)`: the function containing its first byte, else
    /// the first function starting inside it (the bucket began in inter-function padding).
    pub(crate) fn lookup_bucket(&mut self, object: usize, addr: u64, size: u64) -> Resolved {
        let r = self.lookup(object, addr);
        if (r.function != "[unknown]" && r.function != "[vdso]") || size <= 1 {
            return r;
        }
        let o = &self.objects[object];
        let syms = match &self.files[object] {
            Some(f) => &f.syms,
            None => return r,
        };
        let file_addr = addr.wrapping_sub(o.bias);
        let i = syms.partition_point(|s| s.addr < file_addr);
        match syms.get(i) {
            Some(s) if s.addr < file_addr + size => {
                let start = s.addr.wrapping_add(o.bias);
                self.lookup(object, start)
            }
            _ => r,
        }
    }
}

/// Demangles a Rust (legacy or v0) name without its hash; other names are returned as is.
pub(crate) fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_owned(),
    }
}

/// A read-only private mapping of a whole file.
#[cfg(unix)]
struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

#[cfg(unix)]
impl Mapped {
    fn open(path: &str) -> std::io::Result<Mapped> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        // The path comes from the dump, which anyone may have made: opened without waiting
        // (a FIFO without a writer would hold the open for ever) and mapped only if it is a
        // regular file.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        let m = f.metadata()?;
        if !m.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let len = m.len() as usize;
        if len == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "empty file",
            ));
        }
        // SAFETY: mapping `len` bytes of an open regular file read-only and private; the
        // result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapped { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a live mapping of `len` readable bytes until `drop`. (A file
        // truncated meanwhile by someone else would fault: symbolisation reads binaries that
        // are not normally rewritten while a report is made; the same holds for every
        // debugger.)
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

#[cfg(unix)]
impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `open`, once.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// A whole file read into memory (no `mmap` in the libc crate for Windows; files symbolised
/// there come from dumps made elsewhere, rarely).
#[cfg(not(unix))]
struct Mapped(Vec<u8>);

#[cfg(not(unix))]
impl Mapped {
    fn open(path: &str) -> std::io::Result<Mapped> {
        std::fs::read(path).map(Mapped)
    }

    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Loads the function symbols of `o`'s file; the second value holds the warnings to report.
/// `decompressed`: the DWARF bytes decompressed so far, counted against [`MAX_DECOMPRESSED`].
fn load(o: &ObjectFile, decompressed: &mut u64) -> Result<(FileSyms, Vec<String>), String> {
    // A separate debug file found by build id (Debian's `-dbg`/`-dbgsym` packages) has the full
    // `.symtab` of a stripped library: libc's internal functions get names instead of
    // `[unknown]`. Its addresses are those of the stripped file.
    // Names only from a separate debug file: decompressing libc's DWARF costs 50-80 ms here,
    // which would blow the report's time budget for lines in system code.
    match debug_file_for(&o.build_id).map(|path| load_file(&path, &o.build_id, None)) {
        Some(Ok(syms)) if !syms.0.syms.is_empty() => return Ok(syms),
        _ => {}
    }
    load_file(&o.path, &o.build_id, Some(decompressed))
}

/// The function symbols of the vDSO `o`, read from this process's own vDSO when it is the one
/// that ran: the same build id, or (for a vDSO without one) the same load address. `None`
/// otherwise (a dump read on another kernel, a system without a vDSO): its samples then show
/// as `[vdso]`.
#[cfg(target_os = "linux")]
fn load_vdso(o: &ObjectFile) -> Option<FileSyms> {
    let (base, image) = running_vdso()?;
    let file = object::File::parse(image).ok()?;
    let same = match file.build_id().ok().flatten() {
        Some(id) => id == o.build_id.as_slice(),
        None => o.build_id.is_empty() && base == o.bias,
    };
    if !same {
        return None;
    }
    let mut syms = collect(file.symbols());
    syms.extend(collect(file.dynamic_symbols()));
    // One name per address: the vDSO exports each function twice (`clock_gettime` weak,
    // `__vdso_clock_gettime` global; `__kernel_` on some architectures): keep the prefixed,
    // unambiguous one whatever the table's order.
    let plain = |s: &Sym| !(s.name.starts_with("__vdso_") || s.name.starts_with("__kernel_"));
    syms.sort_by(|a, b| {
        a.addr
            .cmp(&b.addr)
            .then(b.size.cmp(&a.size))
            .then(plain(a).cmp(&plain(b)))
            .then(a.name.cmp(&b.name))
    });
    syms.dedup_by_key(|s| s.addr);
    Some(FileSyms {
        syms,
        ..FileSyms::default()
    })
}

#[cfg(not(target_os = "linux"))]
fn load_vdso(_: &ObjectFile) -> Option<FileSyms> {
    None
}

/// This process's vDSO: its load address (`AT_SYSINFO_EHDR`) and its image, the `[vdso]`
/// mapping of `/proc/self/maps` that starts there.
#[cfg(target_os = "linux")]
pub(crate) fn running_vdso() -> Option<(u64, &'static [u8])> {
    // SAFETY: getauxval only reads the process's auxiliary vector; 0 means "no such entry".
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as u64;
    if base == 0 {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let end = maps.lines().find_map(|line| {
        if !line.trim_end().ends_with("[vdso]") {
            return None;
        }
        let (start, end) = line.split_once(' ')?.0.split_once('-')?;
        let start = u64::from_str_radix(start, 16).ok()?;
        let end = u64::from_str_radix(end, 16).ok()?;
        (start == base && end > start).then_some(end)
    })?;
    // SAFETY: `[base, end)` is the kernel's vDSO mapping (readable, as /proc/self/maps listed
    // it), mapped for the whole life of the process and never written or unmapped.
    let image = unsafe { std::slice::from_raw_parts(base as *const u8, (end - base) as usize) };
    Some((base, image))
}

/// `/usr/lib/debug/.build-id/ab/cdef....debug` for build id `abcdef...`, if it exists.
fn debug_file_for(build_id: &[u8]) -> Option<String> {
    let (first, rest) = build_id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let hex: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    let path = format!("/usr/lib/debug/.build-id/{first:02x}/{hex}.debug");
    std::path::Path::new(&path).exists().then_some(path)
}

/// The symbols of the file at `path`, and its DWARF when `dwarf` gives the bytes decompressed
/// so far (see [`load`]).
fn load_file(
    path: &str,
    build_id: &[u8],
    dwarf: Option<&mut u64>,
) -> Result<(FileSyms, Vec<String>), String> {
    let o = ObjectFile {
        path: path.to_owned(),
        bias: 0,
        build_id: build_id.to_vec(),
        kind: ObjectKind::Shared,
    };
    let o = &o;
    let map = Mapped::open(&o.path).map_err(|e| {
        format!(
            "{}: cannot read symbols ({e}): its functions show as [unknown]",
            o.path
        )
    })?;
    let file = object::File::parse(map.bytes()).map_err(|e| {
        format!(
            "{}: not a readable ELF file ({e}): its functions show as [unknown]",
            o.path
        )
    })?;
    let file_id = file.build_id().ok().flatten();
    let mut warnings = Vec::new();
    match file_id {
        Some(id) if !o.build_id.is_empty() && id != o.build_id.as_slice() => {
            warnings.push(format!(
                "{}: build id differs from the one that ran (file rebuilt since?): names may \
                 be wrong",
                o.path
            ))
        }
        _ => {}
    }
    let mut syms: Vec<Sym> = collect(file.symbols());
    let stripped = syms.is_empty();
    if stripped {
        syms = collect(file.dynamic_symbols());
    }
    syms.sort_by(|a, b| a.addr.cmp(&b.addr).then(b.size.cmp(&a.size)));
    // Aliases share an address: keep the first (largest size).
    syms.dedup_by_key(|s| s.addr);
    let mut decompressed = Vec::new();
    let dwarf = match dwarf {
        Some(budget) => {
            let mut refused = None;
            // SAFETY: the slices given to `load_dwarf` point into `map` (a live mapping) or
            // into boxes pushed to `decompressed`; both move into the returned `FileSyms`
            // together with the context, which is declared before them and so dropped first.
            // Moving a `Mapped` or a `Box` does not move the bytes they own.
            let ctx = unsafe { load_dwarf(&file, &mut decompressed, budget, &mut refused) };
            if let Some(why) = refused {
                warnings.push(format!("{}: {why}: no source lines from it", o.path));
            }
            ctx
        }
        None => None,
    };
    drop(file);
    Ok((
        FileSyms {
            syms,
            stripped,
            dwarf,
            _decompressed: decompressed,
            _map: Some(map),
        },
        warnings,
    ))
}

/// Whether a compressed section stating `size` bytes of `compressed` ones may be decompressed
/// with `budget` bytes decompressed so far; else why not.
fn may_decompress(name: &str, size: u64, compressed: u64, budget: u64) -> Result<(), String> {
    let most = MAX_SECTION.min(compressed.saturating_mul(MAX_RATIO).saturating_add(1 << 20));
    if size > most {
        return Err(format!(
            "section {name} states {size} bytes decompressed from {compressed}, over the {most} \
             this reader takes (at most {MAX_RATIO} times the compressed bytes and 1 MiB, and \
             {MAX_SECTION} bytes)"
        ));
    }
    if budget.saturating_add(size) > MAX_DECOMPRESSED {
        return Err(format!(
            "section {name} ({size} bytes decompressed) would pass the {MAX_DECOMPRESSED} \
             bytes of DWARF one report decompresses"
        ));
    }
    Ok(())
}

/// Builds an `addr2line` context from the file's DWARF sections, if it has `.debug_info`.
/// `budget`: the bytes decompressed so far, counted on; a compressed section [`may_decompress`]
/// refuses makes no context, and `refused` says why.
///
/// # Safety
///
/// The returned context holds `'static` slices into `file`'s data and into `decompressed`:
/// the caller must keep both alive, and the boxes in place, for as long as the context lives.
unsafe fn load_dwarf(
    file: &object::File<'_>,
    decompressed: &mut Vec<Box<[u8]>>,
    budget: &mut u64,
    refused: &mut Option<String>,
) -> Option<Dwarf> {
    file.section_by_name(".debug_info")?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    use gimli::SectionId as S;
    let mut load = |id: gimli::SectionId| -> Result<_, gimli::Error> {
        let needed = !matches!(
            id,
            S::DebugLoc
                | S::DebugLocLists
                | S::DebugMacinfo
                | S::DebugMacro
                | S::DebugPubNames
                | S::DebugPubTypes
        );
        let section = file.section_by_name(id.name()).filter(|_| needed);
        let compressed = section.as_ref().and_then(|s| s.compressed_data().ok());
        if let Some(c) = compressed.filter(|c| c.format != object::CompressionFormat::None) {
            let size = c.uncompressed_size;
            if let Err(why) = may_decompress(id.name(), size, c.data.len() as u64, *budget) {
                *refused = Some(why);
                return Err(gimli::Error::Io);
            }
            *budget += size;
        }
        let bytes: &[u8] = match compressed.map(|c| c.decompress()) {
            Some(Ok(Cow::Borrowed(b))) => b,
            Some(Ok(Cow::Owned(v))) => {
                decompressed.push(v.into_boxed_slice());
                decompressed.last().map_or(&[][..], |b| &b[..])
            }
            _ => &[],
        };
        // SAFETY: per this function's contract, `bytes` (in the file's mapping or in a box of
        // `decompressed`) outlives the context built from it.
        let bytes: &'static [u8] = unsafe { std::mem::transmute::<&[u8], &'static [u8]>(bytes) };
        Ok(gimli::EndianSlice::new(bytes, endian))
    };
    let dwarf = gimli::Dwarf::load(&mut load).ok()?;
    addr2line::Context::from_dwarf(dwarf).ok()
}

fn collect<'d: 'f, 'f>(it: impl Iterator<Item = object::Symbol<'d, 'f>>) -> Vec<Sym> {
    it.filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
        .filter_map(|s| {
            let name: Cow<'_, str> = Cow::Borrowed(s.name().ok()?);
            Some(Sym {
                addr: s.address(),
                size: s.size(),
                name: name.into(),
            })
        })
        .collect()
}

// The tests read this process's own objects (`discover`, Linux only).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::buckets;

    #[inline(never)]
    fn a_function_with_a_known_name(x: u64) -> u64 {
        x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(7)
    }

    #[test]
    fn resolves_our_own_function_and_libc() {
        let (objects, segments) = buckets::discover();
        let mut s = Symbolizer::new(&objects);
        let find = |pc: u64| {
            segments
                .iter()
                .find(|g| g.start <= pc && pc < g.end)
                .unwrap()
                .object
        };
        let f = a_function_with_a_known_name as fn(u64) -> u64 as usize as u64;
        std::hint::black_box(a_function_with_a_known_name(3));
        let r = s.lookup(find(f), f + 1);
        assert_eq!(r.start, f);
        assert_eq!(
            r.function,
            "profpoint_heatmap::symbolize::tests::a_function_with_a_known_name"
        );
        assert_eq!(r.library, None);
        // The test binary has DWARF: the function's first line is its `fn` line here.
        let info = s.source_info(find(f), f);
        let loc = info.location.expect("a location from DWARF");
        assert!(loc.contains("heatmap/src/symbolize.rs:"), "{loc}");
        let line: u32 = loc.rsplit(':').next().unwrap().parse().unwrap();
        let src = include_str!("symbolize.rs");
        let fn_line = src
            .lines()
            .position(|l| l.contains("fn a_function_with_a_known_name(x: u64)"))
            .unwrap() as u32
            + 1;
        assert_eq!(line, fn_line, "{loc}");
        let g = libc::getpid as unsafe extern "C" fn() -> libc::pid_t as usize as u64;
        let r = s.lookup(find(g), g);
        assert!(r.function.contains("getpid"), "{}", r.function);
        let m = libc::memset
            as unsafe extern "C" fn(*mut libc::c_void, i32, usize) -> *mut libc::c_void
            as usize as u64;
        let r = s.lookup(find(m), m);
        // memset is an IFUNC: on x86_64 its address is the resolver (or a variant with a
        // debug file). On aarch64 it is the chosen variant, a local symbol a stripped libc
        // does not name: only its library is known there (without libc's debug file).
        #[cfg(target_arch = "x86_64")]
        assert_ne!(r.function, "[unknown]");
        assert!(r.library.as_deref().unwrap().starts_with("libc.so"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn missing_file_gives_unknown_and_a_warning() {
        let objects = vec![ObjectFile {
            path: "/nonexistent/libgone.so".to_owned(),
            bias: 0x1000,
            build_id: vec![],
            kind: ObjectKind::Shared,
        }];
        let mut s = Symbolizer::new(&objects);
        let r = s.lookup(0, 0x2000);
        assert_eq!(r.function, "[unknown]");
        assert_eq!(r.library.as_deref(), Some("libgone.so"));
        assert_eq!(s.warnings.len(), 1);
        assert!(s.warnings[0].contains("/nonexistent/libgone.so"));
    }

    /// An object path from a dump that names a FIFO (a dump anyone may have made): refused
    /// at once with a warning, not an open that waits for a writer for ever.
    #[test]
    fn a_fifo_named_as_an_object_is_refused_without_waiting() {
        let dir = std::env::temp_dir().join(format!("pp-sym-fifo-{}", std::process::id()));
        // A folder left by a killed run of the same process id would hold the FIFO already.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("libfifo.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path alive across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let objects = vec![ObjectFile {
            path: fifo.to_str().unwrap().to_owned(),
            bias: 0x1000,
            build_id: vec![],
            kind: ObjectKind::Shared,
        }];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut s = Symbolizer::new(&objects);
            let r = s.lookup(0, 0x2000);
            let _ = tx.send((r.function, s.warnings));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        let _ = std::fs::remove_dir_all(&dir);
        let (function, warnings) = got.expect("the lookup waited on the FIFO");
        assert_eq!(function, "[unknown]");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("not a regular file"), "{warnings:?}");
    }

    /// A dump listing this test binary as 2,000 objects: the file is read once, and every
    /// object resolves the function and its line. Each read anew, it took minutes and tens of
    /// gigabytes (RELIABILITY.md); the 60 s bound only catches that return on a slow machine.
    #[test]
    fn one_file_named_by_many_objects_is_read_once() {
        let (objects, segments) = buckets::discover();
        let f = a_function_with_a_known_name as fn(u64) -> u64 as usize as u64;
        let main = segments
            .iter()
            .find(|g| g.start <= f && f < g.end)
            .unwrap()
            .object;
        let many: Vec<ObjectFile> = (0..2000).map(|_| objects[main].clone()).collect();
        let t = std::time::Instant::now();
        let mut s = Symbolizer::new(&many);
        for i in 0..many.len() {
            let r = s.lookup(i, f + 1);
            assert_eq!(
                r.function,
                "profpoint_heatmap::symbolize::tests::a_function_with_a_known_name"
            );
            assert!(s.source_info(i, f).location.is_some());
        }
        let took = t.elapsed();
        println!("2,000 objects of one file: {took:?}");
        assert_eq!(s.files_read(), 1);
        assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    }

    /// A minimal x86-64 ELF file whose one section, `.debug_info`, is `SHF_COMPRESSED`: an
    /// `Elf64_Chdr` stating `stated` bytes (zlib), then `zlib`.
    fn elf_with_compressed_debug_info(stated: u64, zlib: &[u8]) -> Vec<u8> {
        let mut section = Vec::new();
        section.extend_from_slice(&1u32.to_le_bytes()); // ch_type: ELFCOMPRESS_ZLIB
        section.extend_from_slice(&0u32.to_le_bytes()); // ch_reserved
        section.extend_from_slice(&stated.to_le_bytes()); // ch_size
        section.extend_from_slice(&1u64.to_le_bytes()); // ch_addralign
        section.extend_from_slice(zlib);
        let names = b"\0.debug_info\0.shstrtab\0";
        let names_at = 64 + section.len();
        let headers_at = (names_at + names.len()).next_multiple_of(8);
        let mut e = Vec::new();
        e.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
        e.extend_from_slice(&2u16.to_le_bytes()); // e_type: EXEC
        e.extend_from_slice(&62u16.to_le_bytes()); // e_machine: x86-64
        e.extend_from_slice(&1u32.to_le_bytes()); // e_version
        e.extend_from_slice(&0u64.to_le_bytes()); // e_entry
        e.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
        e.extend_from_slice(&(headers_at as u64).to_le_bytes()); // e_shoff
        e.extend_from_slice(&0u32.to_le_bytes()); // e_flags
        for v in [64u16, 56, 0, 64, 3, 2] {
            // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
            e.extend_from_slice(&v.to_le_bytes());
        }
        e.extend_from_slice(&section);
        e.extend_from_slice(names);
        e.resize(headers_at, 0);
        let header = |e: &mut Vec<u8>, name: u32, kind: u32, flags: u64, at: usize, len: usize| {
            e.extend_from_slice(&name.to_le_bytes());
            e.extend_from_slice(&kind.to_le_bytes());
            e.extend_from_slice(&flags.to_le_bytes());
            e.extend_from_slice(&0u64.to_le_bytes()); // sh_addr
            e.extend_from_slice(&(at as u64).to_le_bytes());
            e.extend_from_slice(&(len as u64).to_le_bytes());
            e.extend_from_slice(&0u32.to_le_bytes()); // sh_link
            e.extend_from_slice(&0u32.to_le_bytes()); // sh_info
            e.extend_from_slice(&1u64.to_le_bytes()); // sh_addralign
            e.extend_from_slice(&0u64.to_le_bytes()); // sh_entsize
        };
        header(&mut e, 0, 0, 0, 0, 0);
        // PROGBITS, SHF_COMPRESSED.
        header(&mut e, 1, 1, 0x800, 64, section.len());
        // STRTAB.
        header(&mut e, 13, 3, 0, names_at, names.len());
        e
    }

    /// `n` zero bytes, zlib-compressed (about a thousandth of `n`).
    fn zlib_zeros(n: usize) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let chunk = vec![0u8; 1 << 20];
        let mut left = n;
        while left > 0 {
            let k = left.min(chunk.len());
            z.write_all(&chunk[..k]).unwrap();
            left -= k;
        }
        z.finish().unwrap()
    }

    /// A small ELF file whose compressed `.debug_info` inflates to 64 MiB (a zip bomb: 64 KB
    /// of zlib): refused before anything is decompressed, with one warning naming the section
    /// and the sizes; the file's symbols are still read. One of a stated size its bytes allow
    /// is decompressed and counted. Unbounded, a few megabytes of such sections took gigabytes
    /// (RELIABILITY.md).
    #[test]
    fn a_compressed_section_stating_too_much_is_not_decompressed() {
        let dir = std::env::temp_dir().join(format!("heatmap-bomb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bomb = dir.join("bomb.elf");
        let zlib = zlib_zeros(64 << 20);
        std::fs::write(&bomb, elf_with_compressed_debug_info(64 << 20, &zlib)).unwrap();
        let mut budget = 0;
        let (syms, warnings) = load_file(bomb.to_str().unwrap(), &[], Some(&mut budget)).unwrap();
        assert!(syms.dwarf.is_none());
        assert_eq!(budget, 0, "nothing decompressed");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(&format!(
                "section .debug_info states {} bytes decompressed from {}",
                64 << 20,
                zlib.len()
            )) && warnings[0].ends_with("no source lines from it"),
            "{warnings:?}"
        );
        // Within the ratio: decompressed (and counted), no warning.
        let fair = dir.join("fair.elf");
        std::fs::write(
            &fair,
            elf_with_compressed_debug_info(4096, &zlib_zeros(4096)),
        )
        .unwrap();
        let (_, warnings) = load_file(fair.to_str().unwrap(), &[], Some(&mut budget)).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(budget, 4096);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    /// The caps of `may_decompress`: the ratio (with 1 MiB for small sections), the largest
    /// section, and the report's total.
    #[test]
    fn decompression_is_capped_by_ratio_size_and_total() {
        assert!(may_decompress("s", 1 << 20, 1, 0).is_ok());
        assert!(may_decompress("s", (1 << 20) + 65, 1, 0).is_err());
        assert!(may_decompress("s", 64 << 20, 1 << 20, 0).is_ok());
        assert!(may_decompress("s", MAX_SECTION + 1, MAX_SECTION, 0).is_err());
        assert!(may_decompress("s", 1 << 20, 1 << 20, MAX_DECOMPRESSED - (1 << 20)).is_ok());
        let e = may_decompress("s", 1 << 20, 1 << 20, MAX_DECOMPRESSED - 1).unwrap_err();
        assert!(e.contains("would pass"), "{e}");
    }

    #[test]
    fn demangles_rust_and_leaves_c_alone() {
        assert_eq!(demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar");
        assert_eq!(demangle("memcpy"), "memcpy");
    }
}
