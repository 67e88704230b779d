//! After the run: addresses -> names (ELF symbols; DWARF inline frames when the file has
//! debug info), folded into inferno's `root;...;leaf count` lines.

use std::collections::HashMap;

use crate::modules::ObjInfo;
use object::{Object, ObjectSymbol, SymbolKind};

/// Function symbols of a file (.symtab, else .dynsym), sorted, with their sizes: an address
/// past the end of the nearest symbol is not named after it (libc has only .dynsym, and
/// `start_thread` is not in it).
fn symbols(path: &str) -> Vec<(u64, u64, String)> {
    let Ok(data) = std::fs::read(path) else { return Vec::new() };
    let Ok(file) = object::File::parse(&*data) else { return Vec::new() };
    let mut v: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    v.sort();
    v.dedup_by_key(|e| e.0);
    v
}

fn demangle(s: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(s))
}

pub fn folded(stacks: &[(Vec<u64>, u64)], objects: &[ObjInfo]) -> String {
    let mut loaders: HashMap<usize, Option<addr2line::Loader>> = HashMap::new();
    let mut syms: HashMap<usize, Vec<(u64, u64, String)>> = HashMap::new();
    let mut names: HashMap<(u64, bool), Vec<String>> = HashMap::new();
    let mut lines: HashMap<String, u64> = HashMap::new();
    for (frames, count) in stacks {
        let mut parts: Vec<String> = Vec::new();
        for (i, &a) in frames.iter().enumerate() {
            let is_ret = i > 0;
            let v = names.entry((a, is_ret)).or_insert_with(|| {
                // a return address names the call: look up the byte before it
                let probe = if is_ret { a - 1 } else { a };
                let Some((oi, o)) = objects.iter().enumerate().find(|(_, o)| o.text.contains(&probe)) else {
                    return vec![format!("[unknown {a:#x}]")];
                };
                if o.path.starts_with("linux-vdso") {
                    return vec!["[vdso]".to_string()];
                }
                let l = loaders.entry(oi).or_insert_with(|| addr2line::Loader::new(&o.path).ok());
                let Some(l) = l else { return vec![format!("[{}]", o.path)] };
                let svma = probe - o.bias;
                let mut out = Vec::new();
                if let Ok(mut it) = l.find_frames(svma) {
                    while let Ok(Some(f)) = it.next() {
                        if let Some(fun) = f.function {
                            if let Ok(n) = fun.raw_name() {
                                out.push(demangle(&n));
                            }
                        }
                    }
                }
                if out.is_empty() {
                    let t = syms.entry(oi).or_insert_with(|| symbols(&o.path));
                    let i = t.partition_point(|e| e.0 <= svma);
                    out.push(match i.checked_sub(1).map(|i| &t[i]) {
                        Some((a, sz, n)) if *sz == 0 || svma < a + sz => demangle(n),
                        _ => format!("[{}+{:#x}]", o.path.rsplit('/').next().unwrap_or(""), svma),
                    });
                }
                out // innermost first
            });
            parts.extend(v.iter().cloned());
        }
        parts.reverse(); // root first
        let key = parts.join(";").replace(' ', "_");
        *lines.entry(key).or_insert(0) += count;
    }
    let mut v: Vec<_> = lines.into_iter().collect();
    v.sort();
    v.into_iter().map(|(k, c)| format!("{k} {c}\n")).collect()
}
