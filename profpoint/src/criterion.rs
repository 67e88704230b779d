//! A criterion profiler hook (feature `criterion`): each benchmark run under
//! `cargo bench -- --profile-time N` gets its own points report, and, if asked, its heatmap.
//!
//! ```ignore
//! use criterion::{criterion_group, criterion_main, Criterion};
//! fn config() -> Criterion {
//!     Criterion::default().with_profiler(profpoint::criterion::Profiler::new())
//! }
//! criterion_group! { name = benches; config = config(); targets = my_bench }
//! criterion_main!(benches);
//! ```
//!
//! At the start of a benchmark's profiling run the points are reset (so the report holds that
//! benchmark only) and the heatmap sampler starts if configured; at the end, criterion's
//! profile directory for the benchmark (`target/criterion/<id>/profile/`) receives
//! `profpoint.json` and `profpoint.txt` (the table) and, with the heatmap, `heatmap.dump`.

use crate::{CollectReport, Report, ReportOptions};
use std::path::Path;

/// The hook; see the module docs.
#[derive(Debug, Default)]
pub struct Profiler {
    #[cfg(feature = "heatmap")]
    heatmap: Option<heatmap::Config>,
    #[cfg(feature = "heatmap")]
    sampler: Option<heatmap::Sampler>,
}

impl Profiler {
    /// Points only.
    pub fn new() -> Profiler {
        Profiler::default()
    }

    /// Points and the heatmap sampler, started for each profiled benchmark.
    #[cfg(feature = "heatmap")]
    pub fn with_heatmap(config: heatmap::Config) -> Profiler {
        Profiler {
            heatmap: Some(config),
            sampler: None,
        }
    }
}

impl criterion::profiler::Profiler for Profiler {
    fn start_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
        crate::reset();
        crate::overhead::measure();
        #[cfg(feature = "heatmap")]
        if let Some(config) = &self.heatmap {
            match heatmap::start(config.clone()) {
                Ok(s) => self.sampler = Some(s),
                Err(e) => crate::diag::warn_line!("profpoint: heatmap for {benchmark_id}: {e}"),
            }
        }
        let _ = benchmark_id;
    }

    fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        let report = Report::collect(&ReportOptions::default());
        let write = |name: &str, bytes: &[u8]| {
            let path = benchmark_dir.join(name);
            // As every report file is written: replaced whole through a temporary file of an
            // unpredictable name, no symbolic link followed, a FIFO refused.
            if let Err(e) = std::fs::create_dir_all(benchmark_dir).and_then(|()| {
                crate::runtime::deliver::write_file(&path, &mut |f| f.write_all(bytes))
            }) {
                crate::diag::warn_line!(
                    "profpoint: {benchmark_id}: cannot write {}: {e}",
                    path.display()
                );
            }
        };
        write("profpoint.json", report.to_json().as_bytes());
        write("profpoint.txt", report.to_table().as_bytes());
        #[cfg(feature = "heatmap")]
        if let Some(s) = self.sampler.take() {
            let mut dump = Vec::new();
            if s.stop().write_dump(&mut dump).is_ok() {
                write("heatmap.dump", &dump);
            }
        }
    }
}
