#!/usr/bin/env bash
# One collective's algorithms side by side on emulated clusters (tests/cluster/cluster.sh):
# every forced algorithm and `auto` (the cost model's choice, on links calibrated once per
# configuration) run in turns, ROUNDS times, the order rotating each round. Prints, per
# configuration and size, each algorithm's median out-of-place time and auto's over the fastest
# forced one (perf/cluster_algos_table.py).
#
#   perf/cluster_algos.sh COLL      COLL: allreduce, allgather, reducescatter, alltoall, broadcast,
#                                 reduce
#
# Environment: ALGOS (the forced algorithms; default: the collective's flat ones), CONFIGS
# (space-separated SHAPE.NUMBERING[.NODE:RATE] as in perf/cluster_ab.sh; default 4x2.block
# 4x2.interleave 3x2.block 2x3.interleave), ROUNDS (3), MAX (largest size, 16M), OUT
# (cluster-algos-COLL), BUILD (build).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
coll="${1:?usage: perf/cluster_algos.sh allreduce|allgather|reducescatter|alltoall|broadcast|reduce}"
case "$coll" in
  allreduce) binary=all_reduce_perf default_algos="ring recursive_doubling rabenseifner tree" ;;
  allgather) binary=all_gather_perf default_algos="ring recursive_doubling bruck two_level_leader" ;;
  reducescatter) binary=reduce_scatter_perf default_algos="ring recursive_halving" ;;
  alltoall) binary=alltoall_perf default_algos="pairwise bruck" ;;
  broadcast) binary=broadcast_perf default_algos="binomial chain two_level_leader" ;;
  reduce) binary=reduce_perf default_algos="binomial chain" ;;
  *) echo "perf/cluster_algos.sh: unknown collective '$coll'" >&2; exit 2 ;;
esac
build="$(cd "${BUILD:-$root/build}" && pwd)"
perf="$build/perf/$binary"
algos=(${ALGOS:-$default_algos} auto)
configs=(${CONFIGS:-4x2.block 4x2.interleave 3x2.block 2x3.interleave})
rounds="${ROUNDS:-3}"
max="${MAX:-16M}"
out="${OUT:-cluster-algos-$coll}"
mkdir -p "$out"
source "$root/perf/cluster_configs.sh"
# The calibration cache is keyed by host names, which every emulated cluster reuses.
export XDG_CACHE_HOME="$out/cache"

for config in "${configs[@]}"; do
  cluster_for "$config"
  "${cluster[@]}" env WEFT_TUNE_CALIBRATE=2 WEFT_DEBUG=INFO "$perf" -b 16 -e 16 -n 2 -w 1 -c 0 \
    2>&1 | sed -n "s|.*tuner: |$config: |p" >>"$out/calibration.log"
  for ((round = 1; round <= rounds; ++round)); do
    for ((i = 0; i < ${#algos[@]}; ++i)); do
      algo="${algos[(i + round) % ${#algos[@]}]}"
      forced=(env -u WEFT_ALGO)
      [[ "$algo" == auto ]] || forced=(env "WEFT_ALGO=$coll=$algo")
      run=("${cluster[@]}" "${forced[@]}" WEFT_TUNE_CALIBRATE=1 "$perf" -z 2 -c 0)
      "${run[@]}" -b 16 -e 64K -f 4 -n 200 -w 20 >"$out/$config.$algo.small.$round.txt" 2>&1
      "${run[@]}" -b 256K -e "$max" -f 4 -n 5 -w 2 >"$out/$config.$algo.large.$round.txt" 2>&1
    done
  done
  echo "== $config done" >&2
done
/usr/bin/python3 "$root/perf/cluster_algos_table.py" "$out"
