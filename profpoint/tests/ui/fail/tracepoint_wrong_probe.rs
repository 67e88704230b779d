pub struct Task {
    pub id: u32,
}

profpoint::tracepoint!(pub fn sched_switch(prev: &Task, next: &Task));

fn main() {
    // A probe with the wrong argument types is rejected at compile time.
    let _h = register_trace_sched_switch(|prev: &Task, next: u32| {
        let _ = (prev.id, next);
    });
}
