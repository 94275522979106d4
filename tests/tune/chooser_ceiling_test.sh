#!/bin/bash
# perf/chooser_ceiling.py on runs whose answer is known: one cell where the algorithms swap
# places between the halves of the rounds (the oracle misses both ways), one where they never
# do (it is right both ways), and auto scored the same way.
# Usage: chooser_ceiling_test.sh PYTHON CHOOSER_CEILING_PY
set -euo pipefail
python="$1"
script="$2"
runs="$(mktemp -d)"
trap 'rm -rf "$runs"' EXIT

# One perf/cluster_algos.sh file: CONFIG ALGO ROUND, then "size us" pairs.
run() {
  local file="$runs/$1.$2.small.$3.txt"
  shift 3
  while (($#)); do
    printf '%12d %13d     float     sum      -1 %8.2f    0.00    0.00    N/A %8.2f    0.00    0.00    N/A\n' \
      "$1" "$(($1 / 4))" "$2" "$2" >>"$file"
    shift 2
  done
}
for round in 1 2 3 4; do
  if ((round % 2)); then swap_x=100 swap_y=90; else swap_x=100 swap_y=120; fi
  run 4x2.block ring "$round" 16 "$swap_x" 64 100
  run 4x2.block tree "$round" 16 "$swap_y" 64 200
  run 4x2.block auto "$round" 16 100 64 100
done

out="$("$python" "$script" "$runs")"
echo "$out"
# 16 B: odd rounds pick the tree, which takes 120 in the even ones against the ring's 100
# (1.20x); even rounds pick the ring, 100 against the tree's 90 in the odd ones (1.11x).
# 64 B: the ring both ways. So 2 of 4 within 10 %, none beyond 1.25x, worst 1.20.
grep -q '^oracle by medians: 4 cell-halves, within 10 % of the fastest forced algorithm in 2 (50 %), beyond 1.25x in 0; median 1.06, worst 1.20$' <<<"$out" || {
  echo "FAIL: the oracle's line"; exit 1; }
grep -q '^oracle by best times: 4 cell-halves, within 10 % .* in 2 (50 %)' <<<"$out" || {
  echo "FAIL: the oracle's line by best times"; exit 1; }
# auto at 100 everywhere: 1.11x only against the odd rounds' 90 at 16 B.
grep -q '^auto by medians: 4 cell-halves, within 10 % of the fastest forced algorithm in 3 (75 %), beyond 1.25x in 0; median 1.00, worst 1.11$' <<<"$out" || {
  echo "FAIL: auto's line"; exit 1; }

status=0
"$python" "$script" >/dev/null 2>&1 || status=$?
[[ $status != 0 ]] || { echo "FAIL: no folder was accepted"; exit 1; }
echo "chooser_ceiling.py: ok"
