#!/usr/bin/env bash
# Truth check: the heatmap's top 5 functions and their shares against `perf record -e
# cpu-clock:u` + `perf report` on the same run (both sample the same process at once).
#
# Usage: heatmap/scripts/compare_with_perf.sh [PROGRAM [ARGS...]]
#        heatmap/scripts/compare_with_perf.sh --profpoint PROGRAM [ARGS...]
#   PROGRAM must start the heatmap itself and write its dump to $HEATMAP_DUMP (the default,
#   the heatmap_demo example, does: it takes the dump path as its first argument). With
#   --profpoint, PROGRAM is a profpoint program: it runs with PROFPOINT_HEATMAP=1 and its JSON
#   exit report (PROFPOINT_REPORT=json:...) supplies the heatmap section.
# Env: HZ (default 1000), TOLERANCE in percentage points (default 3).
# Exit status 0 when every one of our top 5 is within TOLERANCE of perf's share.
set -euo pipefail
cd "$(dirname "$0")/../.."
HZ=${HZ:-1000}
TOL=${TOLERANCE:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HEATMAP_DUMP="$work/run.hm"
cargo build -q -p profpoint-heatmap --release --example heatmap_demo
cargo build -q -p profpoint-cli --release
mode=dump
if [ "${1:-}" = "--profpoint" ]; then
  mode=profpoint
  shift
fi
if [ $# -eq 0 ]; then
  set -- target/release/examples/heatmap_demo "$HEATMAP_DUMP"
fi
if [ $mode = profpoint ]; then
  PROFPOINT_HEATMAP=1 PROFPOINT_HZ=$HZ HEATMAP_HZ=$HZ PROFPOINT_HEATMAP_TOP=5 \
    PROFPOINT_REPORT="json:$work/report.json" \
    perf record -q -e cpu-clock:u -F "$HZ" -o "$work/perf.data" -- "$@" >"$work/run.out" 2>"$work/run.err" \
    || { cat "$work/run.err"; exit 1; }
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["heatmap"]))' \
    "$work/report.json" >"$work/heatmap.json"
else
  HEATMAP_HZ=$HZ perf record -q -e cpu-clock:u -F "$HZ" -o "$work/perf.data" -- "$@" 2>"$work/run.err" \
    || { cat "$work/run.err"; exit 1; }
  target/release/profpoint heatmap --json --top 5 "$HEATMAP_DUMP" >"$work/heatmap.json"
fi
perf report -i "$work/perf.data" --stdio --sort sym --no-children -q 2>/dev/null >"$work/perf.txt"
python3 - "$work/perf.txt" "$work/heatmap.json" "$TOL" <<'PY'
import json, re, sys
perf_txt, hm_json, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
def norm(name):
    # perf may keep the legacy Rust hash; we print names without it.
    return re.sub(r'::h[0-9a-f]{16}$', '', name.strip())
perf = {}
for line in open(perf_txt):
    m = re.match(r'\s*([0-9.]+)%\s+\[[^\]]*\]\s+(.*)$', line)
    if m:
        perf[norm(m.group(2))] = perf.get(norm(m.group(2)), 0.0) + float(m.group(1))
report = json.load(open(hm_json))
achieved = report['achieved_hz']
print(f"heatmap: {report['total_samples']} samples, source {report['source']}, "
      f"{report['requested_hz']} Hz requested, "
      f"{'n/a' if achieved is None else format(achieved, '.0f')} Hz achieved")
print(f"{'function':44} {'heatmap %':>10} {'perf %':>8} {'diff pp':>8}")
worst = 0.0
for row in report['rows']:
    p = perf.get(row['function'], 0.0)
    d = row['percent'] - p
    worst = max(worst, abs(d))
    print(f"{row['function'][:44]:44} {row['percent']:10.2f} {p:8.2f} {d:+8.2f}")
print(f"largest difference: {worst:.2f} percentage points (tolerance {tol})")
sys.exit(0 if worst <= tol else 1)
PY
