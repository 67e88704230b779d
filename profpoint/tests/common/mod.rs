//! Helpers shared by several test files (each includes this with `mod common;`).

#![allow(dead_code, unreachable_pub)]

pub mod pb;
pub mod runner;
