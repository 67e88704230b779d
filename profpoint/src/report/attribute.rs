//! Sampled stacks through the active point: annotated functions that LLVM inlined into their
//! callers get their frame back (`docs/stacks.md` section 11).
//!
//! # Concept
//! A release build without debug information names a sample's frames from ELF symbols alone.
//! An annotated function that LLVM inlined into its caller has no symbol: its instructions
//! and its callees appear under the caller's name, so a stack reads `count_chunk;rustc_entry`
//! where the program ran `count_chunk;count_line;rustc_entry`. perf cannot name it either.
//!
//! profpoint knows better: every thread's shard holds the point that is active on it (the
//! points tree needs that word anyway), and the sampler reads it at each sample into the
//! stack's `tag`. After the run, a stack whose active point has no frame of its own gets one:
//! - just leafward of the deepest frame that is itself an annotated function (the active
//!   point started inside it, so everything leafward of it ran under the active point);
//! - failing that, just leafward of the deepest frame of the active point's own crate
//!   (`wordcount::...` for `wordcount::count_line`);
//! - failing that, just leafward of the executable's deepest frame without a name (a stripped
//!   executable: its own code is all `[unknown]`, but the point still has its name);
//! - failing that, the stack is left as it was and counted as unplaced.
//!
//! The inserted frame is marked `inlined` and carries the address of the frame it follows,
//! so renderers that key locations by address keep it apart by name.
//!
//! Names are compared after [`normalise`]: a symbol reads `<crate::T as Trait>::m` or carries
//! generic arguments where the point's name (from `type_name`) reads `crate::T::m`.

use heatmap::{Frame, StackReport};
use std::collections::{HashMap, HashSet};

/// What [`attribute`] did, in samples.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attributed {
    /// Samples whose stack gained the active point's frame.
    pub(crate) inserted: u64,
    /// Samples whose active point had no frame and no place to put one.
    pub(crate) unplaced: u64,
}

/// Inserts the active point's frame where a stack lacks it (see the module docs).
/// `point_name(tag)` is the name of the point a tag stands for (`None`: no point, or a tag
/// this build does not know); `annotated` holds the [`normalise`]d names of every point.
pub(crate) fn attribute<'a>(
    stacks: &mut StackReport,
    point_name: impl Fn(u32) -> Option<&'a str>,
    annotated: &HashSet<String>,
) -> Attributed {
    let mut done = Attributed::default();
    for stack in &mut stacks.stacks {
        let Some(name) = point_name(stack.tag) else {
            continue;
        };
        let wanted = normalise(name);
        let normalised: Vec<String> = stack
            .frames
            .iter()
            .map(|f| normalise(&f.function))
            .collect();
        if normalised.contains(&wanted) {
            continue;
        }
        let krate = wanted.split("::").next().unwrap_or_default();
        let after = normalised
            .iter()
            .rposition(|f| annotated.contains(f))
            .or_else(|| {
                normalised
                    .iter()
                    .rposition(|f| f.split("::").next() == Some(krate) && f.contains("::"))
            })
            .or_else(|| {
                // A stripped executable names none of its own frames: the point's code is in
                // its deepest one.
                stack
                    .frames
                    .iter()
                    .rposition(|f| f.library.is_none() && f.function == "[unknown]")
            });
        match after {
            Some(i) => {
                let at = &stack.frames[i];
                let mut frame = Frame::default();
                frame.address = at.address;
                frame.function = name.to_owned();
                frame.library = at.library.clone();
                frame.location = None;
                frame.inlined = true;
                stack.frames.insert(i + 1, frame);
                done.inserted += stack.count;
            }
            None => done.unplaced += stack.count,
        }
    }
    done
}

/// For each of `points` (normalised names, [`normalise`]), the samples whose innermost
/// frame that names one of them names it: the points' self time as the sampler saw it, over
/// the stacks as [`attribute`] left them. A sample in profpoint's own code (a point's enter
/// or leave) goes to the point whose function called it, which is where an annotation's
/// cost is. `None`: no frame names the point, or another point has the same normalised
/// name (which of them ran is not known).
pub(crate) fn innermost_points(stacks: &StackReport, points: &[String]) -> Vec<Option<u64>> {
    let mut index: HashMap<&str, Option<usize>> = HashMap::new();
    for (i, n) in points.iter().enumerate() {
        index
            .entry(n.as_str())
            .and_modify(|e| *e = None)
            .or_insert(Some(i));
    }
    let mut seen = vec![false; points.len()];
    let mut samples = vec![0u64; points.len()];
    for stack in &stacks.stacks {
        let mut innermost = true;
        // Root first, leaf last: the innermost is the last that names a point.
        for f in stack.frames.iter().rev() {
            match index.get(normalise(&f.function).as_str()) {
                Some(&Some(i)) => {
                    seen[i] = true;
                    if innermost {
                        samples[i] += stack.count;
                    }
                    innermost = false;
                }
                // An annotated function, but which point is not known: the sample is its,
                // not its caller's.
                Some(None) => innermost = false,
                None => {}
            }
        }
    }
    seen.iter()
        .zip(samples)
        .map(|(&s, n)| s.then_some(n))
        .collect()
}

/// A function's name in the form a point's name has: `<A as B>::m` becomes `A::m`, generic
/// arguments (`<...>` groups) and a trailing `::{{closure}}` go.
pub(crate) fn normalise(name: &str) -> String {
    let mut s = name;
    let mut owned;
    // `<crate::T as Trait>::m` -> `crate::T::m`
    if let Some(rest) = s.strip_prefix('<')
        && let Some(close) = matching_close(rest)
    {
        let inner = &rest[..close];
        let ty = inner.split(" as ").next().unwrap_or(inner);
        owned = format!("{ty}{}", &rest[close + 1..]);
        s = &owned;
    }
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    owned = out.replace("::::", "::");
    while let Some(stripped) = owned.strip_suffix("::{{closure}}") {
        owned = stripped.to_owned();
    }
    owned.trim_end_matches("::").to_owned()
}

/// The index in `s` of the `>` that closes a `<` just before `s`.
fn matching_close(s: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use heatmap::SampledStack;

    fn frame(f: &str) -> Frame {
        let mut frame = Frame::default();
        frame.address = 0x1000;
        frame.function = f.to_owned();
        frame
    }

    fn stack(frames: &[&str], count: u64, tag: u32) -> SampledStack {
        let mut stack = SampledStack::default();
        stack.frames = frames.iter().map(|f| frame(f)).collect();
        stack.count = count;
        stack.tag = tag;
        stack
    }

    fn names(s: &SampledStack) -> Vec<&str> {
        s.frames.iter().map(|f| f.function.as_str()).collect()
    }

    const POINTS: [&str; 3] = ["wc::main", "wc::count_chunk", "wc::count_line"];

    fn run(stacks: Vec<SampledStack>) -> (StackReport, Attributed) {
        let mut r = StackReport::default();
        r.stacks = stacks;
        let annotated = POINTS.iter().map(|p| normalise(p)).collect();
        let done = attribute(
            &mut r,
            |t| POINTS.get((t as usize).checked_sub(1)?).copied(),
            &annotated,
        );
        (r, done)
    }

    #[test]
    fn an_inlined_point_gets_its_frame_after_its_annotated_caller() {
        let (r, done) = run(vec![stack(
            &[
                "main",
                "wc::main",
                "wc::count_chunk",
                "hashbrown::rustc_entry",
                "memcmp",
            ],
            7,
            3,
        )]);
        assert_eq!(
            names(&r.stacks[0]),
            [
                "main",
                "wc::main",
                "wc::count_chunk",
                "wc::count_line",
                "hashbrown::rustc_entry",
                "memcmp"
            ]
        );
        assert!(r.stacks[0].frames[3].inlined);
        assert_eq!(
            done,
            Attributed {
                inserted: 7,
                unplaced: 0
            }
        );
    }

    #[test]
    fn a_point_with_its_own_frame_is_left_alone() {
        let frames = ["main", "wc::count_chunk", "wc::count_line::<u8>", "x"];
        let (r, done) = run(vec![stack(&frames, 2, 3)]);
        assert_eq!(names(&r.stacks[0]), frames);
        assert_eq!(done, Attributed::default());
    }

    #[test]
    fn untagged_and_unknown_tags_are_left_alone() {
        let frames = ["main", "wc::count_chunk", "x"];
        let (r, done) = run(vec![stack(&frames, 2, 0), stack(&frames, 3, 99)]);
        assert_eq!(names(&r.stacks[0]), frames);
        assert_eq!(names(&r.stacks[1]), frames);
        assert_eq!(done, Attributed::default());
    }

    #[test]
    fn without_an_annotated_caller_the_crates_deepest_frame_is_used() {
        let (r, done) = run(vec![stack(&["main", "wc::helper", "libc::read"], 4, 3)]);
        assert_eq!(
            names(&r.stacks[0]),
            ["main", "wc::helper", "wc::count_line", "libc::read"]
        );
        assert_eq!(done.inserted, 4);
    }

    #[test]
    fn in_a_stripped_executable_the_deepest_nameless_frame_is_used() {
        let mut libc = frame("__memcmp");
        libc.library = Some("libc.so.6".into());
        let mut s = stack(&["[unknown]", "[unknown]", "[unknown]"], 6, 3);
        s.frames.push(libc);
        let (r, done) = run(vec![s]);
        assert_eq!(
            names(&r.stacks[0]),
            [
                "[unknown]",
                "[unknown]",
                "[unknown]",
                "wc::count_line",
                "__memcmp"
            ]
        );
        assert_eq!(done.inserted, 6);
    }

    #[test]
    fn no_place_is_counted_as_unplaced() {
        let frames = ["_start", "libc::read"];
        let (r, done) = run(vec![stack(&frames, 5, 3)]);
        assert_eq!(names(&r.stacks[0]), frames);
        assert_eq!(
            done,
            Attributed {
                inserted: 0,
                unplaced: 5
            }
        );
    }

    #[test]
    fn normalise_reads_symbols_as_point_names() {
        assert_eq!(normalise("<a::T as b::Tr>::m"), "a::T::m");
        assert_eq!(normalise("<a::T<u8> as b::Tr<i32>>::m"), "a::T::m");
        assert_eq!(normalise("a::f::<u8>"), "a::f");
        assert_eq!(normalise("a::f::{{closure}}"), "a::f");
        assert_eq!(normalise("a::T<u8>::m"), "a::T::m");
        assert_eq!(normalise("plain"), "plain");
        assert_eq!(normalise("<unbalanced"), "");
    }

    #[test]
    fn a_sample_counts_for_its_innermost_annotated_frame() {
        let points: Vec<String> = [
            "wc::main",
            "wc::count_chunk",
            "wc::count_line",
            "<wc::Fmt as core::fmt::Display>::fmt",
            "<wc::Fmt as core::fmt::Debug>::fmt",
            "wc::never_sampled",
            "a scope",
        ]
        .iter()
        .map(|p| normalise(p))
        .collect();
        let mut r = StackReport::default();
        r.stacks = vec![
            // In a callee the point does not own: the point's.
            stack(&["main", "wc::main", "wc::count_chunk", "memcmp"], 5, 0),
            // Generic arguments and a trait path, in profpoint's own code (a point's
            // enter): the innermost annotated function's.
            stack(
                &[
                    "main",
                    "wc::main",
                    "wc::count_chunk",
                    "wc::count_line<u8>",
                    "profpoint::point::hot::Point::enter_on",
                ],
                3,
                0,
            ),
            // Outside every point.
            stack(&["main", "std::rt::lang_start"], 2, 0),
            // Display's and Debug's `fmt` read the same: which ran is not known, and the
            // sample is not its caller's either.
            stack(
                &["main", "wc::main", "<wc::Fmt as core::fmt::Display>::fmt"],
                4,
                0,
            ),
        ];
        assert_eq!(
            innermost_points(&r, &points),
            [Some(0), Some(5), Some(3), None, None, None, None]
        );
    }
}
