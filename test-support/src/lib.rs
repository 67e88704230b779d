//! Workloads (and the runner that starts test binaries, `runner`) shared by the tests, benches
//! and examples of several crates of the workspace, so that each of them runs the same code (and a change to it reaches all of them) without
//! `#[path = "../../..."]` includes. Not published; a dev-dependency only.
//!
//! Each workload function is `#[inline(never)]`: the samplers' reports find it by the end of
//! its name (`::fault_pages`, `::spin`), whichever crate calls it.

pub mod cpu;
#[cfg(target_os = "linux")]
pub mod faults;
pub mod rng;
pub mod runner;
#[cfg(target_os = "linux")]
pub mod seed;
pub mod task;
#[cfg(target_os = "linux")]
pub mod workload;
