#!/usr/bin/env bash
# Side-by-side all-reduce (float32 sum) on this machine, in one run: weft over TCP loopback,
# Open MPI forced onto TCP (--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo), and
# torch.distributed's gloo backend. Prints a markdown table per rank count (time and busbw of
# each, and weft's busbw ratio to each) and the peak resident memory of a weft rank.
#
#   perf/compare.sh [NP ...]        default: 2 4
# Environment: BUILD (build dir, default build), MAX (largest size, default 64M), OUT (log dir),
# REPEAT (default 3). Small sizes (<= 64 KiB) run 500 iterations, large ones 20, after warm-up,
# for every library. The libraries take turns REPEAT times and the table keeps each one's best
# time per size: this machine is shared and noisy, and the best of several runs is the most
# repeatable figure (the spread is in the logs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$root/build}"
max="${MAX:-64M}"
out="${OUT:-$build/compare}"
repeat="${REPEAT:-3}"
nps=("$@")
((${#nps[@]})) || nps=(2 4)
mkdir -p "$out"
python=/usr/bin/python3   # Debian's python, which has python3-torch
export WEFT_SOCKET_IFNAME=lo

bytes() { numfmt --from=iec "$1"; }
maxBytes=$(bytes "$max")

for np in "${nps[@]}"; do
  for ((rep = 1; rep <= repeat; ++rep)); do
    echo "== np=$np run $rep/$repeat: weft" >&2
    "$build/tools/weftrun" -n "$np" "$build/perf/all_reduce_perf" -b 8 -e 64K -f 2 -n 500 -w 50 \
      >"$out/weft_np$np.small.$rep.txt"
    # The large sweep also records each rank's peak resident memory (GNU time, %M in KiB).
    "$build/tools/weftrun" -n "$np" /usr/bin/time -f "maxrss_kib %M" \
      "$build/perf/all_reduce_perf" -b 128K -e "$max" -f 2 -n 20 -w 5 \
      >"$out/weft_np$np.large.$rep.txt" 2>"$out/weft_np$np.rss.$rep.txt"
    if [[ -x "$build/perf/mpi_allreduce_bench" ]] && command -v mpirun >/dev/null; then
      echo "== np=$np run $rep/$repeat: Open MPI (tcp)" >&2
      mpi=(mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 --mca btl tcp,self
           --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
      "${mpi[@]}" "$build/perf/mpi_allreduce_bench" 8 65536 500 50 >"$out/ompi_np$np.small.$rep.txt"
      "${mpi[@]}" "$build/perf/mpi_allreduce_bench" 131072 "$maxBytes" 20 5 \
        >"$out/ompi_np$np.large.$rep.txt"
    fi
    if "$python" -c "import torch.distributed" 2>/dev/null; then
      echo "== np=$np run $rep/$repeat: gloo" >&2
      "$python" "$root/perf/baselines/gloo_allreduce_bench.py" "$np" 8 65536 500 50 \
        >"$out/gloo_np$np.small.$rep.txt"
      "$python" "$root/perf/baselines/gloo_allreduce_bench.py" "$np" 131072 "$maxBytes" 20 5 \
        >"$out/gloo_np$np.large.$rep.txt"
    fi
  done
done
"$python" "$root/perf/compare_table.py" "$out" "${nps[@]}"
