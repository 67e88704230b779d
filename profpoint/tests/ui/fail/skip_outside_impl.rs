#[profpoint::profile_point(skip)]
fn alone() {}

struct S;

#[profpoint::profile_point(name = "S")]
impl S {
    fn a(&self) {}
}

#[profpoint::profile_point(skip)]
impl S {
    fn b(&self) {}
}

fn main() {}
