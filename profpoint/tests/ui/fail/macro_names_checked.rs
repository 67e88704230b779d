profpoint::define_profile_point!(BAD, "line\nbreak");

fn main() {
    let _g = profpoint::profile_scope!("");
}
