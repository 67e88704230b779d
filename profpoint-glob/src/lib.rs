//! The one glob matcher of the project: `*` matches any run of characters (`::` included), `?`
//! exactly one; everything else matches itself.
//!
//! Its own crate because two crates need it and neither may depend on the other for it:
//! `heatmap` knows nothing of `profpoint`, and `profpoint` links `heatmap` only with its
//! optional `heatmap` feature. Both re-export [`glob_matches`] under that one name
//! (`profpoint::glob_matches`, `profpoint_heatmap::glob_matches`).

/// Whether `name` matches `pattern` (`*` any run of characters, `?` exactly one).
///
/// ```
/// assert!(profpoint_glob::glob_matches("db::*", "db::pool::get"));
/// assert!(!profpoint_glob::glob_matches("db::*", "http::db::get"));
/// ```
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    // ASCII (every Rust path): bytes are characters, nothing to allocate.
    if pattern.is_ascii() && name.is_ascii() {
        return matches_units(pattern.as_bytes(), name.as_bytes(), b'*', b'?');
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    matches_units(&p, &n, '*', '?')
}

/// The matcher over characters (or ASCII bytes).
fn matches_units<T: PartialEq + Copy>(p: &[T], n: &[T], any: T, one: T) -> bool {
    // Iterative matcher with one backtrack point (the last `*`): linear in practice,
    // O(len(p) * len(n)) at worst, no recursion.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == one || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == any {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == any {
        pi += 1;
    }
    pi == p.len()
}

/// Many names, indexed once so that many globs can be matched against them quickly: a glob
/// without wildcards is one hash lookup, a literal start followed by wildcards (`db::*`,
/// `db::*::get`) only looks at the names with that start (a range of the sorted names), and
/// only a glob that starts with a wildcard looks at every name. 10,000 globs against 10,000
/// names take milliseconds instead of 10^8 matches.
#[derive(Debug, Clone)]
pub struct NameIndex<'a> {
    /// Each name with its position in the input, sorted by name.
    sorted: Vec<(&'a str, usize)>,
    /// Each name's positions (a name may repeat).
    exact: std::collections::HashMap<&'a str, Vec<usize>>,
}

impl<'a> NameIndex<'a> {
    /// Indexes `names`; matches are reported by their position in it.
    pub fn new(names: impl IntoIterator<Item = &'a str>) -> NameIndex<'a> {
        let mut sorted: Vec<(&'a str, usize)> =
            names.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
        let mut exact: std::collections::HashMap<&'a str, Vec<usize>> =
            std::collections::HashMap::with_capacity(sorted.len());
        for &(n, i) in &sorted {
            exact.entry(n).or_default().push(i);
        }
        sorted.sort_unstable();
        NameIndex { sorted, exact }
    }

    /// Calls `f` with the position of every name `glob` matches (each once, in name order for
    /// a glob with wildcards); returns how many.
    pub fn for_each_match(&self, glob: &str, mut f: impl FnMut(usize)) -> usize {
        let Some(wild) = glob.find(['*', '?']) else {
            let hits = self.exact.get(glob).map_or(&[][..], Vec::as_slice);
            hits.iter().for_each(|&i| f(i));
            return hits.len();
        };
        let literal = &glob[..wild];
        let from = self.sorted.partition_point(|(n, _)| *n < literal);
        let with_start = self.sorted[from..]
            .iter()
            .take_while(|(n, _)| n.starts_with(literal));
        // `PREFIX*`: every name with that start matches.
        let everything = &glob[wild..] == "*";
        let mut count = 0;
        for &(n, i) in with_start {
            if everything || glob_matches(glob, n) {
                f(i);
                count += 1;
            }
        }
        count
    }
}

/// The first character of `pattern` that other glob syntaxes treat as special (`[`, `]`, `{`,
/// `}`, `!`, `\`) but this one matches literally, if any: a pattern that matches nothing
/// may have been written for another syntax, and a warning can say so.
pub fn foreign_syntax(pattern: &str) -> Option<char> {
    pattern
        .chars()
        .find(|c| matches!(c, '[' | ']' | '{' | '}' | '!' | '\\'))
}

#[cfg(test)]
mod tests {
    use super::{foreign_syntax, glob_matches as matches};

    #[test]
    fn characters_of_other_syntaxes_are_found() {
        assert_eq!(foreign_syntax("db::*"), None);
        assert_eq!(foreign_syntax("a?c"), None);
        assert_eq!(foreign_syntax("["), Some('['));
        assert_eq!(foreign_syntax("db::{get,put}"), Some('{'));
        // A bracket matches itself.
        assert!(matches("v[0]", "v[0]"));
    }

    #[test]
    fn the_index_finds_what_the_matcher_finds() {
        let names = [
            "db::query",
            "db::pool::get",
            "http::db::get",
            "a",
            "ab",
            "db::query",
            "é::x",
            "",
        ];
        let index = super::NameIndex::new(names);
        for glob in [
            "db::*",
            "db::query",
            "*::get",
            "*",
            "",
            "a?",
            "a*",
            "?",
            "db::*::get",
            "é::?",
            "é*",
            "nosuch",
            "db::quer?",
            "x*",
        ] {
            let mut got = Vec::new();
            let n = index.for_each_match(glob, |i| got.push(i));
            got.sort_unstable();
            let want: Vec<usize> = (0..names.len())
                .filter(|&i| matches(glob, names[i]))
                .collect();
            assert_eq!((n, got), (want.len(), want), "{glob}");
        }
    }

    #[test]
    fn globs() {
        assert!(matches("db::*", "db::query"));
        assert!(matches("db::*", "db::pool::get"));
        assert!(!matches("db::*", "http::db::get"));
        assert!(matches("*::get", "db::pool::get"));
        assert!(matches("*", ""));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
        assert!(matches("*a*b*", "xxaxxbxx"));
        assert!(!matches("*a*b", "xxaxxbxx"));
        // The heatmap's report excludes by such globs.
        assert!(matches("std::thread::park*", "std::thread::park_timeout"));
        assert!(matches("std::thread::park*", "std::thread::park"));
        assert!(!matches("std::thread::park*", "xstd::thread::park"));
        assert!(matches("cpu_?dle", "cpu_idle"));
        assert!(!matches("cpu_?dle", "cpu_iidle"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("a*b*c", "aXXbYY"));
    }
}
