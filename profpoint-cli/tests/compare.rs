//! `profpoint compare` on synthetic reports drawn from known distributions: what it flags,
//! how often it flags what did not change, and what outliers do to it. Accuracy checks of the
//! statistics on made-up data, not timings.

mod common;

use common::{flags_any, profpoint, report, seed, verdict, write};
use statrs::distribution::{Binomial, DiscreteCDF};

/// A real 2x slowdown of one point (median 22 -> 44 us) in a run with preemptions (one call
/// in 200 takes 4 to 8 ms more, as on a loaded 2-core machine): flagged, exit 1 under
/// --fail-on-regression; the points that did not change are not.
#[test]
fn a_2x_slowdown_of_one_point_is_flagged() {
    for case in 0..10 {
        let mut rng = seed(1, case);
        let mut run = |median_us: f64| {
            let mut c = rng.calls(5_000, median_us * 1000.0, 0.15);
            for i in (0..c.len()).step_by(200) {
                c[i] += 4_000_000 + rng.below(4_000_000) as u64;
            }
            c
        };
        let base = report(
            "bench",
            &[
                ("work::step", run(22.0)),
                ("work::parse", run(3.0)),
                ("work::flush", run(50.0)),
            ],
        );
        let new = report(
            "bench",
            &[
                ("work::step", run(44.0)),
                ("work::parse", run(3.0)),
                ("work::flush", run(50.0)),
            ],
        );
        let (a, b) = (
            write(&format!("x2-base-{case}.json"), &base),
            write(&format!("x2-new-{case}.json"), &new),
        );
        let (code, out, err) = profpoint(&["compare", &a, &b, "--fail-on-regression"]);
        assert_eq!(code, 1, "case {case}: {out}{err}");
        assert_eq!(verdict(&out, "work::step"), "SLOWER", "case {case}: {out}");
        let row = out.lines().find(|l| l.starts_with("work::step")).unwrap();
        let change: f64 = row
            .split_whitespace()
            .nth(3)
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!((85.0..115.0).contains(&change), "case {case}: {row}");
        for same in ["work::parse", "work::flush"] {
            assert!(verdict(&out, same).starts_with('~'), "case {case}: {out}");
        }
        assert!(err.contains("1 point(s) significantly slower"), "{err}");
    }
    common::clean();
}

/// The smallest k with P(X <= k) >= q for X ~ Binomial(n, p).
fn binomial_quantile(n: u64, p: f64, q: f64) -> u64 {
    let b = Binomial::new(p, n).unwrap();
    (0..=n).find(|&k| b.cdf(k) >= q).unwrap()
}

/// 200 comparisons of reports whose three points are drawn from the same distributions
/// (different seeds), with no minimum effect (--threshold 0) so the test alone decides, at
/// --alpha 0.05. Holm's adjustment bounds the chance that a comparison flags any of its points
/// by alpha, so the number of comparisons with a flag is at most Binomial(200, 0.05): the
/// test asserts it stays within that distribution's 99.9% quantile (20 or so). It must also
/// reach its 0.1% quantile (3 or so): a test that never flags would pass the first bound by
/// being blind.
#[test]
fn same_distributions_are_flagged_at_most_alpha_of_the_time() {
    let (n, alpha) = (200u64, 0.05);
    let mut flagged = 0;
    for case in 0..n {
        let mut rng = seed(2, case);
        // 400 calls a point: under the 1,000 a run counts, so the rank test's error rate is
        // its nominal one.
        let run = |rng: &mut common::Rng| {
            report(
                "bench",
                &[
                    ("a", rng.calls(400, 20_000.0, 0.3)),
                    ("b", rng.calls(400, 700.0, 0.05)),
                    ("c", rng.calls(400, 1_000_000.0, 1.0)),
                ],
            )
        };
        let base = write(&format!("fa-base-{case}.json"), &run(&mut rng));
        let new = write(&format!("fa-new-{case}.json"), &run(&mut rng));
        let (code, out, err) = profpoint(&[
            "compare",
            &base,
            &new,
            "--alpha",
            "0.05",
            "--threshold",
            "0",
        ]);
        assert_eq!(code, 0, "{err}");
        if flags_any(&out) {
            flagged += 1;
        }
    }
    let (low, high) = (
        binomial_quantile(n, alpha, 0.001),
        binomial_quantile(n, alpha, 0.999),
    );
    println!(
        "{flagged} of {n} comparisons flagged a point (expected at most {alpha} x {n}; bounds {low}..={high})"
    );
    assert!(flagged <= high, "{flagged} of {n} flagged, bound {high}");
    assert!(
        flagged >= low,
        "{flagged} of {n} flagged: the test is blind (bound {low})"
    );
    common::clean();
}

/// A 10% slowdown of a point with 20% spread, 10,000 calls a run: flagged in every one of 50
/// cases, with the default alpha and threshold.
#[test]
fn a_10_percent_slowdown_with_enough_calls_is_always_flagged() {
    for case in 0..50 {
        let mut rng = seed(3, case);
        let base = report("bench", &[("kernel", rng.calls(10_000, 20_000.0, 0.2))]);
        let new = report("bench", &[("kernel", rng.calls(10_000, 22_000.0, 0.2))]);
        let (a, b) = (
            write(&format!("p10-base-{case}.json"), &base),
            write(&format!("p10-new-{case}.json"), &new),
        );
        let (_, out, _) = profpoint(&["compare", &a, &b]);
        assert_eq!(verdict(&out, "kernel"), "SLOWER", "case {case}: {out}");
    }
    common::clean();
}

/// One 8 ms call among 10,000 of 20 us (a preemption) moves the mean by 4% but is one rank
/// among 20,000: with it in either run, every verdict is the one without it.
#[test]
fn one_heavy_outlier_does_not_flip_a_verdict() {
    for case in 0..10 {
        let mut rng = seed(4, case);
        let base = rng.calls(10_000, 20_000.0, 0.1);
        let same = rng.calls(10_000, 20_000.0, 0.1);
        let slower = rng.calls(10_000, 21_400.0, 0.1);
        let with_outlier = |c: &Vec<u64>| {
            let mut c = c.clone();
            c[5_000] = 8_000_000;
            c
        };
        let verdict_of = |name: &str, a: &Vec<u64>, b: &Vec<u64>| {
            let pa = write(
                &format!("out-{name}-a-{case}.json"),
                &report("bench", &[("p", a.clone())]),
            );
            let pb = write(
                &format!("out-{name}-b-{case}.json"),
                &report("bench", &[("p", b.clone())]),
            );
            let (_, out, _) = profpoint(&["compare", &pa, &pb]);
            verdict(&out, "p")
        };
        // No change, and a 7% slowdown: each verdict with and without the outlier, on either
        // side.
        for (what, new) in [("same", &same), ("slower", &slower)] {
            let clean = verdict_of(what, &base, new);
            assert_eq!(
                verdict_of(&format!("{what}-in-new"), &base, &with_outlier(new)),
                clean,
                "case {case} {what}"
            );
            assert_eq!(
                verdict_of(&format!("{what}-in-base"), &with_outlier(&base), new),
                clean,
                "case {case} {what}"
            );
        }
        assert!(verdict_of("same-check", &base, &same).starts_with('~'));
        assert_eq!(
            verdict_of("slower-check", &base, &slower),
            "SLOWER",
            "case {case}"
        );
    }
    common::clean();
}

/// Repeated runs of one program, b1 b2 -- b3 b4, each run 10,000 calls with preemptions, in
/// 20 cases: never flagged, exit 0 under --fail-on-regression; the same with the second side
/// 2x slower is flagged.
#[test]
fn repeated_identical_runs_are_not_flagged() {
    for case in 0..20 {
        let mut rng = seed(5, case);
        let mut run = |median: f64, tag: &str| {
            let mut c = rng.calls(10_000, median, 0.2);
            for i in (0..c.len()).step_by(100 + rng.below(400)) {
                c[i] += 4_000_000 + rng.below(4_000_000) as u64;
            }
            write(
                &format!("rep-{case}-{tag}.json"),
                &report(
                    "bench",
                    &[
                        ("step", c.clone()),
                        ("io", c.iter().map(|v| v / 3).collect()),
                    ],
                ),
            )
        };
        let b: Vec<String> = (0..4).map(|i| run(22_000.0, &format!("b{i}"))).collect();
        let (code, out, err) = profpoint(&[
            "compare",
            &b[0],
            &b[1],
            "--",
            &b[2],
            &b[3],
            "--fail-on-regression",
        ]);
        assert_eq!(code, 0, "case {case}: {out}{err}");
        assert!(out.contains("2 base and 2 new runs"), "{out}");
        assert!(!flags_any(&out), "case {case}: {out}");
        let s: Vec<String> = (0..2).map(|i| run(44_000.0, &format!("s{i}"))).collect();
        let (code, out, _) = profpoint(&[
            "compare",
            &b[0],
            &b[1],
            "--",
            &s[0],
            &s[1],
            "--fail-on-regression",
        ]);
        assert_eq!(code, 1, "case {case}: {out}");
        assert_eq!(verdict(&out, "step"), "SLOWER", "case {case}: {out}");
    }
    common::clean();
}

/// A moderate change of one point among three (raw p about 0.007): flagged with
/// --alpha-per-point at 0.01, not once Holm's adjustment counts the three points (0.02).
#[test]
fn alpha_is_for_the_whole_comparison_unless_asked_per_point() {
    let calls = |fast: usize, slow: usize| {
        let mut c = vec![1_000u64; fast];
        c.extend(vec![2_000u64; slow]);
        c
    };
    let steady = |rng: &mut common::Rng| rng.calls(2_000, 5_000.0, 0.1);
    let mut rng = seed(8, 0);
    let base = write(
        "holm-base.json",
        &report(
            "bench",
            &[
                ("moved", calls(500, 500)),
                ("x", steady(&mut rng)),
                ("y", steady(&mut rng)),
            ],
        ),
    );
    let new = write(
        "holm-new.json",
        &report(
            "bench",
            &[
                ("moved", calls(440, 560)),
                ("x", steady(&mut rng)),
                ("y", steady(&mut rng)),
            ],
        ),
    );
    let (_, out, _) = profpoint(&["compare", &base, &new]);
    assert!(
        out.contains("p Holm-adjusted over the 3 points tested"),
        "{out}"
    );
    assert_eq!(verdict(&out, "moved"), "~ (within noise)", "{out}");
    let (code, out, _) = profpoint(&[
        "compare",
        &base,
        &new,
        "--alpha-per-point",
        "--fail-on-regression",
    ]);
    assert!(out.contains("p per point"), "{out}");
    assert_eq!(verdict(&out, "moved"), "SLOWER", "{out}");
    assert_eq!(code, 1);
    common::clean();
}

/// One base run against three new ones: the three's spread stands for both sides.
#[test]
fn one_run_against_several_is_tested_across_runs() {
    let mut rng = seed(9, 0);
    let mut run = |median: f64, tag: &str| {
        write(
            &format!("one-{tag}.json"),
            &report("bench", &[("step", rng.calls(5_000, median, 0.2))]),
        )
    };
    let base = run(20_000.0, "base");
    let same: Vec<String> = (0..3).map(|i| run(20_000.0, &format!("same{i}"))).collect();
    let slow: Vec<String> = (0..3).map(|i| run(30_000.0, &format!("slow{i}"))).collect();
    let (code, out, err) = profpoint(&["compare", &base, "--", &same[0], &same[1], &same[2]]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 base and 3 new runs"), "{out}");
    assert!(verdict(&out, "step").starts_with('~'), "{out}");
    let (_, out, _) = profpoint(&["compare", &base, "--", &slow[0], &slow[1], &slow[2]]);
    assert_eq!(verdict(&out, "step"), "SLOWER", "{out}");
    common::clean();
}

/// A point in one run only is shown as such; reports of two different programs get a warning
/// line, whether their command lines say so or they have no point in common.
#[test]
fn points_in_one_run_only_and_different_programs_are_shown_as_such() {
    let mut rng = seed(6, 0);
    let base = write(
        "only-base.json",
        &report(
            "bench",
            &[
                ("kept", rng.calls(1_000, 5_000.0, 0.1)),
                ("removed", rng.calls(100, 900.0, 0.1)),
            ],
        ),
    );
    let new = write(
        "only-new.json",
        &report(
            "bench",
            &[
                ("kept", rng.calls(1_000, 5_000.0, 0.1)),
                ("added", rng.calls(100, 900.0, 0.1)),
            ],
        ),
    );
    let (code, out, err) = profpoint(&["compare", &base, &new, "--fail-on-regression"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(verdict(&out, "removed"), "only in base", "{out}");
    assert_eq!(verdict(&out, "added"), "only in new", "{out}");
    assert!(verdict(&out, "kept").starts_with('~'), "{out}");
    assert!(!err.contains("warning"), "{err}");
    // A point's row in one run only shows that run's numbers and no test.
    let row = out.lines().find(|l| l.starts_with("added")).unwrap();
    assert_eq!(row.split_whitespace().nth(1), Some("-"), "{row}");

    // Another program by its command line, with a point of the same name.
    let other = write(
        "other-program.json",
        &report("server", &[("kept", rng.calls(1_000, 5_000.0, 0.1))]),
    );
    let (code, _, err) = profpoint(&["compare", &base, &other]);
    assert_eq!(code, 0);
    let warning: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warning.len(), 1, "{err}");
    assert!(
        warning[0].contains("different programs")
            && warning[0].contains("base: bench")
            && warning[0].contains("new: server"),
        "{err}"
    );

    // The same program on another CPU model.
    let elsewhere = write(
        "other-cpu.json",
        &report("bench", &[("kept", rng.calls(1_000, 5_000.0, 0.1))])
            .replace(r#""cpu_model":"x""#, r#""cpu_model":"Other CPU @ 3.0GHz""#),
    );
    let (code, _, err) = profpoint(&["compare", &base, &elsewhere]);
    assert_eq!(code, 0);
    assert!(
        err.contains(
            "warning: the reports come from different CPUs (base: x; new: Other CPU @ 3.0GHz)"
        ) && !err.contains("different programs"),
        "{err}"
    );

    // No command line in the reports (hand-made), and no point in common.
    let strip = |text: String| {
        let at = text.find(r#""run":"#).unwrap();
        let end = text[at..].find("},").unwrap() + at + 2;
        format!("{}{}", &text[..at], &text[end..])
    };
    let x = write(
        "nocmd-x.json",
        &strip(report("a", &[("x::f", rng.calls(50, 100.0, 0.1))])),
    );
    let y = write(
        "nocmd-y.json",
        &strip(report("b", &[("y::g", rng.calls(50, 100.0, 0.1))])),
    );
    let (code, out, err) = profpoint(&["compare", &x, &y]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: base and new have no point in common"),
        "{err}"
    );
    assert_eq!(verdict(&out, "x::f"), "only in base", "{out}");
    assert_eq!(verdict(&out, "y::g"), "only in new", "{out}");
    common::clean();
}

/// Bad arguments: one line naming the value and what was expected, exit status 2.
#[test]
fn bad_arguments_get_one_line_and_exit_2() {
    let mut rng = seed(7, 0);
    let r = write(
        "args.json",
        &report("bench", &[("p", rng.calls(100, 1000.0, 0.1))]),
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--alpha", "0"],
            "invalid value '0' for '--alpha <A>': expected a false-alarm rate above 0 and at most 0.5",
        ),
        (
            vec!["--alpha", "0.7"],
            "invalid value '0.7' for '--alpha <A>': expected a false-alarm rate above 0 and at most 0.5",
        ),
        (
            vec!["--alpha", "five"],
            "invalid value 'five' for '--alpha <A>': expected a false-alarm rate",
        ),
        (
            vec!["--alpha=nan"],
            "invalid value 'nan' for '--alpha <A>': expected a false-alarm rate",
        ),
        (
            vec!["--alpha"],
            "a value is required for '--alpha <A>' but none was supplied",
        ),
        (
            vec!["--threshold=-3"],
            "invalid value '-3' for '--threshold <PCT>': expected a percentage from 0 to 1000",
        ),
        (
            vec!["--threshold=lots"],
            "invalid value 'lots' for '--threshold <PCT>': expected a percentage",
        ),
        (
            vec!["--fail-on-regression=yes"],
            "unexpected value 'yes' for '--fail-on-regression' found",
        ),
        (
            vec!["--frobnicate"],
            "unexpected argument '--frobnicate' found",
        ),
        (
            vec!["--", "--"],
            "--: cannot read: no such file or directory",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["compare", &r, &r];
        args.extend(extra.iter());
        let (code, out, err) = profpoint(&args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("profpoint: ") && err.contains(expected),
            "{args:?}: {err}"
        );
    }
    // --help says what alpha means within a run and across runs, and that it holds for the
    // whole comparison.
    let (code, out, _) = profpoint(&["compare", "--help"]);
    assert_eq!(code, 0);
    for needle in [
        "--alpha <A>",
        "Within a run",
        "Across repeated runs",
        "Holm",
        "--alpha-per-point",
        "--threshold <PCT>",
        "--fail-on-regression",
    ] {
        assert!(out.contains(needle), "{needle}:\n{out}");
    }
    common::clean();
}
