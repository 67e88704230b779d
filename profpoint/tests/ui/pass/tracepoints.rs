//! Tracepoint declarations and call sites that must compile.

pub struct Task {
    pub id: u32,
}

profpoint::tracepoint!(
    /// Documented like a function.
    pub fn sched_switch(prev: &Task, next: &Task)
);
profpoint::tracepoint!(fn counted(n: u64, flag: bool) if n > 0 && flag);

mod sub {
    profpoint::tracepoint!(pub fn nested(x: u32));
}

fn main() {
    let h = register_trace_sched_switch(|p, n| {
        let _ = p.id + n.id;
    }).unwrap();
    trace_sched_switch(&Task { id: 1 }, &Task { id: 2 });
    h.unregister();
    trace_counted(1, true);
    let _ = trace_counted_enabled();
    profpoint::trace!(sub::nested(3));
    profpoint::trace!(counted(2 + 2, false));
    let h = sub::register_trace_nested(|x| assert!(x < 10)).unwrap();
    sub::trace_nested(4);
    h.forget();
}
