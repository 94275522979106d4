#!/usr/bin/env bash
# Two builds of libweft side by side on emulated clusters (tests/cluster/cluster.sh), each
# loaded in turn with LD_PRELOAD into the same all_reduce_perf, in alternating order, ROUNDS
# times per configuration: how a change to the tuner moves what `auto` picks, measured. Both
# builds calibrate their links first (WEFT_TUNE_CALIBRATE=2, logged to OUT/calibration.log) and
# then read their caches (=1). perf/cluster_ab_table.py prints B's median time over A's per
# configuration and size.
#
#   perf/cluster_ab.sh LIB_A LIB_B      e.g. perf/cluster_ab.sh /tmp/before/libweft.so.0 \
#                                                 /tmp/after/libweft.so.0
#
# Build each side as one shared library (cmake -DWEFT_UNITY_BUILD=ON, target weft).
# Environment: CONFIGS (space-separated SHAPE.NUMBERING[.NODE:RATE]: SHAPE is KxP or uneven
# counts joined by '+', e.g. "4x2.block 3+2+1.interleave 3x2.block.2:100mbit", the last with
# node 2's link limited), ROUNDS (3), MAX (largest size, 64M), OUT (cluster-ab), PERF (the
# all_reduce_perf binary, build/perf/all_reduce_perf), ENV_A and ENV_B (variables for one side
# only, e.g. ENV_A=WEFT_BIND=none ENV_B=WEFT_BIND=auto with the same library on both sides).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
a="${1:?usage: perf/cluster_ab.sh LIB_A LIB_B}"
b="${2:?usage: perf/cluster_ab.sh LIB_A LIB_B}"
configs=(${CONFIGS:-4x2.block 4x2.interleave 2x4.block 2x4.interleave 3x2.block 3x2.interleave 2x3.block 2x3.interleave 3+2+1.block 3+2+1.interleave})
rounds="${ROUNDS:-3}"
max="${MAX:-64M}"
out="${OUT:-cluster-ab}"
env_a=(${ENV_A:-})
env_b=(${ENV_B:-})
perf="${PERF:-$root/build/perf/all_reduce_perf}"
mkdir -p "$out"
source "$root/perf/cluster_configs.sh"
# The calibration cache is keyed by host names, which every emulated cluster reuses.
export XDG_CACHE_HOME="$out/cache"

for config in "${configs[@]}"; do
  cluster_for "$config"
  for side in A B; do
    lib="$a" side_env=("${env_a[@]}")
    [[ "$side" == B ]] && lib="$b" side_env=("${env_b[@]}")
    "${cluster[@]}" env LD_PRELOAD="$lib" "${side_env[@]}" WEFT_TUNE_CALIBRATE=2 WEFT_DEBUG=INFO \
      "$perf" -b 16 -e 16 -n 2 -w 1 -c 0 2>&1 | sed -n "s|.*tuner: |$config $side: |p" \
      >>"$out/calibration.log"
  done
  for ((round = 1; round <= rounds; ++round)); do
    order=(A B)
    ((round % 2)) || order=(B A)
    for side in "${order[@]}"; do
      lib="$a" side_env=("${env_a[@]}")
      [[ "$side" == B ]] && lib="$b" side_env=("${env_b[@]}")
      run=("${cluster[@]}" env LD_PRELOAD="$lib" "${side_env[@]}" WEFT_TUNE_CALIBRATE=1 "$perf" -z 2 -c 0)
      "${run[@]}" -b 16 -e 64K -f 4 -n 200 -w 20 >"$out/$config.$side.small.$round.txt" 2>&1
      "${run[@]}" -b 256K -e "$max" -f 4 -n 5 -w 2 >"$out/$config.$side.large.$round.txt" 2>&1
    done
  done
  echo "== $config done" >&2
done
/usr/bin/python3 "$root/perf/cluster_ab_table.py" "$out"
