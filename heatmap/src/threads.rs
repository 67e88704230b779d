//! The sampler core's view of the process's threads, shared by the heatmap's watcher
//! (`sampler/watcher.rs`) and the windows' (`pmu/live/watcher.rs`): the threads alive now, and
//! whether a thread that could not be given its event had simply exited.

/// The ids of the process's threads now (`/proc/self/task`), sorted, without `except` (the
/// watcher's own thread; pass 0 to keep all).
pub(crate) fn alive(except: libc::pid_t) -> std::io::Result<Vec<libc::pid_t>> {
    let mut tids: Vec<libc::pid_t> = std::fs::read_dir("/proc/self/task")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&tid| tid != except)
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Whether opening `tid`'s event failed (`e`) because the thread exited between the listing
/// and the open (`ESRCH`, or its `/proc` entry is gone): nothing was lost then.
pub(crate) fn exited(tid: libc::pid_t, e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
        || !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}
