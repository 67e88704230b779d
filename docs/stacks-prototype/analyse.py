#!/usr/bin/env python3
"""From measure.sh output, per mode: the handler body's median/p90 (medians over reps) and
the end-to-end cost per sample: (cpu - rounds * cpu_per_round of the unsampled run of the same
binary in the same rep) / samples."""
import sys, re, statistics as st
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"rep (\d+) (\S+)\s+rounds\s+(\d+) cpu_s\s+([\d.]+) samples\s+(\d+) handler_ns_mean\s+(\d+) frames\s+([\d.]+) p50 (\d+) p90 (\d+) p99 (\d+)", line)
    if m: rows.append(dict(rep=int(m[1]), mode=m[2], rounds=int(m[3]), cpu=float(m[4]), samples=int(m[5]), mean=float(m[6]), frames=float(m[7]), p50=float(m[8]), p90=float(m[9]), p99=float(m[10])))
def build(mode): return mode.split(":")[0] if ":" in mode else "nofp"
base = {(r["rep"], build(r["mode"])): r["cpu"] / r["rounds"] for r in rows if "none/" in r["mode"]}
by = {}
for r in rows:
    if "none/" in r["mode"]: continue
    e2e = (r["cpu"] - r["rounds"] * base[(r["rep"], build(r["mode"]))]) / r["samples"] * 1e6
    by.setdefault(r["mode"], []).append((r, e2e))
print(f"{'mode':17s} {'p50 us':>7s} {'p90 us':>7s} {'p99 us':>7s} {'mean us':>8s} {'e2e us/sample (runs)':>24s} {'overhead':>9s} frames")
for mode, v in by.items():
    med = lambda k: st.median(x[0][k] for x in v) / 1000
    ov = st.median(x[0]["samples"] * x[1] / 1e6 / x[0]["cpu"] * 100 for x in v)
    print(f"{mode:17s} {med('p50'):7.2f} {med('p90'):7.2f} {med('p99'):7.2f} {med('mean'):8.2f} "
          f"{st.median(x[1] for x in v):7.1f} ({', '.join(f'{x[1]:.1f}' for x in v)})  {ov:6.1f}%  {v[0][0]['frames']}")
