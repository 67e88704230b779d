fn main() {
    let name = String::from("dynamic");
    let _g = profpoint::profile_scope!(name.as_str());
}
