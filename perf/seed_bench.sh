#!/usr/bin/env bash
# The seed benchmark: all-reduce (float32 sum, blocking calls) on emulated multi-node clusters
# (tests/cluster/cluster.sh: one network namespace per node, shared memory within a node, TCP
# between nodes), for weft's all-reduce algorithms, torch.distributed's gloo and Open MPI.
#
#   perf/seed_bench.sh            (as root; the namespaces need it)
#
# For each layout K x P (K nodes, P ranks per node; or N0+N1+... for uneven nodes, N0 ranks on
# node0, N1 on node1, ...: cluster.sh --layout N0,N1,...), numbering (block: ranks 0..P-1 on
# node0; interleave: rank r on node r % K, on uneven nodes round robin over the nodes that still
# have room) and link rate (none, or tc tbf on each node's link, both directions), every
# library/algorithm runs:
#   - the seed's gradient: one size, SEED_BYTES (141,000 float32 = 564,000 bytes), POINT_ITERS
#   - a sweep SWEEP_MIN..SWEEP_MAX by SWEEP_FACTOR: sizes up to SWEEP_SPLIT with SMALL_ITERS
#     iterations, larger ones with LARGE_ITERS (big sizes over a 1 Gbit/s link take seconds each)
# weft: all_reduce_perf -z 2 -d float -o sum, WEFT_ALGO=allreduce=<algo> per ALGOS entry ("auto":
# WEFT_ALGO unset, the cost model chooses with WEFT_TUNE_CALIBRATE=2; "tuned": WEFT_ALGO unset,
# WEFT_TUNE_FILE= the configuration's measured tuning table; "online": as auto, with
# WEFT_TUNE_ONLINE=ONLINE_CALLS, and at least ONLINE_WARMUP warm-up calls per size so that the
# trials (up to 3 candidates x (1 + ONLINE_CALLS) calls) end before the timed calls: its steady
# state, what a training loop sees after its first steps); the out-of-place time is reported.
# For "tuned", each configuration first runs weft_tune measure (all-reduce, the sweep's sizes
# SWEEP_MIN..SWEEP_MAX by SWEEP_FACTOR; the table's rules cover the sizes between them, the seed
# size too) under the same layout, numbering and rate, before the repetitions: the table goes to
# <config>/table.txt, its stdout to <config>/measure.txt; if it fails, "tuned" is marked "fail"
# for that configuration. An algorithm that fails (not implemented yet, wrong result, timeout) is
# marked "fail" and the run goes on.
# Results: OUT/<layout>.<numbering>.<rate>/<lib>.<part>.r<rep>.txt, per-run logs under .../logs/,
# and OUT/summary.md (printed at the end): time in us per size and library/algorithm, ratios,
# and a summary of the targets (auto and tuned against the best forced algorithm and Open MPI).
# Uneven layouts run Open MPI through tests/cluster/mpirun.sh --layout (rank r on weft's rank r's
# node) and gloo with cluster.sh's rank variables, like the even ones.
#
# Environment (defaults in brackets):
#   BUILD [build]  OUT [$BUILD/seed-bench]  LAYOUTS ["4x2 2x4"; KxP or N0+N1+..., e.g. 3+2+1]
#   NUMBERINGS ["block interleave"]  RATES ["none 1gbit"]
#   ALGOS ["ring recursive_doubling tree two_level_leader two_level_split two_level_shm
#          two_level_replicated rabenseifner auto tuned"]
#   LIBS ["weft gloo mpi"]  SEED_BYTES [564000]  POINT_ITERS [100]  SWEEP_MIN [16]
#   SWEEP_MAX [64M]  SWEEP_FACTOR [4]  SWEEP_SPLIT [64K]  SMALL_ITERS [200]  LARGE_ITERS [3]
#   SWEEP [1; 0 runs the seed size only]  JOB_TIMEOUT [300 s per run]
#   MEASURE_TIMEOUT [900 s: weft_tune measure, per configuration, for "tuned"]
#   TUNE_ROUNDS [3]  TUNE_TARGET_MS [20]: weft_tune measure --rounds / --target-ms
#   ONLINE_CALLS [3]  ONLINE_WARMUP [13]: "online" (not in the default ALGOS)
#   REPEAT [1: how many times every library/algorithm runs, taking turns; the tables keep each
#   one's best time, the most repeatable figure on a noisy machine]
#   CHECK [1: all_reduce_perf -c, correctness iterations per size, for the seed size and the
#   small sizes; 0 = off]  LARGE_CHECK [0: the same for the large sizes, where checking 64 MiB
#   on every rank takes far longer than the timed calls]
# The iteration counts time a ~100 us call over 20 ms per size: with fewer, one scheduler
# hiccup on a 2-core machine decides a cell. On 2 cores, LAYOUTS=3x2 NUMBERINGS=block RATES=none
# LIBS="weft mpi" REPEAT=3 takes about 3 minutes; a 1gbit configuration several times that.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${BUILD:-$root/build}" && pwd)"
out="${OUT:-$build/seed-bench}"
layouts=(${LAYOUTS:-4x2 2x4})
numberings=(${NUMBERINGS:-block interleave})
rates=(${RATES:-none 1gbit})
algos=(${ALGOS:-ring recursive_doubling tree two_level_leader two_level_split two_level_shm two_level_replicated rabenseifner auto tuned})
libs=(${LIBS:-weft gloo mpi})
seed_bytes="${SEED_BYTES:-564000}"
point_iters="${POINT_ITERS:-100}"
sweep="${SWEEP:-1}"
sweep_min="$(numfmt --from=iec "${SWEEP_MIN:-16}")"
sweep_max="$(numfmt --from=iec "${SWEEP_MAX:-64M}")"
sweep_split="$(numfmt --from=iec "${SWEEP_SPLIT:-64K}")"
factor="${SWEEP_FACTOR:-4}"
small_iters="${SMALL_ITERS:-200}"
large_iters="${LARGE_ITERS:-3}"
job_timeout="${JOB_TIMEOUT:-300}"
measure_timeout="${MEASURE_TIMEOUT:-900}"
tune_rounds="${TUNE_ROUNDS:-3}"
tune_target_ms="${TUNE_TARGET_MS:-20}"
online_calls="${ONLINE_CALLS:-3}"
online_warmup="${ONLINE_WARMUP:-13}"
check="${CHECK:-1}"
repeat="${REPEAT:-1}"
rep=1
large_check="${LARGE_CHECK:-0}"

cluster="$root/tests/cluster/cluster.sh"
python=/usr/bin/python3   # Debian's python, which has python3-torch
weft_perf="$build/perf/all_reduce_perf"
weft_tune="$build/tools/weft_tune"
mpi_bench="$build/perf/mpi_allreduce_bench"
gloo_bench="$root/perf/baselines/gloo_allreduce_bench.py"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

log() { echo "seed_bench: $*" >&2; }

# The sweep's two parts as "NAME MIN MAX ITERS WARMUP CHECK": sizes stay on the MIN * FACTOR^k
# grid.
sweep_parts() {
  local last_small=$sweep_min first_large
  while ((last_small * factor <= sweep_split && last_small * factor <= sweep_max)); do
    last_small=$((last_small * factor))
  done
  echo "small $sweep_min $last_small $small_iters 5 $check"
  first_large=$((last_small * factor))
  ((first_large <= sweep_max)) && echo "large $first_large $sweep_max $large_iters 1 $large_check"
  return 0
}

# The parts a library runs: "NAME MIN MAX ITERS WARMUP CHECK" lines.
parts() {
  echo "point $seed_bytes $seed_bytes $point_iters 5 $check"
  if ((sweep)); then sweep_parts; fi
}

# Runs one job under cluster.sh; its rank-0 stdout goes to FILE, everything else to logs.
# Usage: run_job [--timeout SEC] FILE -- cluster.sh options -- command. A failure is noted, not
# fatal: FILE becomes FILE.failed.
run_job() {
  local timeout="$job_timeout"
  if [[ "$1" == --timeout ]]; then timeout=$2; shift 2; fi
  local file="$1" name
  shift
  name="$(basename "$file" .txt)"
  local logs="$config_dir/logs/$name"
  mkdir -p "$logs"
  local start=$SECONDS status=0
  "$cluster" --timeout "$timeout" --keep-logs "$logs" "${cluster_options[@]}" "$@" \
    </dev/null >"$file" 2>"$logs/rank0.stderr" || status=$?
  if ((status != 0)); then
    log "  $name FAILED (status $status, $((SECONDS - start)) s): see $logs"
    echo "$config $name status $status" >>"$out/failures.txt"
    mv "$file" "$file.failed"
  else
    log "  $name ok ($((SECONDS - start)) s)"
  fi
}

# For "tuned": weft_tune measure on this configuration, writing $config_dir/table.txt (its
# stdout: measure.txt). Sets tuned_ok. The measurement runs without any of the variables that
# would steer it (WEFT_ALGO, a table already named, calibration settings).
measure_table() {
  local table="$config_dir/table.txt"
  rm -f "$table"
  tuned_ok=0
  if [[ ! -x "$weft_tune" ]]; then
    log "  no $weft_tune: tuned fails"
    echo "$config measure: no $weft_tune (tuned marked failed)" >>"$out/failures.txt"
    return 0
  fi
  run_job --timeout "$measure_timeout" "$config_dir/measure.txt" -- \
    env -u WEFT_ALGO -u WEFT_TUNE_FILE -u WEFT_TUNE_CALIBRATE "$weft_tune" measure \
    --colls allreduce --min "$sweep_min" --max "$sweep_max" --factor "$factor" \
    --rounds "$tune_rounds" --target-ms "$tune_target_ms" --out "$table"
  if [[ -f "$config_dir/measure.txt" && -s "$table" ]]; then
    tuned_ok=1
  else
    [[ ! -f "$config_dir/measure.txt" ]] || {
      log "  measure wrote no table $table"
      echo "$config measure: no table written" >>"$out/failures.txt"
    }
    echo "$config weft_tuned: not run, the measurement failed" >>"$out/failures.txt"
  fi
}

run_weft() {
  local algo="$1" part lo hi iters warmup part_check algo_env=(env -u WEFT_ALGO -u WEFT_TUNE_FILE)
  # auto: the tuner chooses, from links it measures at init (WEFT_TUNE_CALIBRATE=2: measure
  # every job, since the rate limit changes between jobs on the same emulated hosts).
  # tuned: the rules of the table measured for this configuration.
  if [[ "$algo" == auto ]]; then
    algo_env+=(WEFT_TUNE_CALIBRATE=2)
  elif [[ "$algo" == online ]]; then
    algo_env+=(WEFT_TUNE_CALIBRATE=2 "WEFT_TUNE_ONLINE=$online_calls")
  elif [[ "$algo" == tuned ]]; then
    algo_env=(env -u WEFT_ALGO -u WEFT_TUNE_CALIBRATE "WEFT_TUNE_FILE=$config_dir/table.txt")
  else
    algo_env=(env -u WEFT_TUNE_FILE "WEFT_ALGO=allreduce=$algo")
  fi
  while read -r part lo hi iters warmup part_check; do
    [[ "$algo" != online ]] || ((warmup >= online_warmup)) || warmup=$online_warmup
    local file="$config_dir/weft_$algo.$part.r$rep.txt"
    if [[ "$algo" == tuned ]] && ((!tuned_ok)); then
      : >"$file.failed"   # no table: shown as "fail"
      continue
    fi
    run_job "$file" -- "${algo_env[@]}" "$weft_perf" -z 2 -d float \
      -o sum -b "$lo" -e "$hi" -f "$factor" -n "$iters" -w "$warmup" -c "$part_check"
    # A table weft did not take (another layout's) would leave the model deciding: not "tuned".
    if [[ "$algo" == tuned && -f "$file" ]] &&
       grep -q "has no table for this layout" "$config_dir/logs/$(basename "$file" .txt)/rank0.stderr"; then
      log "  $(basename "$file" .txt): weft refused the table (another layout): marked failed"
      echo "$config $(basename "$file" .txt) refused the table" >>"$out/failures.txt"
      mv "$file" "$file.failed"
    fi
  done < <(parts)
}

# One job for all parts: starting torch on every rank costs seconds on a small machine.
run_gloo() {
  local part lo hi iters warmup part_check sweeps=()
  while read -r part lo hi iters warmup part_check; do sweeps+=("$lo" "$hi" "$iters" "$warmup" "$factor"); done < <(parts)
  run_job "$config_dir/gloo.all.r$rep.txt" -- "$root/tests/cluster/torch_env.sh" "$python" \
    "$gloo_bench" "$nranks" "${sweeps[@]}"
}

run_mpi() {
  local part lo hi iters warmup part_check
  while read -r part lo hi iters warmup part_check; do
    run_job "$config_dir/mpi.$part.r$rep.txt" --raw -- "$root/tests/cluster/mpirun.sh" \
      "${mpi_layout[@]}" --numbering "$numbering" -- "$mpi_bench" "$lo" "$hi" "$iters" "$warmup" "$factor"
  done < <(parts)
}

# Sets nodes, nranks, layout_options (cluster.sh) and mpi_layout (mpirun.sh) for a LAYOUTS entry:
# KxP, or N0+N1+... (ranks per node, uneven). Fails on anything else.
parse_layout() {
  local count counts
  if [[ "$1" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]]; then
    nodes=${BASH_REMATCH[1]} nranks=$((BASH_REMATCH[1] * BASH_REMATCH[2]))
    layout_options=(--nodes "$nodes" --ppn "${BASH_REMATCH[2]}")
    mpi_layout=(--ppn "${BASH_REMATCH[2]}")
  elif [[ "$1" =~ ^[1-9][0-9]*(\+[1-9][0-9]*)+$ ]]; then
    IFS=+ read -ra counts <<<"$1"
    nodes=${#counts[@]} nranks=0
    for count in "${counts[@]}"; do nranks=$((nranks + count)); done
    layout_options=(--layout "${1//+/,}")
    mpi_layout=(--layout "${1//+/,}")
  else
    return 1
  fi
}

# Which libraries can run here; missing ones are skipped with a note.
available() {
  case "$1" in
    weft) [[ -x "$weft_perf" ]] || { log "no $weft_perf: build weft first"; return 1; } ;;
    gloo) "$python" -c "import torch.distributed" 2>/dev/null || { log "no torch: gloo skipped"; return 1; } ;;
    mpi) [[ -x "$mpi_bench" ]] && command -v mpirun >/dev/null ||
           { log "no $mpi_bench or mpirun: Open MPI skipped"; return 1; } ;;
  esac
}

write_meta() {
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
      git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
    echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "best of $repeat run(s) each; seed size: $seed_bytes B x $point_iters iterations; sweep: $([[ $sweep == 1 ]] &&
      echo "$sweep_min..$sweep_max B x$factor, $small_iters/$large_iters iterations" || echo off)"
    if [[ " ${algos[*]} " == *" tuned "* ]]; then
      echo "tuned: per configuration, weft_tune measure --colls allreduce --min $sweep_min --max $sweep_max --factor $factor --rounds $tune_rounds --target-ms $tune_target_ms"
    fi
  } >"$out/meta.txt"
}

main() {
  # Probe once: without namespaces there is nothing to measure (cluster.sh says why).
  local probe status=0
  probe="$("$cluster" --nodes 1 -- true 2>&1)" || status=$?
  if ((status != 0)); then echo "$probe" >&2; exit "$status"; fi
  local run_libs=() lib
  for lib in "${libs[@]}"; do available "$lib" && run_libs+=("$lib"); done
  for layout in "${layouts[@]}"; do
    parse_layout "$layout" || { log "bad layout '$layout': KxP (e.g. 4x2) or N0+N1+... (e.g. 3+2+1)"; exit 2; }
  done
  # auto is the cost model's choice only while no table sits on the default search path.
  local dir
  for dir in "${XDG_CONFIG_HOME:-$HOME/.config}/weft/tuning" /etc/weft/tuning; do
    if compgen -G "$dir/*.txt" >/dev/null; then
      log "note: $dir holds tuning tables: auto uses one that matches a layout instead of the model"
    fi
  done
  rm -f "$out/failures.txt"
  write_meta
  local start=$SECONDS layout rate algo
  for layout in "${layouts[@]}"; do
    parse_layout "$layout"
    for numbering in "${numberings[@]}"; do
      for rate in "${rates[@]}"; do
        config="$layout.$numbering.$rate"
        config_dir="$out/$config"
        rm -rf "$config_dir"
        mkdir -p "$config_dir"
        cluster_options=("${layout_options[@]}" --numbering "$numbering")
        [[ "$rate" == none ]] || cluster_options+=(--rate "$rate")
        log "== $config ($((SECONDS - start)) s elapsed)"
        tuned_ok=0
        if [[ " ${run_libs[*]} " == *" weft "* && " ${algos[*]} " == *" tuned "* ]]; then
          measure_table
        fi
        for ((rep = 1; rep <= repeat; ++rep)); do
          for lib in "${run_libs[@]}"; do
            case "$lib" in
              weft) for algo in "${algos[@]}"; do run_weft "$algo"; done ;;
              gloo) run_gloo ;;
              mpi) run_mpi ;;
            esac
          done
        done
      done
    done
  done
  log "all runs done in $((SECONDS - start)) s"
  "$python" "$root/perf/seed_table.py" "$out" | tee "$out/summary.md"
}

main
