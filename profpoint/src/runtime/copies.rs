//! Copies of profpoint in one process: a `cdylib` that uses profpoint carries its own copy
//! (statics, initialiser, at-exit report), and its host may use profpoint too.
//!
//! # Mechanism: an ELF note per copy
//! Each copy puts one note in its object (`.note.profpoint`, name `profpoint`): its
//! descriptor is the PC-relative address of that copy's [`CopyState`]. The linker gathers
//! notes into the object's `PT_NOTE` segments, which `dl_iterate_phdr` shows for every loaded
//! object, the executable included. So each copy finds every other one, with no exported
//! symbol (a Rust executable exports none to `dlsym`), no environment variable (which child
//! processes would inherit and the program would see) and no file.
//!
//! # What it is used for
//! - Reports: the initialiser takes the next order number (1 + the highest of the copies
//!   already initialised). Copy 1 (the executable's, or the first library's) writes the report
//!   paths as given; every later copy writes `PATH.NAME` (its object's file name), so no copy
//!   overwrites another's report.
//! - Signals: a sampler whose signal already has a handler says whether the handler belongs to
//!   another profpoint copy in this process (which then samples) or to a foreign profiler.
//!
//! Elsewhere than x86_64 Linux, no note is emitted: every copy is copy 1 (the limit is said in
//! ARCHITECTURE.md).

use std::sync::atomic::{AtomicU32, Ordering};

/// What one copy shows the others.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct CopyState {
    /// [`MAGIC`]: the note really points at a `CopyState` of this layout.
    magic: u64,
    /// 0 until the copy's initialiser ran, then its order in the process (1, 2, ...).
    order: AtomicU32,
}

const MAGIC: u64 = 0x7072_6f66_706f_696e; // "profpoin"

static COPY: CopyState = CopyState {
    magic: MAGIC,
    order: AtomicU32::new(0),
};

/// The note's type (an arbitrary value, owned by the name `profpoint`).
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "off")))]
const NOTE_TYPE: u32 = 0x7070_0001;

// The note: namesz 10 ("profpoint\0", padded to 12), descsz 8, type, name, then the
// descriptor: the address of COPY relative to the descriptor itself (resolved at link time).
// "aR": allocated (so it is in a PT_NOTE segment at run time) and retained.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "off")))]
core::arch::global_asm!(
    ".pushsection .note.profpoint,\"aR\",@note",
    ".balign 4",
    ".long 10",
    ".long 8",
    ".long 0x70700001",
    ".asciz \"profpoint\"",
    ".balign 4",
    ".quad {copy} - .",
    ".popsection",
    copy = sym COPY,
);

/// One loaded object carrying a profpoint copy.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    state: &'static CopyState,
    /// The object's file name ("" for the executable, as the loader reports it).
    path: String,
    /// Its executable segments, as address ranges (read by `other_copy_at`, heatmap only).
    #[cfg_attr(not(feature = "heatmap"), allow(dead_code))]
    text: Vec<(usize, usize)>,
}

impl Found {
    fn is_self(&self) -> bool {
        std::ptr::eq(self.state, &COPY)
    }

    /// The object's file name, for messages and report suffixes.
    pub(crate) fn name(&self) -> String {
        if self.path.is_empty() {
            // The executable: the loader gives no name.
            std::env::current_exe()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "the program".to_owned())
        } else {
            std::path::Path::new(&self.path)
                .file_name()
                .map_or_else(|| self.path.clone(), |n| n.to_string_lossy().into_owned())
        }
    }
}

/// Every loaded object that carries a profpoint copy (this one included), in load order.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "off")))]
pub(crate) fn all() -> Vec<Found> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `Vec<Found>` passed below, alive for the whole iteration;
        // `info` is the loader's description of one object, valid during this call.
        let (out, info) = unsafe { (&mut *(data as *mut Vec<Found>), &*info) };
        // A panic must not unwind into the loader.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: as above.
            unsafe { scan(info, out) }
        }));
        0
    }
    let mut out: Vec<Found> = Vec::new();
    // SAFETY: `each` matches the callback type and only touches `out` through `data`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<Found> as *mut _) };
    out
}

/// Reads one object's notes for ours (called from `dl_iterate_phdr`).
///
/// # Safety
/// `info` must be the loader's live description of a loaded object.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "off")))]
unsafe fn scan(info: &libc::dl_phdr_info, out: &mut Vec<Found>) {
    if info.dlpi_phdr.is_null() {
        return;
    }
    // SAFETY: the loader gives `dlpi_phnum` program headers at `dlpi_phdr`.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let base = info.dlpi_addr as usize;
    let text: Vec<(usize, usize)> = phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0)
        .map(|p| {
            let lo = base + p.p_vaddr as usize;
            (lo, lo + p.p_memsz as usize)
        })
        .collect();
    for p in phdrs.iter().filter(|p| p.p_type == libc::PT_NOTE) {
        let mut at = base + p.p_vaddr as usize;
        let end = at + p.p_memsz as usize;
        // A PT_NOTE segment of a loaded object is mapped and readable for its whole
        // `p_memsz`; each read below is bounds-checked against `end` first.
        while at + 12 <= end {
            // SAFETY: `o` < 12 and `at + 12 <= end`: inside the segment.
            let word = |o: usize| unsafe { std::ptr::read_unaligned((at + o) as *const u32) };
            let (namesz, descsz, kind) = (word(0) as usize, word(4) as usize, word(8));
            let name_at = at + 12;
            let desc_at = name_at + namesz.next_multiple_of(4);
            let next = desc_at + descsz.next_multiple_of(4);
            if next > end || next <= at {
                break;
            }
            // SAFETY: `name_at..name_at + namesz` is inside the segment (checked above).
            let name = unsafe { std::slice::from_raw_parts(name_at as *const u8, namesz) };
            if kind == NOTE_TYPE && name == b"profpoint\0" && descsz == 8 {
                // SAFETY: inside the segment; written by the note above as `COPY - .`.
                let rel = unsafe { std::ptr::read_unaligned(desc_at as *const i64) };
                let state = (desc_at as i64).wrapping_add(rel) as usize as *const CopyState;
                // SAFETY: the note of a profpoint copy points at its `CopyState` static, in
                // the same object (resolved by its linker); the magic confirms the layout.
                if let Some(state) = unsafe { state.as_ref() }
                    && state.magic == MAGIC
                {
                    let path = if info.dlpi_name.is_null() {
                        String::new()
                    } else {
                        // SAFETY: a non-null `dlpi_name` is a NUL-terminated string of the
                        // loader's, alive during the callback.
                        unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
                            .to_string_lossy()
                            .into_owned()
                    };
                    out.push(Found {
                        state,
                        path,
                        text: text.clone(),
                    });
                }
            }
            at = next;
        }
    }
}

/// Elsewhere no copy is visible to the others.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(feature = "off"))))]
pub(crate) fn all() -> Vec<Found> {
    Vec::new()
}

/// Called by the initialiser: takes this copy's order number (1 if no other copy was
/// initialised before it).
pub(crate) fn init() {
    let others = all()
        .iter()
        .filter(|f| !f.is_self())
        // Relaxed: initialisers run one at a time (before `main`, or under the loader lock).
        .map(|f| f.state.order.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    // Relaxed: as above.
    COPY.order.store(others + 1, Ordering::Relaxed);
}

/// This copy's order in the process: 1 for the first to initialise (0 before it did).
pub(crate) fn order() -> u32 {
    // Relaxed: written once by the initialiser.
    COPY.order.load(Ordering::Relaxed)
}

/// This copy's object's file name (the executable's or the library's).
pub(crate) fn own_name() -> String {
    all()
        .into_iter()
        .find(Found::is_self)
        .map_or_else(|| "the program".to_owned(), |f| f.name())
}

/// The file name of the object holding another profpoint copy whose code contains `addr`
/// (a signal handler's address), if one does. Used by the samplers (feature `heatmap`).
#[cfg_attr(not(feature = "heatmap"), allow(dead_code))]
pub(crate) fn other_copy_at(addr: usize) -> Option<String> {
    all()
        .into_iter()
        .filter(|f| !f.is_self())
        .find(|f| f.text.iter().any(|&(lo, hi)| (lo..hi).contains(&addr)))
        .map(|f| f.name())
}

/// The suffix a later copy adds to its report paths (`None` for copy 1).
pub(crate) fn path_suffix() -> Option<String> {
    (order() > 1).then(own_name)
}

#[cfg(all(
    test,
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "off")
))]
mod tests {
    use super::*;

    #[test]
    fn this_copy_finds_its_own_note_and_code() {
        let all = all();
        let me: Vec<_> = all.iter().filter(|f| f.is_self()).collect();
        assert_eq!(me.len(), 1, "{all:?}");
        let here = this_copy_finds_its_own_note_and_code as *const () as usize;
        assert!(me[0].text.iter().any(|&(lo, hi)| (lo..hi).contains(&here)));
        // Our own code is not "another copy".
        assert_eq!(other_copy_at(here), None);
        // The test binary's initialiser ran: this is copy 1, which keeps the paths as given.
        assert_eq!(order(), 1);
        assert_eq!(path_suffix(), None);
    }
}
