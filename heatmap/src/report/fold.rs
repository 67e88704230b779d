//! After the run: captured stacks to a [`StackReport`], symbolised through `symbolize.rs`.
//!
//! The leaf is looked up at its pc, every caller at its return address minus one (the call
//! instruction: the return address may already belong to the next line or function); where the
//! file has DWARF, the functions inlined at an address are expanded into frames of their own
//! (marked `inlined`), the source location on the innermost. Each distinct address is resolved
//! once. Stacks keep their identity (their addresses): the renderers merge equal names.

use std::collections::HashMap;

use crate::profile::Profile;
use crate::stacks::{Frame, RawStacks, SampledStack, StackCut, StackReport};
use crate::symbolize::Symbolizer;

/// A frame at `address`, without a source location.
fn frame(address: u64, function: String, library: Option<String>, inlined: bool) -> Frame {
    let mut frame = Frame::default();
    frame.address = address;
    frame.function = function;
    frame.library = library;
    frame.inlined = inlined;
    frame
}

/// Frames for one address, root side first.
fn resolve(profile: &Profile, sym: &mut Symbolizer, address: u64) -> Vec<Frame> {
    let unknown = |library| frame(address, "[unknown]".to_owned(), library, false);
    let Some(object) = profile
        .segments
        .iter()
        .find(|s| s.start <= address && address < s.end)
        .map(|s| s.object)
    else {
        return vec![unknown(None)];
    };
    let r = sym.lookup(object, address);
    if r.function == "[unknown]" || r.function == "[vdso]" {
        return vec![frame(address, r.function, r.library, false)];
    }
    let info = sym.source_info(object, address);
    let mut out = vec![frame(address, r.function, r.library.clone(), false)];
    out.extend(
        info.inlined
            .into_iter()
            .map(|f| frame(address, f, r.library.clone(), true)),
    );
    if let Some(last) = out.last_mut() {
        last.location = info.location;
    }
    out
}

/// The report of `raw` (of `profile`), with `warnings` (already computed lines, e.g. stripped
/// files) added to its own.
pub(crate) fn report(
    raw: &RawStacks,
    profile: &Profile,
    sym: &mut Symbolizer,
    warnings: Vec<String>,
) -> StackReport {
    let mut cache: HashMap<u64, Vec<Frame>> = HashMap::new();
    let mut stacks: Vec<SampledStack> = raw
        .stacks
        .iter()
        .map(|s| {
            let mut frames = Vec::new();
            // Root first: walk the captured frames (leaf first) backwards.
            for (i, &a) in s.frames.iter().enumerate().rev() {
                let address = if i == 0 { a } else { a.wrapping_sub(1) };
                frames.extend(
                    cache
                        .entry(address)
                        .or_insert_with(|| resolve(profile, sym, address))
                        .iter()
                        .cloned(),
                );
            }
            let mut stack = SampledStack::default();
            stack.frames = frames;
            stack.count = s.count;
            stack.tag = s.tag;
            stack
        })
        .collect();
    stacks.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tag.cmp(&b.tag)));
    let samples: u64 = stacks.iter().map(|s| s.count).sum();
    let mut w = warnings;
    if raw.dropped > 0 {
        w.push(format!(
            "{} sample(s) found no free slot in the stack table and were not stored: raise \
             the table size (Config::stack_slots)",
            raw.dropped
        ));
    }
    if profile.mode == crate::config::Mode::Wall && profile.proc_samples > 0 {
        w.push(format!(
            "wall mode: the {} sample(s) of blocked threads (read from /proc by the watcher, \
             no signal) carry no stack; they are in the flat rows only",
            profile.proc_samples
        ));
    }
    let mut report = StackReport::default();
    report.depth = raw.depth;
    report.samples = samples;
    report.dropped = raw.dropped;
    report.truncated = raw.truncated;
    report.cuts = raw
        .cuts
        .iter()
        .map(|(reason, count)| {
            let mut cut = StackCut::default();
            cut.reason = reason.clone();
            cut.count = *count;
            cut
        })
        .collect();
    report.stacks = stacks;
    report.warnings = w;
    report
}
