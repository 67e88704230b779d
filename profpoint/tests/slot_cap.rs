//! A cap on slot memory (a hostile host): a thread that touches many points holds one
//! 11,392-byte slot per point. With `PROFPOINT_MAX_SLOT_MB=1` (92 slots), a thread calling 200
//! points 3 times each: one warning line, slot memory within the cap, and every call accounted
//! for: recorded in its point's row (all 3 calls) or counted as not recorded, exactly 600.
//! The cap is read at start-up, so the scenario runs in a child (this test binary again).
//! A counted-only call needs no slot (its count lives in the thread's shard): the same 200
//! points, counted only, called 6 times on each of four threads, stay far below the cap with
//! every call in its row.

mod common;

/// Points `P000` to `P199`, and the child's work: each called 3 times, in that order.
macro_rules! points {
    ($($p:ident)*) => {
        $(profpoint::define_profile_point!($p);)*

        pub(crate) fn child() {
            for p in [$(&$p),*] {
                for _ in 0..3 {
                    let t = p.start();
                    p.leave(t);
                }
            }
        }

        /// Every point counted only, each called 3 times through the guard `#[profile_point]`
        /// uses and 3 times through `start` and `leave`, on each of four threads.
        pub(crate) fn child_counted() {
            let points = [$(&$p),*];
            for p in points {
                p.set_counting();
            }
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(move || {
                        for p in points {
                            for _ in 0..3 {
                                drop(p.guard());
                                let t = p.start();
                                p.leave(t);
                            }
                        }
                    });
                }
            });
        }
    };
}

mod points {
    points! {
        P000 P001 P002 P003 P004 P005 P006 P007 P008 P009
        P010 P011 P012 P013 P014 P015 P016 P017 P018 P019
        P020 P021 P022 P023 P024 P025 P026 P027 P028 P029
        P030 P031 P032 P033 P034 P035 P036 P037 P038 P039
        P040 P041 P042 P043 P044 P045 P046 P047 P048 P049
        P050 P051 P052 P053 P054 P055 P056 P057 P058 P059
        P060 P061 P062 P063 P064 P065 P066 P067 P068 P069
        P070 P071 P072 P073 P074 P075 P076 P077 P078 P079
        P080 P081 P082 P083 P084 P085 P086 P087 P088 P089
        P090 P091 P092 P093 P094 P095 P096 P097 P098 P099
        P100 P101 P102 P103 P104 P105 P106 P107 P108 P109
        P110 P111 P112 P113 P114 P115 P116 P117 P118 P119
        P120 P121 P122 P123 P124 P125 P126 P127 P128 P129
        P130 P131 P132 P133 P134 P135 P136 P137 P138 P139
        P140 P141 P142 P143 P144 P145 P146 P147 P148 P149
        P150 P151 P152 P153 P154 P155 P156 P157 P158 P159
        P160 P161 P162 P163 P164 P165 P166 P167 P168 P169
        P170 P171 P172 P173 P174 P175 P176 P177 P178 P179
        P180 P181 P182 P183 P184 P185 P186 P187 P188 P189
        P190 P191 P192 P193 P194 P195 P196 P197 P198 P199
    }
}

/// In the child (this binary run again, `PROFPOINT_SLOT_CAP_CHILD` set), runs `child` and
/// returns `None`. In the test itself, runs test `name` as that child under a 1 MiB cap and
/// returns its stderr and its JSON report.
fn child_or_report(name: &str, child: fn()) -> Option<(String, serde_json::Value)> {
    if std::env::var_os("PROFPOINT_SLOT_CAP_CHILD").is_some() {
        child();
        return None;
    }
    let dir = std::env::temp_dir().join(format!("profpoint-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let o = common::runner::target_command(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("PROFPOINT_SLOT_CAP_CHILD", "1")
        .env("PROFPOINT_MAX_SLOT_MB", "1")
        .env(
            "PROFPOINT_REPORT",
            format!("json:{},stderr", json.display()),
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    Some((err, v))
}

/// The `nr` of each of `P000`..`P199`.
fn our_counts(v: &serde_json::Value) -> Vec<u64> {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let n = p["name"].as_str().unwrap();
            n.len() == 4 && n.starts_with('P')
        })
        .map(|p| p["nr"].as_u64().unwrap())
        .collect()
}

#[test]
fn slot_memory_is_capped_and_every_call_is_accounted_for() {
    let Some((err, v)) = child_or_report(
        "slot_memory_is_capped_and_every_call_is_accounted_for",
        points::child,
    ) else {
        return;
    };
    // One line when the cap is hit, naming the value and the variable.
    assert_eq!(
        err.matches(
            "profpoint: per-thread point slots reached the 1 MiB cap (PROFPOINT_MAX_SLOT_MB"
        )
        .count(),
        1,
        "{err}"
    );
    // The table's header says how many calls are in no row.
    assert!(
        err.contains("slot memory reached its cap of 1 MiB"),
        "{err}"
    );
    let slots = &v["slots"];
    assert_eq!(slots["cap_bytes"], 1u64 << 20, "{slots}");
    assert_eq!(slots["cap_reached"], true, "{slots}");
    assert!(slots["bytes"].as_u64().unwrap() <= 1 << 20, "{slots}");
    let unrecorded = slots["unrecorded_calls"].as_u64().unwrap();
    let ours = our_counts(&v);
    assert_eq!(ours.len(), 200, "{v}");
    // A point is recorded whole (its slot came before the cap) or not at all.
    assert!(ours.iter().all(|&n| n == 0 || n == 3), "{ours:?} {slots}");
    let recorded: u64 = ours.iter().sum();
    let with_slot = ours.iter().filter(|&&n| n == 3).count();
    assert!(with_slot <= (1 << 20) / 11_392, "{with_slot} slots {slots}");
    assert!(
        with_slot > 0 && unrecorded > 0,
        "{with_slot} {unrecorded} {err}"
    );
    assert_eq!(
        recorded + unrecorded,
        600,
        "recorded {recorded} + unrecorded {unrecorded}: {ours:?} {slots}"
    );
}

#[test]
fn counted_only_calls_take_no_slot_and_every_one_is_in_its_row() {
    let Some((err, v)) = child_or_report(
        "counted_only_calls_take_no_slot_and_every_one_is_in_its_row",
        points::child_counted,
    ) else {
        return;
    };
    let slots = &v["slots"];
    // A thread's first call makes its shard, and that call its point's slot (the general
    // path); every later counted call goes to the shard's table. So at most one slot for each
    // of the four threads (fewer if one reuses another's shard); profpoint's own hidden points
    // take theirs outside the cap and outside `bytes`.
    assert_eq!(slots["cap_reached"], false, "{slots} {err}");
    assert_eq!(slots["unrecorded_calls"], 0, "{slots}");
    assert!(
        slots["bytes"].as_u64().unwrap() <= 4 * 11_392,
        "more slots than threads: {slots}"
    );
    assert!(!err.contains("reached the 1 MiB cap"), "{err}");
    let ours = our_counts(&v);
    assert_eq!(ours, vec![24; 200], "{v}");
}
