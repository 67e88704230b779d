//! Examples of profpoint live beside this file: see `wordcount.rs`.
