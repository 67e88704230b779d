//! Helpers shared by several test files (each includes this with `mod common;`).

#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod pb;
pub use profpoint_test_support::runner;
