use super::file::{NAME_MAX, random_u64, temp_name};
use super::*;
use std::path::Path;

#[test]
fn file_paths_name_the_process_when_asked_or_when_forked() {
    let p = Path::new("/tmp/run.json");
    assert_eq!(pid_path(p, 42, false), Path::new("/tmp/run.json"));
    assert_eq!(pid_path(p, 42, true), Path::new("/tmp/run.json.42"));
    let templ = Path::new("/tmp/run-{pid}.json");
    assert_eq!(pid_path(templ, 42, false), Path::new("/tmp/run-42.json"));
    assert_eq!(pid_path(templ, 43, true), Path::new("/tmp/run-43.json"));
    let two = Path::new("/tmp/{pid}/r-{pid}.json");
    assert_eq!(pid_path(two, 7, true), Path::new("/tmp/7/r-7.json"));
    let seq = Path::new("/tmp/run-{seq}.json");
    assert_eq!(
        destination_for(&Destination::Json(seq.into()), 12),
        Destination::Json("/tmp/run-12.json".into())
    );
    #[cfg(unix)]
    not_utf8_keeps_its_bytes();
}

#[cfg(unix)]
fn not_utf8_keeps_its_bytes() {
    // A path that is not UTF-8 keeps its bytes.
    use std::os::unix::ffi::OsStrExt;
    let raw = std::ffi::OsStr::from_bytes(b"/tmp/\xff-{pid}");
    let got = pid_path(Path::new(raw), 9, false);
    assert_eq!(got.as_os_str().as_bytes(), b"/tmp/\xff-9");
}

#[test]
fn temporary_names_stay_within_name_max_and_differ() {
    let long = "r".repeat(250);
    let t = temp_name(std::ffi::OsStr::new(&long), 7);
    assert_eq!(t.len(), NAME_MAX);
    assert!(t.to_str().unwrap().ends_with(".0000000000000007.tmp"));
    // A character is never cut in two.
    let wide = "é".repeat(125);
    let t = temp_name(std::ffi::OsStr::new(&wide), 7);
    assert!(t.len() <= NAME_MAX && t.to_str().is_some());
    assert_eq!(
        temp_name(std::ffi::OsStr::new("r.json"), 255),
        ".r.json.00000000000000ff.tmp"
    );
    assert_ne!(random_u64(), random_u64());
}

#[test]
fn a_later_copy_names_its_files_after_its_object() {
    let p = Path::new("/tmp/run.json");
    assert_eq!(exit_path(p, None, 42, false), Path::new("/tmp/run.json"));
    assert_eq!(
        exit_path(p, Some("libplugin.so"), 42, false),
        Path::new("/tmp/run.json.libplugin.so")
    );
    assert_eq!(
        exit_path(p, Some("libplugin.so"), 42, true),
        Path::new("/tmp/run.json.libplugin.so.42")
    );
    let templ = Path::new("/tmp/run-{pid}.json");
    assert_eq!(
        exit_path(templ, Some("libplugin.so"), 7, false),
        Path::new("/tmp/run-7.json.libplugin.so")
    );
}
