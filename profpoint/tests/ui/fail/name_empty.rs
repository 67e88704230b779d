#[profpoint::profile_point(name = "")]
fn work() {}

fn main() {
    work();
}
