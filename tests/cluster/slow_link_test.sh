#!/usr/bin/env bash
# Link calibration on a network with one slow node: NODES emulated nodes (default 3) x 2 ranks,
# every link unlimited but node SLOW's (100 Mbit/s). Past 8 nodes calibration times disjoint
# pairs at once. WEFT_TUNE_CALIBRATE=2 must measure each node's link and name SLOW's as the
# slowest; a second job (WEFT_TUNE_CALIBRATE=1) must read the same links back from the cache.
# The slow link is 100x slower than the others here, far outside any run-to-run noise.
#
#   slow_link_test.sh CLUSTER_SH ALL_REDUCE_PERF SLOW [NODES]
set -euo pipefail
(($# == 3 || $# == 4)) ||
  { echo "usage: slow_link_test.sh CLUSTER_SH ALL_REDUCE_PERF SLOW [NODES]" >&2; exit 2; }
cluster=$1 perf=$2 slow=$3 nodes=${4:-3}
cache="$(mktemp -d /tmp/weft-slow-link.XXXXXX)"
trap 'rm -rf "$cache"' EXIT

run() {  # calibrate-mode: prints rank 0's tuner line
  local status=0 log
  log="$("$cluster" --nodes "$nodes" --ppn 2 --node-rate "$slow:100mbit" --timeout 100 -- \
    env WEFT_TUNE_CALIBRATE="$1" WEFT_DEBUG=INFO XDG_CACHE_HOME="$cache" \
    "$perf" -b 1K -e 1K -n 2 -w 1 -c 1 2>&1)" || status=$?
  if ((status == 77)); then echo "$log"; exit 77; fi
  ((status == 0)) || { echo "$log"; echo "FAIL: the job exited $status"; exit 1; }
  grep -q ' 0 OK' <<<"$log" || grep -q 'Out of bounds values : 0' <<<"$log" ||
    { echo "$log"; echo "FAIL: wrong results"; exit 1; }
  grep 'tuner: network' <<<"$log" || { echo "$log"; echo "FAIL: no tuner line"; exit 1; }
}

expect() {  # line pattern what
  grep -q "$2" <<<"$1" || { echo "FAIL: $3 (expected '$2')"; exit 1; }
}

measured="$(run 2)"
expect "$measured" "slowest node $slow:" "the slowest link is not node $slow's"
expect "$measured" "measured at init" "calibration did not measure"
# 100 Mbit/s is 0.0125 GB/s; the unlimited veth links measure above 0.3 GB/s here.
gbps="$(sed -n 's/.*slowest node [0-9]*: \([0-9.e+-]*\) GB\/s.*/\1/p' <<<"$measured")"
fast="$(sed -n 's/.*fastest node [0-9]*: \([0-9.e+-]*\) GB\/s.*/\1/p' <<<"$measured")"
awk -v g="$gbps" 'BEGIN { exit !(g < 0.05) }' ||
  { echo "FAIL: node $slow's link measured $gbps GB/s, not the slow link's"; exit 1; }
awk -v g="$fast" 'BEGIN { exit !(g > 0.1) }' ||
  { echo "FAIL: the fastest node's link measured $fast GB/s: a fast node was taken for slow"; exit 1; }
cached="$(run 1)"
expect "$cached" "slowest node $slow:" "the cache lost the slowest node"
expect "$cached" "from the calibration cache" "the second job did not read the cache"
echo "PASS: node $slow's link found slowest ($gbps GB/s; the fastest $fast GB/s) and cached"
