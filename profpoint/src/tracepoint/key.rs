//! The key a tracepoint site tests.
//!
//! # Backends
//! This build uses the portable backend: an `AtomicBool` read relaxed at the site (a load, a
//! test and a predictable branch). The static-key backend (a patched 5-byte nop on x86_64, so
//! a disabled site costs one instruction) is issue 3's next step; it will live here behind the
//! same [`Key`] interface, selected at build time, with this backend kept as the fallback for
//! other architectures and for systems that forbid code patching.

use std::sync::atomic::{AtomicBool, Ordering};

/// A tracepoint's on/off switch.
#[derive(Debug)]
pub struct Key {
    on: AtomicBool,
}

/// Why a key could not be switched (the static-key backend can fail; this one cannot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(pub String);

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

impl Key {
    /// A key that starts off.
    pub const fn new() -> Key {
        Key {
            on: AtomicBool::new(false),
        }
    }

    /// Whether the key is on (the site's test).
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        // Relaxed: a site racing with a switch may go either way; the probe list it then
        // reads is protected by RCU, not by this flag.
        self.on.load(Ordering::Relaxed)
    }

    /// Switches the key (callers serialise switches under the tracepoint writers' lock).
    pub fn set(&self, on: bool) -> Result<(), KeyError> {
        // Relaxed: see `is_enabled`.
        self.on.store(on, Ordering::Relaxed);
        Ok(())
    }
}

impl Default for Key {
    fn default() -> Self {
        Key::new()
    }
}
