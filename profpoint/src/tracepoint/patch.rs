//! Static keys on x86_64 Linux: a tracepoint site is a 5-byte nop, patched to a `jmp` into its
//! out-of-line block when the key turns on.
//!
//! # Concept
//! The kernel's jump labels (`include/linux/jump_label.h`): the disabled site costs one
//! instruction that does nothing; enabling rewrites it. Each site records, from inside its
//! `asm!` block, where it is, where its enabled block is and which tracepoint it belongs to, in
//! the `__profpoint_sites` section (linkme cannot take a code address).
//!
//! # Mechanism: patching without a writable-executable page
//! To rewrite code that other threads may be running, we never make the live page writable:
//! 1. find the live page's mapping in `/proc/self/maps` (file and offset);
//! 2. map the same file pages privately, read-write, at a scratch address; copy the live bytes
//!    in (they carry earlier patches); write the new instruction(s);
//! 3. `mprotect` the scratch pages read+exec, then `mremap(MREMAP_FIXED)` them over the live
//!    ones: one atomic page-table switch. A thread executing the page takes a minor fault and
//!    continues in the new page; no instruction is ever seen half-written.
//!
//! The mapping still names the executable and its offset afterwards, so perf, debuggers and our
//! own symboliser keep resolving it (copying the page to an anonymous mapping would not). All
//! patching runs under one process-wide lock: two keys whose sites share a page cannot lose
//! each other's update (a known failure of patching without it). A site that straddles a page
//! boundary is patched by swapping both pages in one `mremap`. Where W^X is enforced
//! (`MemoryDenyWriteExecute`, `PR_SET_MDWE`), `mprotect` refuses (EACCES); where a seccomp
//! filter denies `mremap` or `mprotect` (EPERM), they fail: either way the error names the
//! cause (W^X or seccomp) and the `tracepoint-atomic` feature.
//!
//! # The call from the site
//! An ordinary call in the site's enabled block would make the compiler treat every
//! caller-saved register as clobbered and push a prologue into the whole hot function. Instead
//! the block stores the arguments in a tuple and calls [`trampoline`] from `asm!` with no
//! clobbers: the trampoline skips the red zone, saves every caller-saved register and the whole
//! extended state (`xsave`), aligns the stack and calls the tracepoint's thunk.

use std::sync::Mutex;

/// Why sites could not be patched: the message names the site and the cause. The key wraps it
/// in its public error (`key::KeyError`), so this file needs nothing from the key's.
#[derive(Debug)]
pub(crate) struct PatchError(pub(crate) String);

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One site, as the site's `asm!` block writes it: each field is relative to its own address.
#[repr(C)]
struct SiteRecord {
    site: i32,
    target: i32,
    key: i64,
}

impl SiteRecord {
    fn site(&self) -> usize {
        (&self.site as *const i32 as isize).wrapping_add(self.site as isize) as usize
    }
    fn target(&self) -> usize {
        (&self.target as *const i32 as isize).wrapping_add(self.target as isize) as usize
    }
    fn key(&self) -> usize {
        (&self.key as *const i64 as isize).wrapping_add(self.key as isize) as usize
    }
}

// One record that always exists (its key matches nothing), so the section and its
// `__start_`/`__stop_` symbols exist even in a program without tracepoints. "aR": allocated
// and retained (lld would otherwise drop the unreferenced section).
core::arch::global_asm!(
    ".pushsection .text.__profpoint_dummy_site,\"ax\",@progbits",
    ".globl __profpoint_dummy_site",
    ".hidden __profpoint_dummy_site",
    "__profpoint_dummy_site:",
    ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
    "ret",
    ".popsection",
    ".pushsection __profpoint_sites,\"aR\",@progbits",
    ".balign 8",
    ".long __profpoint_dummy_site - .",
    ".long __profpoint_dummy_site - .",
    ".quad 0",
    ".popsection",
);

unsafe extern "C" {
    #[link_name = "__start___profpoint_sites"]
    static SITES_START: SiteRecord;
    #[link_name = "__stop___profpoint_sites"]
    static SITES_STOP: SiteRecord;
}

/// Every site record of the program.
fn records() -> &'static [SiteRecord] {
    // SAFETY: the linker defines both symbols around the `__profpoint_sites` section, which
    // holds only 16-byte `SiteRecord`s written by the site `asm!` blocks and the dummy above.
    unsafe {
        let start = &raw const SITES_START;
        let stop = &raw const SITES_STOP;
        let n = (stop as usize - start as usize) / std::mem::size_of::<SiteRecord>();
        std::slice::from_raw_parts(start, n)
    }
}

/// The sites of the tracepoint at `key`: (site address, enabled-block address).
pub(crate) fn sites_of(key: usize) -> Vec<(usize, usize)> {
    records()
        .iter()
        .filter(|r| r.key() == key)
        .map(|r| (r.site(), r.target()))
        .collect()
}

/// The 5-byte nop of a disabled site (`nopl 0x0(%rax,%rax,1)`).
pub(crate) const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// The `jmp rel32` from `site` to `target`.
fn jmp5(site: usize, target: usize) -> [u8; 5] {
    let rel = (target as i64 - (site as i64 + 5)) as i32;
    let r = rel.to_le_bytes();
    [0xe9, r[0], r[1], r[2], r[3]]
}

/// Serialises all patching in the process.
static PATCH: Mutex<()> = Mutex::new(());

/// Points every site of the tracepoint at `key` at its enabled block (`on`) or at the nop.
pub(crate) fn set(key: usize, on: bool) -> Result<(), PatchError> {
    let _lock = PATCH.lock().unwrap_or_else(|e| e.into_inner());
    let sites = sites_of(key);
    for &(site, target) in &sites {
        let want = if on { jmp5(site, target) } else { NOP5 };
        // SAFETY: `site` is the address of a 5-byte instruction in our own text (its record
        // was assembled from the site's label); reading it is reading mapped code.
        let have = unsafe { std::ptr::read_unaligned(site as *const [u8; 5]) };
        if have == want {
            continue;
        }
        if have != NOP5 && have[0] != 0xe9 {
            return Err(PatchError(format!(
                "tracepoint site at {site:#x} holds {have:02x?}, neither the nop nor a jmp we wrote: refusing to patch"
            )));
        }
        patch(site, &want)?;
    }
    Ok(())
}

const PAGE: usize = 4096;

/// A mapping line of `/proc/self/maps`.
struct Mapping {
    start: usize,
    end: usize,
    offset: usize,
    inode: u64,
    path: String,
}

fn mapping_of(addr: usize) -> Result<Mapping, PatchError> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| {
        PatchError(format!(
            "cannot read /proc/self/maps to patch a tracepoint: {e}"
        ))
    })?;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(offset)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        else {
            continue;
        };
        if addr < start || addr >= end {
            continue;
        }
        let _dev = f.next();
        let inode = f.next().and_then(|i| i.parse::<u64>().ok()).unwrap_or(0);
        let path = f.next().unwrap_or("").to_string();
        if !perms.contains('x') || !path.starts_with('/') {
            return Err(PatchError(format!(
                "tracepoint site {addr:#x} is not in a file-backed executable mapping ({line})"
            )));
        }
        let offset = usize::from_str_radix(offset, 16).unwrap_or(0);
        return Ok(Mapping {
            start,
            end,
            offset,
            inode,
            path,
        });
    }
    Err(PatchError(format!(
        "tracepoint site {addr:#x} is in no mapping"
    )))
}

/// Whether the pages `lo..lo + len` lie in `first` or, past its end, in `second`, which must
/// then map the same file at the offsets that follow `first`'s (so one file mapping at
/// `first`'s offset holds both pages' bytes).
fn spans(first: &Mapping, second: Option<&Mapping>, lo: usize, len: usize) -> Result<(), String> {
    if lo < first.start {
        return Err("the site's page starts before its mapping".to_owned());
    }
    if lo + len <= first.end {
        return Ok(());
    }
    let Some(second) = second else {
        return Err("the next page is not mapped".to_owned());
    };
    if second.start != first.end || lo + len > second.end {
        return Err("the next page is not in the mapping that follows".to_owned());
    }
    if second.inode != first.inode || second.path != first.path {
        return Err(format!("the next page maps another file ({})", second.path));
    }
    if second.offset != first.offset + (first.end - first.start) {
        return Err("the next page maps another part of the file".to_owned());
    }
    Ok(())
}

/// Writes `bytes` at `site` by swapping in a patched copy of its page(s).
fn patch(site: usize, bytes: &[u8; 5]) -> Result<(), PatchError> {
    let lo = site & !(PAGE - 1);
    let hi = (site + bytes.len() - 1) & !(PAGE - 1);
    let len = hi + PAGE - lo;
    let m = mapping_of(site)?;
    // A site that straddles a page boundary whose second page is a mapping of its own (an
    // earlier patch of a site on that page split it off): both are the same file at
    // consecutive offsets, so the two pages are swapped as one, as within one mapping.
    let next = if lo + len > m.end {
        Some(mapping_of(m.end)?)
    } else {
        None
    };
    spans(&m, next.as_ref(), lo, len).map_err(|why| {
        PatchError(format!(
            "tracepoint site {site:#x} straddles two mappings ({why}): cannot patch it atomically"
        ))
    })?;
    // The exact file that is mapped, even if the path was replaced since; by path only if
    // it is the same inode (a rebuilt binary under the same name must not be mapped in).
    let file = match std::fs::File::open(format!("/proc/self/map_files/{:x}-{:x}", m.start, m.end))
    {
        Ok(f) => f,
        Err(_) => {
            use std::os::unix::fs::MetadataExt;
            let f = std::fs::File::open(&m.path).map_err(|e| {
                PatchError(format!("cannot open {} to patch a tracepoint: {e}", m.path))
            })?;
            let ino = f.metadata().map(|md| md.ino()).unwrap_or(0);
            if ino != m.inode {
                return Err(PatchError(format!(
                    "{} was replaced since it was mapped (inode {ino}, mapped {}): cannot patch its tracepoints",
                    m.path, m.inode
                )));
            }
            f
        }
    };
    use std::os::fd::AsRawFd;
    let file_off = m.offset + (lo - m.start);
    // SAFETY: a fresh private mapping of `len` bytes of a file we hold open; the kernel picks
    // the address. Nothing else refers to it until the mremap below.
    let scratch = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            file_off as libc::off_t,
        )
    };
    if scratch == libc::MAP_FAILED {
        let err = std::io::Error::last_os_error();
        return Err(PatchError(format!(
            "mmap of {} for patching failed: {err}{}",
            m.path,
            denial_hint("mmap", &err, seccomp_filtered())
        )));
    }
    let fail = |what: &str, err: std::io::Error| {
        // SAFETY: `scratch` is our mapping of `len` bytes, unused by anything else.
        unsafe { libc::munmap(scratch, len) };
        PatchError(format!(
            "{what} failed while patching a tracepoint: {err}{}",
            denial_hint(what, &err, seccomp_filtered())
        ))
    };
    // SAFETY: `lo..lo+len` is mapped readable (it is our executable mapping, checked above),
    // `scratch` is a fresh writable mapping of the same length; they do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(lo as *const u8, scratch as *mut u8, len);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), (scratch as *mut u8).add(site - lo), 5);
    }
    // SAFETY: `scratch` is our mapping of `len` bytes.
    if unsafe { libc::mprotect(scratch, len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
        return Err(fail(
            "mprotect(PROT_READ|PROT_EXEC)",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: moves our scratch pages over the live text pages `lo..lo+len`, which hold the
    // same bytes except the patched instruction; the page-table switch is atomic for other
    // threads, which fault and continue in the new pages.
    let r = unsafe {
        libc::mremap(
            scratch,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            lo as *mut libc::c_void,
        )
    };
    if r == libc::MAP_FAILED {
        return Err(fail("mremap", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Whether this process runs under a seccomp filter (`Seccomp: 2` in `/proc/self/status`).
fn seccomp_filtered() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.strip_prefix("Seccomp:").is_some_and(|v| v.trim() == "2"))
    })
}

/// What a refused patching call most likely means, for the error: W^X policies refuse with
/// EACCES (`PR_SET_MDWE`, systemd's `MemoryDenyWriteExecute`, SELinux `execmod`: the kernel's
/// `mprotect` returns EACCES for them); a seccomp filter's refusal is the errno it chose,
/// EPERM for container and sandbox profiles. Empty for other errors.
fn denial_hint(syscall: &str, err: &std::io::Error, seccomp: bool) -> String {
    const FIX: &str = "build profpoint with the `tracepoint-atomic` feature to use the portable \
                       backend, which patches no code";
    match err.raw_os_error() {
        Some(libc::EPERM) if seccomp => format!(
            " (EPERM: this process runs under a seccomp filter (/proc/self/status: Seccomp 2), \
             which denies {syscall}; a container's or sandbox's system-call policy. Allow \
             {syscall} in the filter, or {FIX})"
        ),
        Some(libc::EPERM) => format!(
            " (EPERM: {syscall} is denied by a system-call filter or security module; allow it, \
             or {FIX})"
        ),
        Some(libc::EACCES) => format!(
            " (EACCES: the system forbids making written memory executable: a W^X policy such \
             as systemd's MemoryDenyWriteExecute or prctl PR_SET_MDWE, or SELinux execmod; {FIX})"
        ),
        _ => String::new(),
    }
}

/// The enabled block of a site calls this with the arguments' tuple and the tracepoint's thunk.
///
/// Saves nothing itself: the naked [`trampoline`] preserves every register, so the `asm!`
/// declares no clobbers and the hot function's register allocation does not see the call.
///
/// # Safety
/// `thunk` must read `args` as the tuple type it was generated for.
#[doc(hidden)]
#[inline(always)]
pub unsafe fn call_hook(args: *const u8, thunk: unsafe extern "C" fn(*const u8)) {
    // Without AVX the vector registers are declared clobbered: the compiler saves a live one
    // here, in the cold block, if there is any (SysV has no callee-saved vector registers, so
    // this never reaches the hot path's prologue), and integer code pays nothing.
    #[cfg(not(target_feature = "avx"))]
    // SAFETY: the trampoline preserves every general-purpose register (flags are not
    // promised: no `preserves_flags`; xmm0-15 are declared clobbered), returns with rsp
    // restored, and does not touch the 128-byte red zone below our stack pointer, which the
    // `lea` skips.
    unsafe {
        core::arch::asm!(
            "lea rsp, [rsp - 128]",
            "call {tramp}",
            "lea rsp, [rsp + 128]",
            tramp = sym trampoline,
            in("rdi") args,
            in("rsi") thunk,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(nostack),
        );
    }
    // SAFETY: as above; this trampoline also preserves the whole extended state (xsave).
    #[cfg(target_feature = "avx")]
    unsafe {
        core::arch::asm!(
            "lea rsp, [rsp - 128]",
            "call {tramp}",
            "lea rsp, [rsp + 128]",
            tramp = sym trampoline,
            in("rdi") args,
            in("rsi") thunk,
            options(nostack),
        );
    }
}

/// The body of a trampoline: saves rbp and the 9 caller-saved integer registers (rax, rcx,
/// rdx, rsi, rdi, r8-r11; rbp then addresses them), runs the given instructions, restores them
/// from rbp and returns. Both trampoline variants share it: only what they do between differs.
macro_rules! around_saved_registers {
    ($($line:literal),* $(,)?) => {
        core::arch::naked_asm!(
            "push rbp",
            "mov rbp, rsp",
            "push rax",
            "push rcx",
            "push rdx",
            "push rsi",
            "push rdi",
            "push r8",
            "push r9",
            "push r10",
            "push r11",
            $($line,)*
            "lea rsp, [rbp - 72]",
            "pop r11",
            "pop r10",
            "pop r9",
            "pop r8",
            "pop rdi",
            "pop rsi",
            "pop rdx",
            "pop rcx",
            "pop rax",
            "pop rbp",
            "ret",
        )
    };
}

/// Saves every caller-saved general-purpose register, aligns the stack, calls `thunk(args)`
/// (rsi, rdi), restores. Entered from [`call_hook`] only.
///
/// In builds without AVX the vector registers are declared clobbered by [`call_hook`]'s
/// `asm!` (the compiler saves what is live, in the cold block), so this saves only the
/// integer registers. Builds with AVX use the variant below, which saves the whole extended
/// state with `xsave64` into a 4 KiB, 64-byte aligned area (AVX-512 state is ~2.7 KiB) whose
/// header (bytes 512..576) is zeroed first, as standard XRSTOR requires.
#[cfg(not(target_feature = "avx"))]
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    around_saved_registers!("and rsp, -16", "call rsi");
}

/// See the variant above; this one also saves the extended state a compiled Rust function can
/// hold live: x87/SSE, AVX, AVX-512 opmask and ZMM (XSAVE mask 0xe7, as glibc's lazy binding
/// trampoline uses). Never AMX tile data: it would not fit the 4 KiB area (TILEDATA alone is
/// 8 KiB) and restoring it can fault for processes without AMX permission.
#[cfg(target_feature = "avx")]
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    around_saved_registers!(
        "and rsp, -64",
        "sub rsp, 4096",
        "xor eax, eax",
        "mov [rsp + 512], rax",
        "mov [rsp + 520], rax",
        "mov [rsp + 528], rax",
        "mov [rsp + 536], rax",
        "mov [rsp + 544], rax",
        "mov [rsp + 552], rax",
        "mov [rsp + 560], rax",
        "mov [rsp + 568], rax",
        "mov eax, 0xe7",
        "xor edx, edx",
        "xsave64 [rsp]",
        "call rsi",
        "mov eax, 0xe7",
        "xor edx, edx",
        "xrstor64 [rsp]",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dummy_record_is_found_and_relative_fields_resolve() {
        let r = records();
        assert!(!r.is_empty());
        // The dummy: site == target, key matches nothing real.
        assert!(r.iter().any(|r| r.site() == r.target()));
    }

    fn map(start: usize, end: usize, offset: usize, inode: u64, path: &str) -> Mapping {
        Mapping {
            start,
            end,
            offset,
            inode,
            path: path.to_owned(),
        }
    }

    #[test]
    fn a_site_straddling_into_a_split_off_page_of_the_same_file_is_patchable() {
        let first = map(0x1000, 0x3000, 0x0, 7, "/bin/x");
        // Within one mapping.
        assert_eq!(spans(&first, None, 0x1000, 0x2000), Ok(()));
        // Straddling into the following mapping of the same file at the next offset (what an
        // earlier patch of a site on the second page leaves).
        let next = map(0x3000, 0x4000, 0x2000, 7, "/bin/x");
        assert_eq!(spans(&first, Some(&next), 0x2000, 0x2000), Ok(()));
        // Anything else is refused, with the reason.
        assert!(spans(&first, None, 0x2000, 0x2000).is_err());
        let gap = map(0x4000, 0x5000, 0x3000, 7, "/bin/x");
        assert!(spans(&first, Some(&gap), 0x2000, 0x2000).is_err());
        let other = map(0x3000, 0x4000, 0x2000, 8, "/lib/y");
        assert!(
            spans(&first, Some(&other), 0x2000, 0x2000)
                .unwrap_err()
                .contains("another file")
        );
        let shifted = map(0x3000, 0x4000, 0x9000, 7, "/bin/x");
        assert!(spans(&first, Some(&shifted), 0x2000, 0x2000).is_err());
    }

    // A function whose 5-byte nop straddles a page boundary: its section is page-aligned and
    // 4,093 bytes of padding put the nop at page offset 0xffd. A second nop lies wholly on
    // the next page.
    core::arch::global_asm!(
        ".pushsection .text.profpoint_straddle_test,\"ax\",@progbits",
        ".p2align 12",
        ".globl profpoint_straddle_test_fn",
        ".hidden profpoint_straddle_test_fn",
        ".skip 4093, 0xcc",
        "profpoint_straddle_test_fn:",
        ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
        "ret",
        ".skip 64, 0xcc",
        ".globl profpoint_straddle_test_next",
        ".hidden profpoint_straddle_test_next",
        "profpoint_straddle_test_next:",
        ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
        "ret",
        ".popsection",
    );

    unsafe extern "C" {
        fn profpoint_straddle_test_fn();
        fn profpoint_straddle_test_next();
    }

    #[test]
    fn a_straddling_site_is_patched_after_its_second_page_was_split_off() {
        let site = profpoint_straddle_test_fn as *const () as usize;
        let next = profpoint_straddle_test_next as *const () as usize;
        assert_eq!(
            site & (PAGE - 1),
            0xffd,
            "the site straddles a page boundary"
        );
        assert_eq!(
            next & !(PAGE - 1),
            (site + 4) & !(PAGE - 1),
            "on the second page"
        );
        let _lock = PATCH.lock().unwrap();
        // Patch a site wholly on the second page first: that page becomes a mapping of its own.
        patch(next, &jmp5(next, next + 5)).unwrap();
        // The straddling site: refused before, patched now (both pages swapped at once).
        patch(site, &jmp5(site, site + 5)).unwrap();
        // SAFETY: both are readable text; the functions are a 5-byte instruction and `ret`.
        unsafe {
            assert_eq!(std::ptr::read_volatile(site as *const u8), 0xe9);
            assert_eq!(std::ptr::read_volatile(next as *const u8), 0xe9);
            // A jump to the next instruction, then `ret`: both still run.
            profpoint_straddle_test_fn();
            profpoint_straddle_test_next();
        }
        // And back to the nops.
        let nop = [0x0f, 0x1f, 0x44, 0x00, 0x00];
        patch(site, &nop).unwrap();
        patch(next, &nop).unwrap();
        // SAFETY: as above.
        unsafe {
            assert_eq!(std::ptr::read_volatile(site as *const u8), 0x0f);
            profpoint_straddle_test_fn();
        }
    }

    #[test]
    fn a_refusal_names_its_likely_cause() {
        let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
        let eacces = std::io::Error::from_raw_os_error(libc::EACCES);
        let h = denial_hint("mremap", &eperm, true);
        assert!(h.contains("seccomp") && h.contains("EPERM"), "{h}");
        assert!(h.contains("mremap") && !h.contains("W^X"), "{h}");
        let h = denial_hint("mremap", &eperm, false);
        assert!(h.contains("EPERM") && !h.contains("W^X"), "{h}");
        let h = denial_hint("mprotect(PROT_READ|PROT_EXEC)", &eacces, true);
        assert!(
            h.contains("W^X") && h.contains("MemoryDenyWriteExecute"),
            "{h}"
        );
        let einval = std::io::Error::from_raw_os_error(libc::EINVAL);
        assert_eq!(denial_hint("mremap", &einval, true), "");
    }

    #[test]
    fn jmp_encoding() {
        assert_eq!(jmp5(0x1000, 0x1005), [0xe9, 0, 0, 0, 0]);
        assert_eq!(jmp5(0x1000, 0x1000), [0xe9, 0xfb, 0xff, 0xff, 0xff]);
    }
}
