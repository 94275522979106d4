#!/usr/bin/env bash
# Side-by-side all-reduce (float32 sum) on this machine, in one run, libraries taking turns:
#
#   perf/compare.sh tcp [NP ...]   weft over TCP loopback (WEFT_TRANSPORT=tcp), Open MPI forced
#                                  onto TCP (--mca pml ob1 --mca btl tcp,self
#                                  --mca btl_tcp_if_include lo), torch.distributed's gloo
#   perf/compare.sh shm [NP ...]   weft's default on one host (shared memory), Open MPI over
#                                  shared memory (--mca pml ob1 --mca btl vader,self), gloo
#
# Default rank counts: 2 4. Every library makes blocking calls (all_reduce_perf -z 2, like
# MPI_Allreduce and dist.all_reduce). Small sizes (<= 64 KiB) run 2000 iterations, large ones 20
# (after warm-up). The libraries take turns REPEAT times and the table keeps each one's best
# time per size: this machine is shared and noisy, and the best of several runs is the most
# repeatable figure (the spread is in the logs). Prints markdown tables (time, busbw, weft's
# ratios), the peak resident memory of a weft rank, and writes a PNG plot.
# Environment: BUILD (build dir, default build), MAX (largest size; default 64M for tcp, 256M
# for shm), OUT (log dir, default $BUILD/compare-<mode>), REPEAT (default 3).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-tcp}"
shift || true
case "$mode" in
  tcp) defaultMax=64M ;;
  shm) defaultMax=256M ;;
  *) echo "usage: perf/compare.sh tcp|shm [NP ...]" >&2; exit 2 ;;
esac
build="${BUILD:-$root/build}"
max="${MAX:-$defaultMax}"
out="${OUT:-$build/compare-$mode}"
repeat="${REPEAT:-3}"
nps=("$@")
((${#nps[@]})) || nps=(2 4)
mkdir -p "$out"
python=/usr/bin/python3   # Debian's python, which has python3-torch
export WEFT_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo
maxBytes=$(numfmt --from=iec "$max")
if [[ "$mode" == tcp ]]; then
  weftEnv=(env WEFT_TRANSPORT=tcp)
  mpiTransport=(--mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
else
  weftEnv=(env)
  mpiTransport=(--mca btl vader,self)
fi

for np in "${nps[@]}"; do
  for ((rep = 1; rep <= repeat; ++rep)); do
    echo "== $mode np=$np run $rep/$repeat: weft" >&2
    "${weftEnv[@]}" "$build/tools/weftrun" -n "$np" "$build/perf/all_reduce_perf" -z 2 \
      -b 8 -e 64K -f 2 -n 2000 -w 100 >"$out/weft_np$np.small.$rep.txt"
    # The large sweep also records each rank's peak resident memory (GNU time, %M in KiB).
    "${weftEnv[@]}" "$build/tools/weftrun" -n "$np" /usr/bin/time -f "maxrss_kib %M" \
      "$build/perf/all_reduce_perf" -z 2 -b 128K -e "$max" -f 2 -n 20 -w 5 \
      >"$out/weft_np$np.large.$rep.txt" 2>"$out/weft_np$np.rss.$rep.txt"
    if [[ -x "$build/perf/mpi_allreduce_bench" ]] && command -v mpirun >/dev/null; then
      echo "== $mode np=$np run $rep/$repeat: Open MPI" >&2
      mpi=(mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 "${mpiTransport[@]}")
      "${mpi[@]}" "$build/perf/mpi_allreduce_bench" 8 65536 2000 100 >"$out/ompi_np$np.small.$rep.txt"
      "${mpi[@]}" "$build/perf/mpi_allreduce_bench" 131072 "$maxBytes" 20 5 \
        >"$out/ompi_np$np.large.$rep.txt"
    fi
    if "$python" -c "import torch.distributed" 2>/dev/null; then
      echo "== $mode np=$np run $rep/$repeat: gloo" >&2
      "$python" "$root/perf/baselines/gloo_allreduce_bench.py" "$np" 8 65536 500 50 \
        >"$out/gloo_np$np.small.$rep.txt"
      "$python" "$root/perf/baselines/gloo_allreduce_bench.py" "$np" 131072 "$maxBytes" 10 2 \
        >"$out/gloo_np$np.large.$rep.txt"
    fi
  done
done
"$python" "$root/perf/compare_table.py" "$out" "$mode" "${nps[@]}"
