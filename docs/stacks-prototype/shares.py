#!/usr/bin/env python3
"""Caller shares of `hot` (inclusive: samples with hot anywhere on the stack), from our folded
stacks or from `perf script -F ip,sym` output.  usage: shares.py folded FILE | perf FILE"""
import sys, re
kind, path = sys.argv[1], sys.argv[2]
HOT, A, B = "workload::hot", "workload::caller_a", "workload::caller_b"
stacks = []  # (frames root..leaf or leaf..root, count)
if kind == "folded":
    for line in open(path):
        line = line.rstrip("\n")
        if not line: continue
        k, c = line.rsplit(" ", 1)
        stacks.append((k.split(";"), int(c)))
else:
    cur = []
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            if cur: stacks.append((cur, 1)); cur = []
            continue
        if line.startswith((" ", "\t")):
            parts = line.strip().split(None, 1)
            cur.append(parts[1] if len(parts) > 1 else parts[0])
        else:
            cur = []
    if cur: stacks.append((cur, 1))
tot = sum(c for _, c in stacks)
def has(fr, name): return any(name in f for f in fr)
h = sum(c for fr, c in stacks if has(fr, HOT))
a = sum(c for fr, c in stacks if has(fr, HOT) and has(fr, A))
b = sum(c for fr, c in stacks if has(fr, HOT) and has(fr, B))
print(f"{kind}: samples {tot}, with hot {h} ({100*h/max(tot,1):.1f}%), hot under caller_a {a} "
      f"({100*a/max(a+b,1):.1f}%), under caller_b {b} ({100*b/max(a+b,1):.1f}%), hot under neither {h-a-b}")
