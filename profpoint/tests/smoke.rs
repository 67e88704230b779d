use std::time::Duration;

#[profpoint::profile_point]
fn sleepy() {
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn smoke() {
    sleepy();
    let r = profpoint::snapshot();
    println!("{}", r.to_table());
    let p = r
        .points
        .iter()
        .find(|p| p.name == "smoke::sleepy")
        .expect("point");
    assert_eq!(p.nr, 1);
    assert!(
        p.total_ns >= 20_000_000 && p.total_ns < 200_000_000,
        "{}",
        p.total_ns
    );
}
