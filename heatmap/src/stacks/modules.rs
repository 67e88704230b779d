//! The loaded objects as framehop modules over their in-memory unwind tables, published to
//! the handler as one immutable [`ModuleSet`] and replaced (never changed) when the loader's
//! object list changes.
//!
//! For each object with an executable `PT_LOAD`: its code range, its `.eh_frame_hdr` (the
//! `PT_GNU_EH_FRAME` segment) and `.eh_frame` (from the header's `eh_frame_ptr` to the end of
//! the `PT_LOAD` holding it: section headers are not mapped, and gimli only follows offsets
//! from the header's table), as slices of the mapped image; both are prefaulted (one read a
//! page) so the handler takes no page fault on them.
//!
//! Shared objects are **pinned** first with `dlopen(path, RTLD_NOLOAD | RTLD_LAZY)`, which
//! raises their reference count: a `dlclose` by the program can no longer unmap sections a
//! handler may be reading. An object `RTLD_NOLOAD` does not find was closed in between and is
//! left out. The pins are dropped at stop, after the drain. The main executable and the vDSO
//! are never unloaded and need none.
//!
//! The pins are taken outside `dl_iterate_phdr` (whose callback runs under the loader's list
//! lock): one walk lists the names, the pins are taken, a second walk builds the modules.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::ops::Range;

use framehop::x86_64::UnwinderX86_64;
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};

use super::policy::SmallStore;

pub(crate) type Unwinder = UnwinderX86_64<&'static [u8], SmallStore>;

/// What the handler reads: built outside it, never changed after publication.
pub(crate) struct ModuleSet {
    pub(crate) unwinder: Unwinder,
    /// Executable ranges, sorted by start: a frame outside all of them ends the chain.
    pub(crate) code: Vec<(u64, u64)>,
}

impl std::fmt::Debug for ModuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleSet")
            .field("code", &self.code.len())
            .finish()
    }
}

impl ModuleSet {
    /// Whether `a` lies in the code of a published object. Async-signal-safe: a binary search
    /// over a slice, no allocation.
    #[inline(always)]
    pub(crate) fn is_code(&self, a: u64) -> bool {
        let i = self.code.partition_point(|&(s, _)| s <= a);
        i > 0 && self.code.get(i - 1).is_some_and(|&(_, e)| a < e)
    }
}

/// The pinned shared objects, by path: `dlopen` handles released at stop.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    handles: HashMap<String, usize>,
}

// SAFETY: the handles are opaque tokens for dlclose, valid on any thread.
unsafe impl Send for Pins {}

impl Pins {
    /// Pins `path` (a loaded shared object) unless already pinned; false if the loader no
    /// longer has it.
    fn pin(&mut self, path: &str) -> bool {
        if self.handles.contains_key(path) {
            return true;
        }
        let Ok(c) = CString::new(path) else {
            return false;
        };
        // SAFETY: RTLD_NOLOAD never loads or initialises anything: it only raises the count of
        // an object already loaded, or returns null.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if h.is_null() {
            return false;
        }
        self.handles.insert(path.to_owned(), h as usize);
        true
    }

    /// Drops every pin. Call only when no handler can read the modules any more (after the
    /// drain).
    pub(crate) fn release(&mut self) {
        for (_, h) in self.handles.drain() {
            // SAFETY: `h` came from a successful dlopen and is closed once.
            unsafe { libc::dlclose(h as *mut libc::c_void) };
        }
    }
}

/// One object's mapping as `dl_iterate_phdr` shows it.
struct Seen {
    name: String,
    bias: u64,
}

fn is_vdso(name: &str) -> bool {
    name.starts_with("linux-vdso") || name.starts_with("linux-gate")
}

/// Reads an `.eh_frame_hdr` pointer field of encoding `enc` at `p`.
///
/// # Safety
///
/// `p` must be readable for 8 bytes.
unsafe fn read_encoded(p: *const u8, enc: u8, hdr_start: u64) -> Option<u64> {
    let field = p as u64;
    // SAFETY: per the contract, `p` is readable for 8 bytes.
    let v: u64 = unsafe {
        match enc & 0x0f {
            0x00 | 0x04 | 0x0c => (p as *const u64).read_unaligned(),
            0x03 => u64::from((p as *const u32).read_unaligned()),
            0x0b => (p as *const i32).read_unaligned() as i64 as u64,
            _ => return None,
        }
    };
    match enc & 0x70 {
        0x00 => Some(v),
        0x10 => Some(field.wrapping_add(v)),
        0x30 => Some(hdr_start.wrapping_add(v)),
        _ => None,
    }
}

/// Calls `f` for every loaded object (name, bias, program headers).
fn each_object(mut f: impl FnMut(&str, u64, &[libc::Elf64_Phdr])) {
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `&mut dyn FnMut` passed below, alive for the walk; `info` is
        // the loader's valid description of one object, its phdrs mapped.
        unsafe {
            let f = &mut *(data as *mut &mut dyn FnMut(&str, u64, &[libc::Elf64_Phdr]));
            let info = &*info;
            let name = if info.dlpi_name.is_null() {
                String::new()
            } else {
                CStr::from_ptr(info.dlpi_name)
                    .to_string_lossy()
                    .into_owned()
            };
            let phdrs = if info.dlpi_phdr.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum))
            };
            f(&name, info.dlpi_addr, phdrs);
        }
        0
    }
    let mut dynf: &mut dyn FnMut(&str, u64, &[libc::Elf64_Phdr]) = &mut f;
    // SAFETY: the callback only uses `dynf`, which outlives the walk.
    unsafe {
        libc::dl_iterate_phdr(
            Some(cb),
            &mut dynf as *mut &mut dyn FnMut(&str, u64, &[libc::Elf64_Phdr]) as *mut libc::c_void,
        )
    };
}

/// Builds a module set over every loaded object, pinning shared objects in `pins`.
/// Allocates and calls the loader: outside the handler only.
pub(crate) fn build(pins: &mut Pins) -> ModuleSet {
    let mut seen = Vec::new();
    each_object(|name, bias, _| {
        seen.push(Seen {
            name: name.to_owned(),
            bias,
        })
    });
    let mut pinned: Vec<(String, u64)> = Vec::new();
    for s in &seen {
        if s.name.is_empty() || is_vdso(&s.name) || pins.pin(&s.name) {
            pinned.push((s.name.clone(), s.bias));
        }
    }
    let mut unwinder = Unwinder::new();
    let mut code = Vec::new();
    each_object(|name, bias, phdrs| {
        if !pinned.iter().any(|(n, b)| n == name && *b == bias) {
            return;
        }
        if let Some((range, module)) = module_of(name, bias, phdrs) {
            code.push((range.start, range.end));
            unwinder.add_module(module);
        }
    });
    code.sort_unstable();
    ModuleSet { unwinder, code }
}

/// The framehop module of one object, from its mapped image; `None` without executable code.
fn module_of(
    name: &str,
    bias: u64,
    phdrs: &[libc::Elf64_Phdr],
) -> Option<(Range<u64>, Module<&'static [u8]>)> {
    let mut text: Option<Range<u64>> = None;
    let mut hdr: Option<(u64, u64)> = None;
    for ph in phdrs {
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
            let r = ph.p_vaddr..ph.p_vaddr + ph.p_memsz;
            text = Some(match text {
                None => r,
                Some(t) => t.start.min(r.start)..t.end.max(r.end),
            });
        }
        if ph.p_type == libc::PT_GNU_EH_FRAME {
            hdr = Some((ph.p_vaddr, ph.p_memsz));
        }
    }
    let text = text?;
    let mut section = ExplicitModuleSectionInfo::<&'static [u8]> {
        base_svma: 0,
        text_svma: Some(text.clone()),
        ..Default::default()
    };
    if let Some((hv, hlen)) = hdr.filter(|&(_, len)| len >= 8) {
        let havma = bias.wrapping_add(hv);
        let h = havma as *const u8;
        // SAFETY: the PT_GNU_EH_FRAME segment is mapped (it lies inside a PT_LOAD of a loaded
        // object, pinned above) and at least 8 bytes long: version, three encodings, and the
        // eh_frame_ptr field.
        let (version, enc) = unsafe { (*h, *h.add(1)) };
        // SAFETY: as above; the field at offset 4 is inside the 8 bytes.
        let eh = (version == 1)
            .then(|| unsafe { read_encoded(h.add(4), enc, havma) })
            .flatten();
        if let Some(eh_avma) = eh {
            let eh_svma = eh_avma.wrapping_sub(bias);
            if let Some(seg) = phdrs.iter().find(|p| {
                p.p_type == libc::PT_LOAD
                    && p.p_vaddr <= eh_svma
                    && eh_svma < p.p_vaddr + p.p_filesz
            }) {
                let len = seg.p_vaddr + seg.p_filesz - eh_svma;
                // SAFETY: both ranges lie inside mapped, file-backed parts of PT_LOAD segments
                // of an object that stays loaded (pinned, or the executable/vDSO) for as long
                // as the module set is reachable; they are never written.
                let (hdr_bytes, eh_bytes) = unsafe {
                    (
                        std::slice::from_raw_parts(h, hlen as usize),
                        std::slice::from_raw_parts(eh_avma as *const u8, len as usize),
                    )
                };
                for d in [hdr_bytes, eh_bytes] {
                    for off in (0..d.len()).step_by(4096) {
                        // SAFETY: inside the slice; a read forces the page in now.
                        unsafe { std::ptr::read_volatile(d.as_ptr().add(off)) };
                    }
                }
                section.eh_frame_hdr_svma = Some(hv..hv + hlen);
                section.eh_frame_hdr = Some(hdr_bytes);
                section.eh_frame_svma = Some(eh_svma..eh_svma + len);
                section.eh_frame = Some(eh_bytes);
            }
        }
    }
    let range = bias.wrapping_add(text.start)..bias.wrapping_add(text.end);
    let label = if name.is_empty() { "[exe]" } else { name };
    Some((
        range.clone(),
        Module::new(label.to_owned(), range, bias, section),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn here() -> u64 {
        here as *const () as u64
    }

    #[test]
    fn our_code_and_libc_are_code_and_the_heap_is_not() {
        let mut pins = Pins::default();
        let set = build(&mut pins);
        assert!(set.is_code(here()));
        assert!(set.is_code(libc::getpid as *const () as u64));
        let heap = Box::new(0u64);
        assert!(!set.is_code(&*heap as *const u64 as u64));
        assert!(!set.is_code(0));
        assert!(!pins.handles.is_empty(), "libc is pinned");
        pins.release();
    }
}
