profpoint::tracepoint!(pub struct NotAFunction);

profpoint::tracepoint!(fn pattern((a, b): (u32, u32)));

fn main() {}
