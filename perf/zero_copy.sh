#!/usr/bin/env bash
# Zero-copy buffers against ordinary ones and Open MPI, on one host, in one run: all_reduce_perf
# (float32 sum, blocking calls, -z 2) with -R 0 (ordinary buffers), -R 1 (weftMemAlloc,
# registered) and -R 2 (weftMemAlloc, symmetric windows), and Open MPI's MPI_Allreduce over
# shared memory (vader), taking turns REPEAT times; the table gives each one's median time per
# size, and the memory-bandwidth bound from perf/membw (docs/PERFORMANCE.md explains it).
#
#   perf/zero_copy.sh [NP ...]        default: 2 4
#
# Environment: BUILD (build dir, default build), MIN and MAX (sizes, default 1M and 64M),
# REPEAT (default 3), ITERS (default 20), OUT (log dir, default $BUILD/zero-copy).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$root/build}"
min="${MIN:-1M}"
max="${MAX:-64M}"
repeat="${REPEAT:-3}"
iters="${ITERS:-20}"
out="${OUT:-$build/zero-copy}"
nps=("$@")
((${#nps[@]})) || nps=(2 4)
rm -rf "$out"
mkdir -p "$out"
export WEFT_SOCKET_IFNAME=lo
minBytes=$(numfmt --from=iec "$min")
maxBytes=$(numfmt --from=iec "$max")

"$build/perf/membw" 64 5 2 >"$out/membw.1.txt"
for np in "${nps[@]}"; do
  for ((rep = 1; rep <= repeat; ++rep)); do
    for registration in 0 1 2; do
      echo "== np=$np run $rep/$repeat: weft -R $registration" >&2
      "$build/tools/weftrun" -n "$np" "$build/perf/all_reduce_perf" -z 2 -R "$registration" \
        -b "$min" -e "$max" -f 2 -n "$iters" -w 5 >"$out/weft_R${registration}_np$np.$rep.txt"
    done
    if [[ -x "$build/perf/mpi_allreduce_bench" ]] && command -v mpirun >/dev/null; then
      echo "== np=$np run $rep/$repeat: Open MPI" >&2
      mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 --mca btl vader,self \
        "$build/perf/mpi_allreduce_bench" "$minBytes" "$maxBytes" "$iters" 5 \
        >"$out/ompi_np$np.$rep.txt"
    fi
  done
done
"$build/perf/membw" 64 5 2 >"$out/membw.2.txt"
/usr/bin/python3 "$root/perf/zero_copy_table.py" "$out" "${nps[@]}"
