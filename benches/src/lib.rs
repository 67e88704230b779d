//! Benchmarks of profpoint live in `benches/`; shared helpers here.
