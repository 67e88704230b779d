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
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matcher with one backtrack point (the last `*`): linear in practice,
    // O(len(p) * len(n)) at worst, no recursion.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
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
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
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
