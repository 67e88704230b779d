//! The Prometheus exposition checked by `promtool check metrics` (snapshot, exit report,
//! sampled self series, the live server), and its counters never going down across a reset
//! and a budget change, as Prometheus' rate() needs.

use super::*;

/// `promtool check metrics` on `text`: must exit 0 and print nothing (no lint problem).
fn promtool_accepts(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "promtool check metrics: {said}\n{text}");
    assert!(said.trim().is_empty(), "promtool check metrics: {said}");
}

#[test]
fn promtool_accepts_the_exposition() {
    if tool("promtool_accepts_the_exposition", "promtool", "prometheus").is_none() {
        return;
    }
    work();
    promtool_accepts(&profpoint::snapshot().to_prometheus());
}

#[test]
fn promtool_accepts_the_exit_reports_exposition() {
    let test = "promtool_accepts_the_exit_reports_exposition";
    if tool(test, "promtool", "prometheus").is_none() {
        return;
    }
    let dir = scratch("exit-prom");
    let prom = dir.join("exit.prom");
    child_reports(&format!("prom:{}", prom.display()));
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(text.contains("consumers::outer"), "{text}");
    promtool_accepts(&text);
    std::fs::remove_dir_all(&dir).ok();
}

/// The sampler's self time per point, as a counter: there when a point has the figure (a
/// report of the heatmap's stacks), absent otherwise, and accepted by promtool either way.
#[test]
fn promtool_accepts_the_sampled_self_series() {
    let test = "promtool_accepts_the_sampled_self_series";
    if tool(test, "promtool", "prometheus").is_none() {
        return;
    }
    work();
    let mut r = profpoint::snapshot();
    let name = "profpoint_sampled_self_samples_total";
    assert!(!r.to_prometheus().contains(name), "no stacks, no series");
    let p = r
        .points
        .iter_mut()
        .find(|p| p.name == "consumers::outer")
        .expect("outer");
    p.sampled_self = Some(12);
    let text = r.to_prometheus();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{name}{{point=\"consumers::outer\"")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with(" 12"), "{line}");
    promtool_accepts(&text);
}

#[profpoint::profile_point]
#[inline(never)]
fn tick(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).wrapping_add(1))
}

/// Calls `tick` `n` times: hot enough for a small budget to sample, count or burst it.
fn hot(n: u64) {
    let mut x = 0;
    for _ in 0..n {
        x = tick(x);
    }
    std::hint::black_box(x);
}

/// The counter series of an exposition (`# TYPE` counter, and a summary's `_sum` and `_count`),
/// series (name and labels) to value.
fn counters(text: &str) -> BTreeMap<String, f64> {
    let mut kinds = BTreeMap::new();
    let mut out = BTreeMap::new();
    for l in text.lines() {
        if let Some(t) = l.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').unwrap();
            kinds.insert(name.to_string(), kind.to_string());
            continue;
        }
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        let (series, v) = l.rsplit_once(' ').unwrap();
        let name = &series[..series.find('{').unwrap_or(series.len())];
        let counter = match kinds.get(name).map(String::as_str) {
            Some("counter") => true,
            _ => ["_sum", "_count"].iter().any(|s| {
                name.strip_suffix(s)
                    .is_some_and(|base| kinds.get(base).map(String::as_str) == Some("summary"))
            }),
        };
        if counter {
            out.insert(series.to_string(), v.parse().unwrap());
        }
    }
    out
}

/// Every counter series of `before` that is in `after` has not gone down.
fn none_went_down(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, step: &str) {
    for (s, b) in before {
        if let Some(a) = after.get(s) {
            assert!(a >= b, "{step}: {s} went down from {b} to {a}");
        }
    }
}

/// Called by the counters test only (its count is exact even when every test shares a process).
#[profpoint::profile_point]
fn reset_probe() {
    std::hint::black_box(());
}

#[test]
fn counters_never_go_down_across_a_reset_and_a_budget_change() {
    let scrape = || counters(&profpoint::snapshot().to_prometheus());
    let probe_calls = |c: &BTreeMap<String, f64>| {
        c.iter()
            .find(|(s, _)| {
                s.starts_with("profpoint_calls_total{")
                    && s.contains("\"consumers::prometheus::reset_probe\"")
            })
            .map(|(_, v)| *v)
            .expect("reset_probe's calls")
    };
    work();
    for _ in 0..3 {
        reset_probe();
    }
    let mut scrapes = vec![("exact", scrape())];
    // A budget far too small for `tick`: the controller samples, counts or bursts it, and its
    // totals become estimates, which later rounds may revise down. Scraped until 10 scrapes
    // showed them estimated (at most 200 rounds: how soon the controller acts is the machine's
    // business, so it is reported, not asserted), then under a large budget, where `tick`
    // cools down and is timed fully again.
    profpoint::set_budget(Some(0.05));
    let mut estimated = 0;
    let mut rounds = 0;
    while estimated < 10 && rounds < 200 {
        hot(200_000);
        let r = profpoint::snapshot();
        let tick = r
            .points
            .iter()
            .find(|p| p.name == "consumers::prometheus::tick");
        estimated += usize::from(tick.is_some_and(|p| p.estimated));
        scrapes.push(("under a 0.05% budget", counters(&r.to_prometheus())));
        rounds += 1;
    }
    println!("tick's figures were estimated in {estimated} of {rounds} scrapes under 0.05%");
    profpoint::set_budget(Some(50.0));
    for _ in 0..10 {
        hot(200_000);
        scrapes.push(("after the budget went to 50%", scrape()));
    }
    assert_eq!(probe_calls(&scrapes.last().unwrap().1), 3.0);
    // reset() makes now the reports' zero; the counters go on from where they were.
    profpoint::reset();
    scrapes.push(("just after reset()", scrape()));
    work();
    reset_probe();
    hot(100_000);
    let after = scrape();
    assert_eq!(
        probe_calls(&after),
        4.0,
        "the call after reset() adds to the 3 before it"
    );
    scrapes.push(("after reset() and more calls", after));
    for w in scrapes.windows(2) {
        none_went_down(&w[0].1, &w[1].1, w[1].0);
    }
}

/// `GET /metrics` from a server of this process (feature `serve`): the body.
#[cfg(feature = "serve")]
fn scrape_metrics(addr: std::net::SocketAddr) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    body.to_string()
}

#[cfg(feature = "serve")]
#[test]
fn promtool_accepts_the_servers_metrics_and_its_counters_never_go_down() {
    let test = "promtool_accepts_the_servers_metrics_and_its_counters_never_go_down";
    if tool(test, "promtool", "prometheus").is_none() {
        return;
    }
    let addr = profpoint::serve("127.0.0.1:0").unwrap().local_addr();
    work();
    work();
    let first = scrape_metrics(addr);
    promtool_accepts(&first);
    assert!(first.contains("consumers::outer"), "{first}");
    profpoint::reset();
    work();
    let second = scrape_metrics(addr);
    promtool_accepts(&second);
    none_went_down(
        &counters(&first),
        &counters(&second),
        "a scrape after reset()",
    );
}
