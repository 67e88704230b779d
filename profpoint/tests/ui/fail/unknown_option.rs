#[profpoint::profile_point(nmae = "typo", level = 3)]
fn work() {}

fn main() {
    work();
}
