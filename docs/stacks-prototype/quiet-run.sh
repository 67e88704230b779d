#!/bin/bash
# Waits for a quiet machine (no rustc, no process above 20% CPU, three checks 5 s apart, no
# /tmp/profpoint-quiet of someone else), then holds /tmp/profpoint-quiet while it measures.
cd /tmp/stackproto
ok=0
while [ $ok -lt 3 ]; do
  sleep 5
  busy=$(ps -eo pcpu=,comm= | awk '$1 > 20 {print $2}' | head -3)
  if [ -e /tmp/profpoint-quiet ] || pgrep -x rustc >/dev/null || [ -n "$busy" ]; then ok=0; else ok=$((ok+1)); fi
done
echo "stacks-prototype (issue 14 groundwork session) $(date -u +%H:%M:%S)" > /tmp/profpoint-quiet
date -u +"quiet from %H:%M:%S" > results/when.txt
uptime >> results/when.txt
./measure.sh 1000 4 3 1 > results/measure-1k.txt 2>&1
./measure.sh 4000 4 3 1 > results/measure-4k.txt 2>&1
target/release/gettid > results/gettid.txt 2>&1
B=$PWD/target/release/stackproto
THREADS=2 $B stack 1000 32 5 results/ours.folded > results/ours.txt 2>&1
THREADS=2 perf record -q -o results/perf.dwarf.data -e cpu-clock -F 1000 --call-graph dwarf -- $B none 0 32 5 > /dev/null 2>&1
THREADS=2 perf record -q -o results/perf.fp.data -e cpu-clock -F 1000 --call-graph fp -- $B none 0 32 5 > /dev/null 2>&1
THREADS=2 $B stack 1000 64 5 results/ours64.folded > results/ours64.txt 2>&1
uptime >> results/when.txt
date -u +"quiet until %H:%M:%S" >> results/when.txt
rm -f /tmp/profpoint-quiet
perf script -i results/perf.dwarf.data -F ip,sym > results/perf.dwarf.txt 2>/dev/null
perf script -i results/perf.fp.data -F ip,sym > results/perf.fp.txt 2>/dev/null
echo finished >> results/when.txt
