#[profpoint::profile_point(name = "db::\nquery")]
fn work() {}

#[profpoint::profile_point(name = "db::\tscan")]
fn scan() {}

#[profpoint::profile_point(name = "red \x1b[31m")]
fn red() {}

fn main() {
    work();
    scan();
    red();
}
