#[profpoint::profile_point]
struct Config {
    verbose: bool,
}

fn main() {}
