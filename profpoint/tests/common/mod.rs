//! Helpers shared by several test files (each includes this with `mod common;`).

#![allow(dead_code)]

pub mod pb;
