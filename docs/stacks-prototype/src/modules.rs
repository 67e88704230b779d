//! Modules from `dl_iterate_phdr`, as slices of the mapped images (no file reads), turned
//! into one immutable framehop unwinder that is published with a pointer swap.

use std::ffi::CStr;
use std::ops::Range;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use framehop::x86_64::UnwinderX86_64;
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};

pub type Unw = UnwinderX86_64<&'static [u8], crate::Policy>;

/// One loaded object, as the symboliser needs it after the run.
#[derive(Clone, Debug)]
pub struct ObjInfo {
    pub path: String,
    pub bias: u64,
    pub text: Range<u64>,
    pub has_eh_frame_hdr: bool,
}

/// What the handler reads: built outside it, never changed after publication.
pub struct Published {
    pub unwinder: Unw,
    /// Executable ranges, sorted: a frame outside all of them ends the chain.
    pub code: Vec<(u64, u64)>,
    pub objects: Vec<ObjInfo>,
    /// `dlpi_adds + dlpi_subs` when this was built.
    pub generation: u64,
}

impl Published {
    #[inline(always)]
    pub fn is_code(&self, a: u64) -> bool {
        // branch-light binary search, no allocation
        let c = &self.code;
        let i = c.partition_point(|&(s, _)| s <= a);
        i > 0 && a < c[i - 1].1
    }
}

pub static PUBLISHED: AtomicPtr<Published> = AtomicPtr::new(std::ptr::null_mut());
/// Old unwinders are leaked (a handler may still hold one); this counts them.
pub static RETIRED: AtomicU64 = AtomicU64::new(0);

unsafe fn read_enc(p: *const u8, enc: u8, hdr_start: u64) -> Option<u64> {
    let field = p as u64;
    let v: u64 = match enc & 0x0f {
        0x00 | 0x04 | 0x0c => unsafe { (p as *const u64).read_unaligned() },
        0x03 => (unsafe { (p as *const u32).read_unaligned() }) as u64,
        0x0b => (unsafe { (p as *const i32).read_unaligned() }) as i64 as u64,
        _ => return None,
    };
    match enc & 0x70 {
        0x00 => Some(v),
        0x10 => Some(field.wrapping_add(v)),
        0x30 => Some(hdr_start.wrapping_add(v)),
        _ => None,
    }
}

fn dl_adds_subs() -> u64 {
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _s: usize, d: *mut libc::c_void) -> i32 {
        let info = unsafe { &*info };
        unsafe { *(d as *mut u64) = info.dlpi_adds + info.dlpi_subs };
        1
    }
    let mut g = 0u64;
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut g as *mut u64 as *mut _) };
    g
}

/// Walks every loaded object and builds an unwinder over its in-memory `.eh_frame_hdr` /
/// `.eh_frame`. Allocates: call it outside the handler only.
pub fn build() -> Published {
    struct Acc {
        unw: Unw,
        code: Vec<(u64, u64)>,
        objects: Vec<ObjInfo>,
        gen: u64,
    }
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _s: usize, d: *mut libc::c_void) -> i32 {
        let acc = unsafe { &mut *(d as *mut Acc) };
        let info = unsafe { &*info };
        acc.gen = info.dlpi_adds + info.dlpi_subs;
        let bias = info.dlpi_addr;
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
        };
        let path = if name.is_empty() { "/proc/self/exe".to_string() } else { name };
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
        let Some(text) = text else { return 0 };
        acc.code.push((bias + text.start, bias + text.end));
        let mut section = ExplicitModuleSectionInfo::<&'static [u8]> {
            base_svma: 0,
            text_svma: Some(text.clone()),
            ..Default::default()
        };
        let mut has_hdr = false;
        if let Some((hv, hlen)) = hdr {
            let havma = bias + hv;
            let h = havma as *const u8;
            // version 1, eh_frame_ptr_enc, fde_count_enc, table_enc, eh_frame_ptr
            let (ver, enc) = unsafe { (*h, *h.add(1)) };
            if ver == 1 {
                if let Some(eh_avma) = unsafe { read_enc(h.add(4), enc, havma) } {
                    // .eh_frame's length is not in the header: take the rest of the
                    // PT_LOAD segment that holds it (gimli only follows offsets).
                    let eh_svma = eh_avma - bias;
                    if let Some(seg) = phdrs.iter().find(|p| {
                        p.p_type == libc::PT_LOAD
                            && p.p_vaddr <= eh_svma
                            && eh_svma < p.p_vaddr + p.p_filesz
                    }) {
                        let len = seg.p_vaddr + seg.p_filesz - eh_svma;
                        section.eh_frame_hdr_svma = Some(hv..hv + hlen);
                        section.eh_frame_hdr = Some(unsafe {
                            std::slice::from_raw_parts(h, hlen as usize)
                        });
                        section.eh_frame_svma = Some(eh_svma..eh_svma + len);
                        section.eh_frame = Some(unsafe {
                            std::slice::from_raw_parts(eh_avma as *const u8, len as usize)
                        });
                        has_hdr = true;
                    }
                }
            }
        }
        acc.objects.push(ObjInfo { path: path.clone(), bias, text: bias + text.start..bias + text.end, has_eh_frame_hdr: has_hdr });
        // Fault the unwind sections in now (read one byte per page), not in the handler.
        for d in [section.eh_frame, section.eh_frame_hdr].into_iter().flatten() {
            for off in (0..d.len()).step_by(4096) {
                unsafe { std::ptr::read_volatile(d.as_ptr().add(off)) };
            }
        }
        let m = Module::new(path, bias + text.start..bias + text.end, bias, section);
        acc.unw.add_module(m);
        0
    }
    let mut acc = Acc { unw: Unw::new(), code: Vec::new(), objects: Vec::new(), gen: 0 };
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut acc as *mut Acc as *mut _) };
    acc.code.sort();
    Published { unwinder: acc.unw, code: acc.code, objects: acc.objects, generation: acc.gen }
}

/// Builds and publishes a new unwinder if objects were added or removed since the last one.
/// The old one is leaked: a handler on another CPU may still be walking it. (With the
/// heatmap's ACTIVE drain it could be freed at stop, or after a grace period.)
pub fn refresh() -> bool {
    let cur = PUBLISHED.load(Ordering::Acquire);
    if !cur.is_null() && unsafe { &*cur }.generation == dl_adds_subs() {
        return false;
    }
    let p = Box::into_raw(Box::new(build()));
    let old = PUBLISHED.swap(p, Ordering::AcqRel);
    if !old.is_null() {
        RETIRED.fetch_add(1, Ordering::Relaxed);
    }
    true
}
