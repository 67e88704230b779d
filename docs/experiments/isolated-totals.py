# Offline check of the "totals with descendants disabled" estimator (BENCHMARKS.md, "Self
# times from totals timed alone", session 15): each point's mean call measured in a run where
# it alone is on (PROFPOINT_BUDGET=off PROFPOINT_COMPENSATE=1, so its own cost is out); its
# self time is that times its calls less, for each child in the tree of points, the child's
# mean call times its calls under it (an all-timed run's tree). Writes the all-timed run's
# JSON report with each point's self_ns replaced, for scripts/bench-realcrate's ranking.
#
# Usage: python3 docs/experiments/isolated-totals.py BINARY SECS OUT.json
# (BINARY: an annotated real-loop build, e.g. target/release/base64-loop; one run per point.)
import json, os, subprocess, sys, tempfile
from collections import defaultdict
binary, secs, out = sys.argv[1], sys.argv[2], sys.argv[3]
tmp = tempfile.mkdtemp()
def run(env, path):
    e = dict(os.environ, PROFPOINT_REPORT="json:" + path, PROFPOINT_BUDGET="off", PROFPOINT_COMPENSATE="1", **env)
    subprocess.run([binary, secs], env=e, stdout=subprocess.DEVNULL, check=True)
    return json.load(open(path))
full = run({}, os.path.join(tmp, "full.json"))
nodes = full['tree']['nodes']
called = sorted(p['name'] for p in full['points'] if p['nr'] > 0)
T = {}
for i, p in enumerate(called):
    r = run({"PROFPOINT_DISABLE": "*", "PROFPOINT_ENABLE": p}, os.path.join(tmp, f"{i}.json"))
    q = next(x for x in r['points'] if x['name'] == p)
    T[p] = q['total_ns'] / max(q['timed'], 1)
kid_ns = defaultdict(float)
for n in nodes:
    if n['parent'] is not None:
        kid_ns[nodes[n['parent']]['name']] += T.get(n['name'], 0) * n['calls']
for q in full['points']:
    if q['name'] in T:
        q['self_ns'] = int(max(T[q['name']] * q['nr'] - kid_ns[q['name']], 0))
json.dump(full, open(out, 'w'))
for q in sorted(full['points'], key=lambda q: -q['self_ns'])[:14]:
    print(f"{q['self_ns']/1e6:9.1f} ms  T {T.get(q['name'],0):7.1f} ns  self {q['self_ns']/max(q['nr'],1):6.1f} ns/call  {q['name']}")
