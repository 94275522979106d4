#!/usr/bin/env bash
# weft over rdma against perftest, in one boot of the Soft-RoCE guest (tests/rdma/qemu): for
# each size, ib_write_bw one way and --bidirectional, then weft's all_reduce_perf and
# sendrecv_perf on 2 ranks with WEFT_TRANSPORT=rdma, and all_reduce_perf again polling instead
# of sleeping (WEFT_SPIN_US), taking turns for REPEAT rounds; prints the medians and weft's busbw
# as a fraction of ib_write_bw.
#
#   perf/rdma/weft_vs_perftest.sh [BUILD_DIR]      (REPEAT [3], SIZES ["1M 4M 16M"])
#
# An all-reduce of 2 ranks moves S bytes each way in its time t (half in the reduce-scatter,
# half in the all-gather), so its busbw S/t is the rate of each direction with both loaded:
# ib_write_bw --bidirectional (per direction) is the like-for-like baseline, the one-way figure
# the upper bound. These numbers measure the emulator (TCG on this host's cores), not a network.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
build=$(cd "${1:-$root/build}" && pwd -P)
repeat=${REPEAT:-3}
sizes=${SIZES:-1M 4M 16M}
out=$(mktemp -d "${TMPDIR:-/tmp}/weft_vs_perftest.XXXXXX")
trap 'rm -rf -- "$out"' EXIT

bytes() {  # 1M -> 1048576
  local n=${1%[KMG]}
  case $1 in *K) echo $((n << 10)) ;; *M) echo $((n << 20)) ;; *G) echo $((n << 30)) ;; *) echo "$n" ;; esac
}

# One guest script: perftest pairs and weftrun jobs, each writing a file named
# <round>.<kind>.<size> into the shared out dir.
{
  echo "set -u"
  echo "export WEFT_SOCKET_IFNAME=lo WEFT_TRANSPORT=rdma"
  port=18600
  for ((round = 1; round <= repeat; ++round)); do
    for size in $sizes; do
      b=$(bytes "$size")
      iters=$(((64 << 20) / b + 4))
      port=$((port + 2))
      printf '%q "$WEFT_QEMU_OUT" %s.ib.%s %s ib_write_bw -s %s -n %s\n' \
        "$root/perf/rdma/perftest_pair.sh" "$round" "$size" "$port" "$b" "$iters"
      printf '%q "$WEFT_QEMU_OUT" %s.ibbi.%s %s ib_write_bw -s %s -n %s --bidirectional\n' \
        "$root/perf/rdma/perftest_pair.sh" "$round" "$size" "$((port + 1))" "$b" "$iters"
      for tool in all_reduce sendrecv all_reduce.polling; do
        printf '%s %q -n 2 %q -b %s -e %s -n %s -w 2 -c 0 > "$WEFT_QEMU_OUT/%s.%s.%s" 2>&1 || echo "%s failed"\n' \
          "$([[ $tool == *.polling ]] && echo WEFT_SPIN_US=1000000)" "$build/tools/weftrun" \
          "$build/perf/${tool%.polling}_perf" "$b" "$b" "$iters" "$round" "$tool" "$size" "$tool"
      done
    done
  done
} >"$out/guest.sh"

load=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
"$root/tests/rdma/qemu/rxe_guest.sh" --timeout 1800 --out "$out" -- bash "$out/guest.sh" \
  >"$out/log.txt" 2>&1 || rc=$?
((rc == 77)) && { cat "$out/log.txt"; exit 77; }
((rc == 0)) || { cat "$out/log.txt"; echo "weft_vs_perftest: the guest run failed ($rc)"; exit 1; }

# perftest: BW average in MB/s of 2^20 bytes. weft: size over the out-of-place time, which is the
# busbw of both tools on 2 ranks (all_reduce_perf prints busbw in GB/s with two decimals, too
# coarse here). Both become 10^6 bytes per second.
perftest_mbs() { awk '/#bytes/ {seen = 1; next} seen && $1 ~ /^[0-9]+$/ {print $4 * 1.048576; exit}' "$1.client" 2>/dev/null; }
weft_mbs() { awk '!/^#/ && NF >= 8 && $1 ~ /^[0-9]+$/ && $6 > 0 {print $1 / $6; exit}' "$1" 2>/dev/null; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }

echo "Soft-RoCE (rxe0) in QEMU/TCG -smp 2, $repeat rounds, medians in MB/s (10^6 B/s); host load before: $load"
echo
echo "| size | ib_write_bw one way | ib_write_bw bidirectional, per direction | weft sendrecv | weft all_reduce busbw | all_reduce / bidirectional | all_reduce / one way | all_reduce polling | polling / bidirectional | polling / one way |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for size in $sizes; do
  series() { for ((r = 1; r <= repeat; ++r)); do "$1" "$out/$r.$2.$size"; done; }
  one=$(series perftest_mbs ib | median)
  bi=$(series perftest_mbs ibbi | awk '{print $1 / 2}' | median)
  sr=$(series weft_mbs sendrecv | median)
  ar=$(series weft_mbs all_reduce | median)
  poll=$(series weft_mbs all_reduce.polling | median)
  awk -v s="$size" -v one="$one" -v bi="$bi" -v ar="$ar" -v sr="$sr" -v poll="$poll" 'BEGIN {
    printf "| %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", s, one, bi,
      sr, ar, (bi > 0 ? ar / bi : 0), (one > 0 ? ar / one : 0), poll, (bi > 0 ? poll / bi : 0),
      (one > 0 ? poll / one : 0) }'
done
echo
echo "polling: WEFT_SPIN_US=1000000, so waits poll the completion queue as perftest does instead"
echo "of sleeping on the completion channel after weft's default budget of 50 us."
