#!/usr/bin/env bash
# The smallest all-reduce (8 bytes of float32 sum, blocking calls), weft against Open MPI, side by
# side: over shared memory at 2 and 4 ranks (Open MPI: ob1 + vader) and over TCP loopback at 2
# ranks (weft: WEFT_TRANSPORT=tcp; Open MPI: ob1 + tcp on lo).
#
#   perf/small_messages.sh
#
# Each case alternates the two libraries REPEAT times (default 5); each run times ITERS
# back-to-back calls (default 20000) after a warm-up, walking the buffers as nccl-tests does, and
# reports the mean per call averaged over ranks (all_reduce_perf -z 2; perf/baselines/
# mpi_allreduce_bench). The table gives each side's median over runs and the spread (min-max).
# CASES (default "shm:2 shm:4 tcp:2") picks the cases; BUILD the build directory. COLL=barrier
# times barriers instead (weft: perf/barrier_latency; Open MPI: MPI_Barrier in the same baseline).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$root/build}"
repeat="${REPEAT:-5}" iters="${ITERS:-20000}" coll="${COLL:-allreduce}"
cases=(${CASES:-shm:2 shm:4 tcp:2})
export WEFT_SOCKET_IFNAME=lo
[[ -x "$build/perf/mpi_allreduce_bench" ]] || {
  echo "small_messages: $build/perf/mpi_allreduce_bench is missing (needs libopenmpi-dev)" >&2
  exit 1
}

weft_time() {  # transport np
  local env=(env)
  [[ "$1" == tcp ]] && env=(env WEFT_TRANSPORT=tcp)
  if [[ "$coll" == barrier ]]; then
    "${env[@]}" "$build/tools/weftrun" -n "$2" "$build/perf/barrier_latency" "$iters" 1000 |
      awk '!/^#/ { print $1; exit }'
    return
  fi
  "${env[@]}" "$build/tools/weftrun" -n "$2" "$build/perf/all_reduce_perf" -z 2 -b 8 -e 8 \
    -n "$iters" -w 1000 -c 0 | awk '!/^#/ && $1 == 8 { print $6; exit }'
}

mpi_time() {  # transport np
  local btl=(--mca btl vader,self)
  [[ "$1" == tcp ]] &&
    btl=(--mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
  mpirun --allow-run-as-root --oversubscribe -np "$2" --mca pml ob1 "${btl[@]}" \
    "$build/perf/mpi_allreduce_bench" "$bytes" "$bytes" "$iters" 1000 |
    awk '!/^#/ { print $2; exit }'
}

bytes=8
[[ "$coll" == barrier ]] && bytes=0

results=()
for case in "${cases[@]}"; do
  transport="${case%%:*}" np="${case##*:}"
  weft=() mpi=()
  for ((i = 1; i <= repeat; i++)); do
    weft+=("$(weft_time "$transport" "$np")")
    mpi+=("$(mpi_time "$transport" "$np")")
    echo "$transport np=$np run $i: weft ${weft[-1]} us, Open MPI ${mpi[-1]} us" >&2
  done
  results+=("$transport $np ${weft[*]} | ${mpi[*]}")
done

printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
print("| transport | ranks | weft us (median, min-max) | Open MPI us | weft / Open MPI |")
print("|---|---:|---:|---:|---:|")
for line in sys.stdin:
    head, mpi = line.split("|")
    transport, np, *weft = head.split()
    weft, mpi = [float(x) for x in weft], [float(x) for x in mpi.split()]
    w, m = statistics.median(weft), statistics.median(mpi)
    print(f"| {transport} | {np} | {w:.3f} ({min(weft):.3f}-{max(weft):.3f}) | "
          f"{m:.3f} ({min(mpi):.3f}-{max(mpi):.3f}) | {w / m:.2f} |")
'
