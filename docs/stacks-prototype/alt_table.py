#!/usr/bin/env python3
"""Markdown table from the ALTERNATE runs' output (alternate*.txt)."""
import re, sys
rows, cur, q = [], None, {}
for path in sys.argv[1:]:
    for line in open(path):
        if line.startswith("=="):
            cur = line[3:].strip().replace("target/release/stackproto ", "").replace("target-fp/release/stackproto ", "fp build: ")
        m = re.match(r"handler_ns_quantiles p10=(\d+) p50=(\d+) p90=(\d+) p99=(\d+)", line)
        if m: q[cur] = m.groups()
        m = re.match(r"alternate (\w+): rounds (\d+) cpu/round ([\d.]+) us \(none ([\d.]+) us\) overhead ([+-][\d.]+)% samples (\d+) e2e ([\d.-]+) us/sample, handler body ([\d.]+) us", line)
        if m: rows.append((cur,) + m.groups())
print("| run | phase | rounds | CPU/round (none) | overhead | samples | end to end per sample | handler body mean |")
print("|---|---|---|---|---|---|---|---|")
by = {}
for r in rows:
    cur, ph, rounds, cpr, none, ov, samples, e2e, body = r
    by.setdefault(cur, {})[ph] = float(ov)
    print(f"| {cur} | {ph} | {rounds} | {cpr} us ({none} us) | {ov}% | {samples} | {e2e} us | {body} us |")
print()
for cur, d in by.items():
    if "flat" in d and "stack" in d and d["flat"] > 0:
        print(f"- {cur}: stack overhead / flat overhead = {d['stack'] / d['flat']:.2f}")
