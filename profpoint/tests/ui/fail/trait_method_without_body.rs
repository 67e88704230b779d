trait Store {
    #[profpoint::profile_point]
    fn get(&self) -> u32;
}

fn main() {}
