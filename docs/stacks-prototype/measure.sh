#!/bin/bash
# Per-sample cost: flat (pc only) vs stacks of depth 32 and 64 (framehop), same binary, same
# rate, alternating modes, REPS rounds; and on the frame-pointer build, the frame-pointer walk
# (the alternative) beside framehop. Run only on a quiet machine (see docs/stacks.md).
# usage: measure.sh [HZ] [SECS] [REPS] [THREADS]
set -u
HZ=${1:-1000}; SECS=${2:-4}; REPS=${3:-3}; T=${4:-1}
B=/tmp/stackproto/target/release/stackproto
F=/tmp/stackproto/target-fp/release/stackproto
for r in $(seq $REPS); do
  for m in "$B none 32" "$B flat 32" "$B stack 32" "$B stack 64" "$F none 32" "$F flat 32" "$F fp 32" "$F stack 32"; do
    set -- $m
    tag=$2/$3; [ "$1" = "$F" ] && tag=fpbuild:$tag
    THREADS=$T $1 $2 $HZ $3 $SECS 2>&1 | awk -v m="$tag" -v r=$r '
      /^mode=/ { for(i=1;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]} }
      /^samples=/ { for(i=1;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]} }
      /^handler_ns_quantiles/ { for(i=2;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]} }
      /^chain ends/ { e=$0 }
      END { printf "rep %d %-17s rounds %6d cpu_s %6.3f samples %6d handler_ns_mean %6s frames %5s p50 %s p90 %s p99 %s | %s\n", r, m, v["rounds"], v["cpu_s"], v["samples"], v["handler_ns_mean"], v["frames_mean"], v["p50"], v["p90"], v["p99"], e }'
  done
done
