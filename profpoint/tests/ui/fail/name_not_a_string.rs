#[profpoint::profile_point(name = 42)]
fn work() {}

fn main() {
    work();
}
