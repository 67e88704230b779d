//! Probes that panic: the program's panic hook prints the first few in full, then one line
//! each, and reports count them per tracepoint. A probe's panic never reaches the traced
//! code (the site's thunk catches it; see `Tracepoint::__fire`).

use super::*;

/// Panics of probes (and conditions) so far, by tracepoint name.
static PANICS: Mutex<Vec<(&'static str, u64)>> = Mutex::new(Vec::new());

/// How many probe panics are printed in full (message and, with `RUST_BACKTRACE`, backtrace)
/// by the program's panic hook; later ones are one line each.
const FULL_PANICS: u64 = 3;

/// Probe panics so far, every tracepoint (read by the panic filter).
static PANICS_ALL: AtomicU64 = AtomicU64::new(0);

/// Reports a probe (or a tracepoint condition) that panicked: the first few are printed in full
/// by the panic hook, with one line of ours the first time; after them, one line per panic
/// (the hook's message and backtrace are left out, see [`filter_probe_panics`]); reports
/// count them per tracepoint.
#[doc(hidden)]
#[cold]
pub fn probe_panicked(name: &'static str) {
    let mut seen = PANICS.lock().unwrap_or_else(|e| e.into_inner());
    let n = match seen.iter_mut().find(|(t, _)| *t == name) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            seen.push((name, 1));
            1
        }
    };
    drop(seen);
    // Relaxed: read by the filter, which only compares it with a constant.
    let all = PANICS_ALL.load(Ordering::Relaxed);
    if n == 1 {
        crate::diag::warn_line!(
            "profpoint: a probe of tracepoint {name} panicked; the program goes on"
        );
    } else if all > FULL_PANICS {
        crate::diag::warn_line!(
            "profpoint: a probe of tracepoint {name} panicked again ({n} times so far; the \
             first {FULL_PANICS} panics of probes were printed in full)"
        );
    }
}

/// Panics of the probes of tracepoint `name` so far.
pub(super) fn panics_of(name: &str) -> u64 {
    let seen = PANICS.lock().unwrap_or_else(|e| e.into_inner());
    seen.iter().find(|(t, _)| *t == name).map_or(0, |&(_, n)| n)
}

/// Wraps the program's panic hook, once, when the first probe is registered: a panic inside a
/// probe (a tracepoint read section on this thread) after the first [`FULL_PANICS`] skips the
/// hook (its message, and its backtrace under `RUST_BACKTRACE`: 46 lines each, 400 panicking
/// calls printed 18,400 lines); [`probe_panicked`] prints one line instead. Every other panic
/// goes to the program's hook as before; a hook the program sets later replaces this one.
pub(super) fn filter_probe_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // `set_hook` panics on a panicking thread; a probe registered during unwinding keeps the
    // program's hook as it is.
    if std::thread::panicking() {
        return;
    }
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if rcu::in_read_section() {
                // Relaxed: a tally.
                let n = PANICS_ALL.fetch_add(1, Ordering::Relaxed) + 1;
                if n > FULL_PANICS {
                    return;
                }
            }
            previous(info)
        }));
    });
}
