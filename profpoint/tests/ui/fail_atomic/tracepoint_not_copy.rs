profpoint::tracepoint!(pub fn log_line(line: String));

fn main() {
    trace_log_line(String::new());
}
