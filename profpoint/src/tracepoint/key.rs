//! The key a tracepoint site tests.
//!
//! # Backends (chosen at build time; the whole program uses one)
//! - **Static keys** (x86_64 Linux, the default there): the site is a 5-byte nop that
//!   `patch.rs` rewrites into a `jmp` to the site's out-of-line block; a disabled site
//!   costs that one instruction. The `AtomicBool` below still holds the state, for
//!   `trace_*_enabled()`, `trace!` and reports.
//! - **Atomic** (other targets, or the `tracepoint-atomic` feature, e.g. where W^X forbids
//!   patching): the site loads the `AtomicBool` and branches. Same semantics, same tests.

// std's atomic, or loom's in the model-checking build (`crate::sync`; the key's model is in
// `tracepoint/mod.rs`, where the enable/disable decision is made).
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::const_fn_unless_loom;

/// Whether this build patches code (static keys) rather than testing a flag at each site.
pub const STATIC_KEYS: bool = cfg!(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "tracepoint-atomic")
));

/// A tracepoint's on/off switch.
#[derive(Debug)]
pub struct Key {
    on: AtomicBool,
}

/// Why a key could not be switched on (only the static-key backend can fail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(String);

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(feature = "tracepoint-atomic")
))]
impl From<super::patch::PatchError> for KeyError {
    fn from(e: super::patch::PatchError) -> KeyError {
        KeyError(e.0)
    }
}

impl Key {
    const_fn_unless_loom! {
        /// A key that starts off.
        pub fn new() -> Key {
            Key {
                on: AtomicBool::new(false),
            }
        }
    }

    /// Whether the key is on.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        // Relaxed: a site racing with a switch may go either way; the probe list it then
        // reads is protected by RCU, not by this flag.
        self.on.load(Ordering::Relaxed)
    }

    /// Switches the key of the tracepoint at address `owner` (the static its sites name).
    /// Callers serialise switches under the tracepoint writers' lock. On error the key is
    /// left as the sites are: off when switching on failed (its sites back to the nop), on
    /// when switching off failed (a site still calls the hook); the program keeps running.
    pub fn set(&self, owner: usize, on: bool) -> Result<(), KeyError> {
        #[cfg(all(
            target_arch = "x86_64",
            target_os = "linux",
            not(feature = "tracepoint-atomic")
        ))]
        {
            if on {
                if cfg!(target_feature = "avx") && !std::arch::is_x86_feature_detected!("xsave") {
                    return Err(KeyError(
                        "static-key tracepoints need XSAVE, which this CPU or kernel does not \
                         offer: build profpoint with the `tracepoint-atomic` feature"
                            .into(),
                    ));
                }
                // Relaxed: see `is_enabled`.
                self.on.store(true, Ordering::Relaxed);
                if let Err(e) = super::patch::set(owner, true) {
                    // Sites already patched go back to the nop. If that fails too, some sites
                    // still jump to the hook: the key says so (stays on) and the error both.
                    return match super::patch::set(owner, false) {
                        Ok(()) => {
                            self.on.store(false, Ordering::Relaxed);
                            Err(e.into())
                        }
                        Err(back) => Err(KeyError(format!(
                            "{e}; switching its patched sites back off failed too ({back}): \
                             they still call the hook, which finds no probe"
                        ))),
                    };
                }
            } else {
                // The key goes off only once every site is the nop again: a site that could
                // not be switched off still calls the hook, and the key (reports,
                // `trace_*_enabled`) says so.
                super::patch::set(owner, false)?;
                self.on.store(false, Ordering::Relaxed);
            }
            Ok(())
        }
        #[cfg(not(all(
            target_arch = "x86_64",
            target_os = "linux",
            not(feature = "tracepoint-atomic")
        )))]
        {
            let _ = owner;
            // Relaxed: see `is_enabled`.
            self.on.store(on, Ordering::Relaxed);
            Ok(())
        }
    }
}

impl Default for Key {
    fn default() -> Self {
        Key::new()
    }
}
