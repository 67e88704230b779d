//! Finite floats as serde_json writes them: the shortest digits that read back as the same
//! float (the closest such digits, and of two equally close the even one), laid out in plain
//! or scientific notation by the float's decimal exponent.
//!
//! The standard library's `{:e}` gives the shortest, closest digits, but breaks an exact tie
//! between two candidates differently from serde_json's writer (which, like ryu, takes the
//! one ending in an even digit): `2563072.25f32` has the 8-digit candidates `2563072.2` and
//! `2563072.3`, equally close. Ties need the float to be exactly a decimal one digit longer
//! ending in 5; [`shortest`] checks for that with `{:.N$e}` (exact digits) and picks the even
//! candidate.

use std::fmt::LowerExp;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// What [`write`] needs of `f32` and `f64`.
pub(crate) trait Float: Copy + PartialEq + LowerExp + FromStr {
    /// The decimal exponents written in plain notation (`0.00001`, `123000.0`); the others
    /// are written `1.5e-7`, `1e+300`. The float writer of the serde_json we compare with
    /// (zmij, in 1.0.154; versions that used ryu wrote `1e300`) has one range per type.
    const PLAIN: RangeInclusive<i32>;
    /// Significant digits of the longest exact decimal expansion (767 for `f64`, 112 for
    /// `f32`), rounded up.
    const EXACT_DIGITS: usize;

    fn is_finite(self) -> bool;
    fn is_sign_negative(self) -> bool;
    fn abs(self) -> Self;
    fn is_zero(self) -> bool;
}

impl Float for f64 {
    const PLAIN: RangeInclusive<i32> = -5..=15;
    const EXACT_DIGITS: usize = 780;

    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

impl Float for f32 {
    const PLAIN: RangeInclusive<i32> = -6..=12;
    const EXACT_DIGITS: usize = 120;

    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

/// Splits `{:e}` output (`d.ddde-x`) into its digits and its exponent.
fn split(exp_form: &str) -> (Vec<u8>, i32) {
    let (mantissa, exponent) = exp_form.split_once('e').expect("`{:e}` has an exponent");
    let digits = mantissa.bytes().filter(|&b| b != b'.').collect();
    (
        digits,
        exponent.parse().expect("`{:e}` has a numeric exponent"),
    )
}

/// The shortest round-trip digits of a positive finite `v` and its decimal exponent (the
/// value is `d.ddd × 10^exponent`), ties broken to the even digit.
fn shortest<F: Float>(v: F) -> (Vec<u8>, i32) {
    let (digits, exponent) = split(&format!("{v:e}"));
    let n = digits.len();
    // A tie needs the exact value to be n + 1 digits ending in 5: cheap test first (n + 2
    // correctly rounded digits ending in `50`), then the exact digits.
    let (finer, _) = split(&format!("{:.*e}", n + 1, v));
    if !finer.ends_with(b"50") {
        return (digits, exponent);
    }
    let (mut exact, exact_exponent) = split(&format!("{:.*e}", F::EXACT_DIGITS, v));
    while exact.last() == Some(&b'0') {
        exact.pop();
    }
    if exact.len() != n + 1 || exact.last() != Some(&b'5') {
        return (digits, exponent);
    }
    // The two candidates: the exact digits cut to n, and that plus one in the last place.
    let mut low = exact;
    low.pop();
    let (mut candidate, mut candidate_exponent) = (low.clone(), exact_exponent);
    if (low[n - 1] - b'0') % 2 == 1 {
        // Round the odd last digit up, carrying.
        let mut i = n;
        loop {
            if i == 0 {
                candidate.insert(0, b'1');
                candidate.pop();
                candidate_exponent += 1;
                break;
            }
            i -= 1;
            if candidate[i] == b'9' {
                candidate[i] = b'0';
            } else {
                candidate[i] += 1;
                break;
            }
        }
    }
    while candidate.len() > 1 && candidate.last() == Some(&b'0') {
        candidate.pop();
    }
    // Take it only when it reads back as `v` (at a power of two the interval below `v` is half
    // the one above, so an equally close candidate may belong to the next float down).
    let text = format!(
        "{}.{}e{candidate_exponent}",
        candidate[0] as char,
        std::str::from_utf8(&candidate[1..]).expect("ASCII digits")
    );
    match text.parse::<F>() {
        Ok(back) if back == v => (candidate, candidate_exponent),
        _ => (digits, exponent),
    }
}

/// Writes a finite `v` as serde_json does.
pub(crate) fn write<F: Float>(out: &mut String, v: F) {
    if v.is_sign_negative() {
        out.push('-');
    }
    let (digits, exponent) = if v.is_zero() {
        (vec![b'0'], 0)
    } else {
        shortest(v.abs())
    };
    let digits = std::str::from_utf8(&digits).expect("ASCII digits");
    let len = digits.len() as i32;
    if F::PLAIN.contains(&exponent) {
        if len - 1 <= exponent {
            // An integral value: the digits, zeros up to the point, and `.0`.
            out.push_str(digits);
            for _ in len - 1..exponent {
                out.push('0');
            }
            out.push_str(".0");
        } else if exponent >= 0 {
            // The point falls among the digits.
            let point = exponent as usize + 1;
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        } else {
            // A small value: zeros after the point, then the digits.
            out.push_str("0.");
            for _ in exponent + 1..0 {
                out.push('0');
            }
            out.push_str(digits);
        }
    } else {
        // Scientific: `1e-7`, `1.5e+300`.
        out.push_str(&digits[..1]);
        if len > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(if exponent < 0 { "e-" } else { "e+" });
        out.push_str(&exponent.unsigned_abs().to_string());
    }
}
