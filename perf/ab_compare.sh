#!/usr/bin/env bash
# Two builds of weft side by side (say, before and after a change), in one run: all_reduce_perf
# (float32 sum) over shm and tcp at NP ranks, blocking (-z 2) and non-blocking (-z 0), small
# sizes with enough iterations that each is timed over 10,000+ calls, large sizes to 64 MiB.
# The builds take turns, in alternating order, ROUNDS times; the table keeps the median of each
# build's times per size, with the spread (min-max over its rounds), and B's time over A's.
#
#   perf/ab_compare.sh BUILD_A BUILD_B        e.g. perf/ab_compare.sh /tmp/before/build build
#
# Environment: NP (default 2), ROUNDS (default 3), MAX (largest size, default 64M), OUT (log
# directory, default ab-compare), TRANSPORTS (default "shm tcp"), MODES (default "2 0").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
a="${1:?usage: perf/ab_compare.sh BUILD_A BUILD_B}"
b="${2:?usage: perf/ab_compare.sh BUILD_A BUILD_B}"
np="${NP:-2}"
rounds="${ROUNDS:-3}"
max="${MAX:-64M}"
out="${OUT:-ab-compare}"
transports=(${TRANSPORTS:-shm tcp})
modes=(${MODES:-2 0})
mkdir -p "$out"
export WEFT_SOCKET_IFNAME=lo

run() {  # build label transport mode round
  local build="$1" label="$2" transport="$3" mode="$4" round="$5"
  local env=(env)
  [[ "$transport" == tcp ]] && env=(env WEFT_TRANSPORT=tcp)
  local base="$out/${label}_${transport}_z${mode}"
  "${env[@]}" "$build/tools/weftrun" -n "$np" "$build/perf/all_reduce_perf" -z "$mode" \
    -b 8 -e 64K -f 2 -n 10000 -w 200 -c 1 >"$base.small.$round.txt"
  "${env[@]}" "$build/tools/weftrun" -n "$np" "$build/perf/all_reduce_perf" -z "$mode" \
    -b 128K -e "$max" -f 2 -n 20 -w 5 -c 1 >"$base.large.$round.txt"
}

for transport in "${transports[@]}"; do
  for mode in "${modes[@]}"; do
    for ((round = 1; round <= rounds; ++round)); do
      echo "== $transport -z $mode round $round/$rounds" >&2
      if ((round % 2)); then
        run "$a" A "$transport" "$mode" "$round"
        run "$b" B "$transport" "$mode" "$round"
      else
        run "$b" B "$transport" "$mode" "$round"
        run "$a" A "$transport" "$mode" "$round"
      fi
    done
  done
done
/usr/bin/python3 "$root/perf/ab_table.py" "$out" "${transports[@]/#/--transport=}" \
  "${modes[@]/#/--mode=}"
