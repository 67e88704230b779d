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

// === one watcher for both samplers ===
//
// The heatmap's watcher thread lists the threads at its own pace (every scan interval, every
// millisecond while threads come and go); the windows need the same list every 20 ms. So that
// one thread lists `/proc/self/task` whichever samplers run, the windows *follow* the scans
// instead of running their own: while the heatmap's watcher runs it *hosts* them, calling every
// follower with each list it takes; otherwise a small thread of this module (`pmu-watcher`)
// lists the threads every 20 ms for them, and leaves as soon as a host comes or the last
// follower goes.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// What a follower does with each list of the threads alive (sorted, every thread included).
pub(crate) type Follow = Box<dyn FnMut(&[libc::pid_t]) + Send>;

/// The followers and who scans for them.
struct Followers {
    next: u64,
    list: Vec<(u64, Follow)>,
    /// The heatmap's watcher runs and calls the followers at its scans.
    hosted: bool,
    /// The process whose guest thread runs, if one does (a forked child has none).
    guest: Option<u32>,
}

static FOLLOWERS: Mutex<Followers> = Mutex::new(Followers {
    next: 0,
    list: Vec::new(),
    hosted: false,
    guest: None,
});

/// How often the guest thread lists the threads.
const GUEST_SCAN: Duration = Duration::from_millis(20);

fn followers() -> MutexGuard<'static, Followers> {
    // A panic in a follower leaves the list consistent (entries are whole).
    FOLLOWERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the guest thread if followers need one and none runs.
fn ensure_guest(f: &mut Followers) -> std::io::Result<()> {
    if f.hosted || f.list.is_empty() || f.guest == Some(std::process::id()) {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("pmu-watcher".into())
        .spawn(guest)?;
    f.guest = Some(std::process::id());
    Ok(())
}

/// The guest thread: lists the threads every 20 ms for the followers until a host comes or
/// none is left.
fn guest() {
    loop {
        std::thread::sleep(GUEST_SCAN);
        let mut f = followers();
        if f.hosted || f.list.is_empty() {
            f.guest = None;
            return;
        }
        call(&mut f);
    }
}

/// Calls every follower with the threads alive now (none if they cannot be listed).
fn call(f: &mut Followers) {
    if let Ok(all) = alive(0) {
        for (_, follow) in &mut f.list {
            follow(&all);
        }
    }
}

/// Adds a follower, first called at the next scan; returns its id for [`unfollow`].
pub(crate) fn follow(follow: Follow) -> std::io::Result<u64> {
    let mut f = followers();
    let id = f.next;
    f.next += 1;
    f.list.push((id, follow));
    if let Err(e) = ensure_guest(&mut f) {
        f.list.retain(|(i, _)| *i != id);
        return Err(e);
    }
    Ok(id)
}

/// Removes a follower: when it returns, the follower is not running and is never called
/// again. In a forked child (`forked`), whose copy of the lock may have been held at the fork by
/// a thread that was not copied, it gives up rather than wait.
pub(crate) fn unfollow(id: u64, forked: bool) {
    let f = if forked {
        FOLLOWERS.try_lock().ok()
    } else {
        Some(followers())
    };
    if let Some(mut f) = f {
        f.list.retain(|(i, _)| *i != id);
    }
}

/// The heatmap's watcher begins (`true`) or ends (`false`) hosting the followers' scans.
pub(crate) fn host(hosting: bool) {
    let mut f = followers();
    f.hosted = hosting;
    if !hosting {
        // The followers go on: a guest thread takes over (if it cannot start, they wait
        // for the next host; the windows' report then says threads went unsampled).
        let _ = ensure_guest(&mut f);
    }
}

/// The host's scan: calls every follower with `all`, the threads alive now.
pub(crate) fn hosted_scan(all: &[libc::pid_t]) {
    let mut f = followers();
    for (_, follow) in &mut f.list {
        follow(all);
    }
}
