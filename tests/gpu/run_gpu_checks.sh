#!/usr/bin/env bash
# The GPU checks of weft in one go (README.md beside this file): build, correctness on 1, 2 and
# 4 ranks sharing the GPU, memcheck, all_reduce_perf on device buffers, the copy ceiling and the
# NCCL and gloo baselines, then one summary table.
#
#   tests/gpu/run_gpu_checks.sh
#
# Environment: OUT (log folder, default ./gpu-check-logs), BUILD (build folder, default
# /tmp/weft-gpu-build), CUDA_ARCH (default 90), BUDGET (seconds for the steps after the build,
# default 400), BUILD_TIMEOUT (default 600), PYTHON (one with torch; found otherwise).
# Exit status: 0 every step passed or skipped (a machine without a GPU skips them all) and the
# targets were met or could not be measured; 1 a step failed (build, mismatch, crash, timeout);
# 2 every step passed but a performance target was missed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-check-logs}
build=${BUILD:-/tmp/weft-gpu-build}
logs=$out/logs
mkdir -p "$logs" "$build"
export WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo} WEFT_TIMEOUT=${WEFT_TIMEOUT:-60}
export PATH=$PATH:/usr/local/cuda/bin
budget=${BUDGET:-400}
summary=()  # "step|result|numbers"
failed=0

# run_step NAME CAP COMMAND...: runs with a timeout (CAP, or what is left of the budget), logs to
# $logs/NAME.log, and records PASS (0), SKIP (77) or FAIL; sets $rc.
run_step() {
  local name=$1 cap=$2 left result
  shift 2
  left=$((deadline - SECONDS))
  ((cap > left)) && cap=$left
  if ((cap < 5)); then
    rc=77
    echo "SKIP: time budget spent" >"$logs/$name.log"
  else
    echo "== $name (timeout ${cap}s)"
    echo "\$ $*" >"$logs/$name.log"
    timeout -k 5 "$cap" "$@" >>"$logs/$name.log" 2>&1
    rc=$?
  fi
  local note
  note=$(grep -m1 -o 'SKIP: .*' "$logs/$name.log")
  case $rc in
    0) result=PASS ;;
    77) result=SKIP ;;
    124 | 137) result=FAIL note="timed out after ${cap}s" ;;
    *) result=FAIL note="exit $rc, see logs/$name.log" ;;
  esac
  [[ $result == FAIL ]] && failed=1
  summary+=("$name|$result|$note")
}
# Replaces the notes of the last row.
note_set() { summary[-1]="${summary[-1]%|*}|$1"; }
# The table, last; exits with $1.
finish() {
  tar czf "$out/logs.tar.gz" -C "$out" logs 2>/dev/null
  {
    echo
    echo "weft GPU checks: logs in $logs (and $out/logs.tar.gz), exit status $1"
    printf '%-24s %-7s %s\n' STEP RESULT NOTES
    for row in "${summary[@]}"; do
      IFS='|' read -r step result notes <<<"$row"
      printf '%-24s %-7s %s\n' "$step" "$result" "$notes"
    done
  } | tee "$out/summary.txt"
  exit "$1"
}

# ---- build ----------------------------------------------------------------------------------
nccl_hint=()
if [[ ! -e /usr/local/cuda/include/nccl.h ]]; then
  for py in ${PYTHON:-} python3 /usr/bin/python3; do
    dir=$("$py" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null) && break
  done
  [[ -n ${dir:-} ]] && nccl_hint=(-DNCCL_ROOT="$dir")
fi
configure_and_build() {
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" "${nccl_hint[@]}" || return 1
  local targets=(weft weftrun all_reduce_perf gpu_check copy_ceiling)
  cmake --build "$build" --target help | grep -q nccl_baseline && targets+=(nccl_baseline)
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
}
deadline=$((SECONDS + ${BUILD_TIMEOUT:-600}))
run_step build 100000 bash -c "$(declare -p here build nccl_hint)
  $(declare -f configure_and_build); configure_and_build"
if [[ $rc != 0 ]]; then
  tail -30 "$logs/build.log"
  finish 1
fi
bin=$build/weft
weftrun=$bin/tools/weftrun
gpu_check=$build/gpu_check
perf=$bin/perf/all_reduce_perf
deadline=$((SECONDS + budget))

# Column $3 (default 8: busbw out of place) of the all_reduce_perf-style row for $2 bytes in $1.
perf_busbw() {
  awk -v b="$2" -v c="${3:-8}" '$1 == b && $2 ~ /^[0-9]+$/ { print $c; exit }' "$logs/$1.log"
}

# ---- checks ---------------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
  run_step nvidia-smi 20 nvidia-smi
  [[ $rc == 0 ]] && note_set "$(nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | head -1)"
else
  summary+=("nvidia-smi|SKIP|not installed")
fi

counts=1,7,1048579,67108864
for n in 1 2 4; do
  run_step "gpu_check.np$n" 150 "$weftrun" --timeout 140 -n "$n" "$gpu_check" --counts "$counts"
  line=$(grep -m1 '^gpu_check:' "$logs/gpu_check.np$n.log")
  [[ -n $line ]] && note_set "$line"
  [[ $n == 1 ]] && gpu_rc=$rc
done

if [[ $gpu_rc == 77 ]]; then
  summary+=("memcheck.np2|SKIP|no CUDA device (see gpu_check.np1)")
elif [[ -x /usr/local/cuda/bin/compute-sanitizer ]]; then
  run_step memcheck.np2 120 "$weftrun" --timeout 110 -n 2 /usr/local/cuda/bin/compute-sanitizer \
    --tool memcheck --error-exitcode 3 "$gpu_check" --counts 7,1000 --types float32,bfloat16
  [[ $rc == 0 ]] && note_set "$(grep -m1 'ERROR SUMMARY' "$logs/memcheck.np2.log")"
else
  summary+=("memcheck.np2|SKIP|no /usr/local/cuda/bin/compute-sanitizer")
fi

for n in 2 4; do
  run_step "all_reduce_perf.np$n" 150 "$weftrun" --timeout 140 -n "$n" "$perf" -k device -s 1 \
    -b 8 -e 1G -f 2 -n 10 -w 2 -c 1
  bus=$(perf_busbw "all_reduce_perf.np$n" 268435456)
  wrong=$(sed -n 's/^# Out of bounds values *: *//p' "$logs/all_reduce_perf.np$n.log")
  [[ -n $bus ]] && note_set "busbw $bus GB/s at 256 MiB, wrong values: $wrong"
done
run_step copy_ceiling 30 "$build/copy_ceiling"
copy=$(sed -n 's/^COPY_GBPS_256MiB=//p' "$logs/copy_ceiling.log")
[[ -n $copy ]] && note_set "copy ${copy} GB/s at 256 MiB (bytes copied / time)"

if [[ -x $build/nccl_baseline ]]; then
  for n in 1 2 4; do
    NCCL_MULTI_RANK_GPU_ENABLE=1 run_step "nccl.np$n" 60 "$weftrun" --timeout 55 -n "$n" \
      "$build/nccl_baseline" -b 8 -e 1G
    alg=$(perf_busbw "nccl.np$n" 268435456 7)
    [[ -n $alg ]] && note_set "algbw $alg busbw $(perf_busbw "nccl.np$n" 268435456) GB/s at 256 MiB"
  done
else
  summary+=("nccl|SKIP|no NCCL header or library found at build time")
fi

py=${PYTHON:-}
for candidate in python3 /usr/bin/python3; do
  [[ -z $py ]] && "$candidate" -c 'import torch' 2>/dev/null && py=$candidate
done
run_step torch_gloo 200 "${py:-python3}" "$here/torch_gloo_cuda.py" --ranks 2,4 --seconds 45

# ---- targets --------------------------------------------------------------------------------
missed=0
bus=$(perf_busbw all_reduce_perf.np2 268435456)
if [[ -n $copy && -n $bus ]]; then
  ok=$(awk -v b="$bus" -v c="$copy" \
    'BEGIN { printf "%.0f%% %s", 100 * b / c, (b >= 0.4 * c) ? "ok" : "MISSED" }')
  [[ $ok == *MISSED ]] && missed=1
  note="np2 busbw ${bus} GB/s at 256 MiB = ${ok% *} of copy ${copy} GB/s (>= 40%)"
  summary+=("target busbw/copy|${ok##* }|$note")
else
  summary+=("target busbw/copy|SKIP|not measured")
fi
for n in 2 4; do
  gloo_rows=$(awk -v n="$n" '$7 == n && $1 ~ /^[0-9]+$/ { print $1, $6 }' "$logs/torch_gloo.log")
  ratios=$(echo "$gloo_rows" |
    while read -r size gloo; do
      weft=$(perf_busbw "all_reduce_perf.np$n" "$size")
      [[ -n $weft ]] && awk -v s="$size" -v w="$weft" -v g="$gloo" \
        'BEGIN { printf "%dM:%.0fx%s ", s / 1048576, w / g, (w >= 10 * g) ? "" : "(MISSED)" }'
    done)
  if [[ -z $ratios ]]; then
    summary+=("target weft/gloo np$n|SKIP|not measured")
  else
    result=ok
    [[ $ratios == *MISSED* ]] && result=MISSED && missed=1
    summary+=("target weft/gloo np$n|$result|busbw ratio (>= 10x): $ratios")
  fi
done

# ---- summary --------------------------------------------------------------------------------
status=0
((missed)) && status=2
((failed)) && status=1
finish $status
