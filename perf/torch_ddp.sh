#!/usr/bin/env bash
# DDP training (examples/torch_ddp_cnn.py, the seed's ~141k-parameter CNN), side by side: weft's
# backend, gloo (DDP's flat all-reduce), gloo with the seed's two-level hook (ADR-0020,
# perf/two_level_hook.py) and weft with a barrier in place of each all-reduce (the step without
# the gradient's data: what the data adds is the difference), on one machine (NPROCS ranks,
# default 4) and, where network namespaces can be made, on an emulated cluster of 4 nodes x 2
# ranks (tests/cluster/cluster.sh) with block and with interleaved numbering. The configurations alternate, REPEAT times each
# (default 3), so drift on a busy machine hits all of them; each round also times weft's own
# blocking C all-reduce of the gradient's bytes on the same layout (all_reduce_perf -z 2, in
# place, as DDP's is).
#
#   perf/torch_ddp.sh                 # every layout
#   LAYOUTS=cluster STEPS=100 perf/torch_ddp.sh
#
# LAYOUTS: local, cluster (block numbering), cluster_interleave, pair (2 emulated nodes x 1 rank:
# on 2 cores every rank has a core of its own). BUCKET_MB (default 25: the whole gradient in one
# bucket) is DDP's bucket cap, e.g. 0.1 for several buckets that overlap the backward pass.
# CONFIGS (default "weft gloo gloo_two_level weft_barrier") may add weft_unbound and
# weft_bound: weft's backend with WEFT_BIND=none and =auto, and compute_only: no communication
# in the step at all (the floor any sync adds to) (the others run as the launcher
# leaves them: cluster.sh, like weftrun, binds where ranks outnumber cores).
# Prints one line per run and a table of means: step time, gradient sync as the hook sees it
# (from this rank's call), gradient sync once every rank has joined, the sync hidden by the
# backward pass and the sync left exposed after it, and a standalone blocking all-reduce of the
# gradient's size through torch, and the CPU time every rank's process spent per step (summed
# over the ranks: where ranks outnumber cores, the step is at least that over the cores). Results (JSON per run and the table) go to $OUT (default
# perf/results/torch_ddp).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$root/build}"
python="${WEFT_PYTHON:-/usr/bin/python3}"
repeat="${REPEAT:-3}" steps="${STEPS:-60}" warmup="${WARMUP:-10}" nprocs="${NPROCS:-4}"
layouts="${LAYOUTS:-local cluster cluster_interleave}"
bucket="${BUCKET_MB:-25}"
configs=(${CONFIGS:-weft gloo gloo_two_level weft_barrier})
out="${OUT:-$root/perf/results/torch_ddp}"
example="$root/examples/torch_ddp_cnn.py"
mkdir -p "$out"
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

config_args() {  # config: the example's --backend and --hook
  case "$1" in
    weft) echo "--backend weft" ;;
    gloo) echo "--backend gloo" ;;
    gloo_two_level) echo "--backend gloo --hook two_level" ;;
    weft_barrier) echo "--backend weft --hook barrier" ;;
    compute_only) echo "--backend weft --hook none" ;;
    weft_unbound | weft_bound) echo "--backend weft" ;;
  esac
}

numbering() {  # layout
  [[ "$1" == cluster_interleave ]] && echo interleave || echo block
}

cluster() {  # layout command...: run on the layout's emulated nodes
  local layout=$1
  shift
  if [[ "$layout" == pair ]]; then
    "$root/tests/cluster/cluster.sh" --nodes 2 --ppn 1 --timeout 600 -- "$@"
  else
    "$root/tests/cluster/cluster.sh" --nodes 4 --ppn 2 --numbering "$(numbering "$layout")" \
      --timeout 600 -- "$@"
  fi
}

bind_env() {  # config: the WEFT_BIND it runs with (others inherit the launcher's)
  case "$1" in
    weft_unbound) echo "WEFT_BIND=none" ;;
    weft_bound) echo "WEFT_BIND=auto" ;;
    *) ;;
  esac
}

run_ddp() {  # layout config json
  local args=($(config_args "$2") --steps "$steps" --warmup "$warmup" --bucket-cap-mb "$bucket"
    --json-out "$3") bind=($(bind_env "$2"))
  if [[ "$1" == local ]]; then
    env "${bind[@]}" WEFT_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo "$python" "$example" \
      --nprocs "$nprocs" "${args[@]}" | grep "^means"
  else
    # MASTER_PORT is free in every node's own namespace; the JSON is written by rank 0 on node0.
    cluster "$1" env "${bind[@]}" "$root/tests/cluster/torch_env.sh" "$python" "$example" \
      "${args[@]}" | grep "^means"
  fi
}

run_c() {  # layout bytes: weft's blocking in-place C all-reduce time in us
  local perf=("$build/perf/all_reduce_perf" -b "$2" -e "$2" -n 200 -w 20 -z 2 -c 0)
  if [[ "$1" == local ]]; then
    WEFT_SOCKET_IFNAME=lo "$build/tools/weftrun" -n "$nprocs" "${perf[@]}"
  else
    cluster "$1" "${perf[@]}"
  fi | awk -v b="$2" '!/^#/ && $1 == b { print $10; exit }'
}

for layout in $layouts; do
  if [[ "$layout" != local ]]; then
    status=0
    "$root/tests/cluster/cluster.sh" --nodes 1 -- true >/dev/null 2>&1 || status=$?
    if ((status == 77)); then
      echo "torch_ddp: network namespaces are not available here; skipping the cluster layout"
      continue
    fi
  fi
  for ((i = 1; i <= repeat; i++)); do
    for config in "${configs[@]}"; do
      json="$out/${layout}_${config}_$i.json"
      echo "== $layout $config run $i"
      run_ddp "$layout" "$config" "$json"
    done
    bytes=$("$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['gradient_bytes'])" \
      "$out/${layout}_${configs[0]}_$i.json")
    c_us=$(run_c "$layout" "$bytes")
    echo "== $layout C all-reduce of $bytes bytes: $c_us us"
    echo "{\"c_allreduce_s\": $(python3 -c "print($c_us * 1e-6)")}" >"$out/${layout}_c_$i.json"
  done
done

"$python" - "$out" "$repeat" "${configs[*]}" $layouts <<'PY' | tee "$out/table.md"
import json, os, statistics, sys
out, repeat, configs, layouts = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
titles = {"weft": "weft", "gloo": "gloo flat", "gloo_two_level": "gloo two-level hook",
          "weft_barrier": "weft, barrier only", "weft_unbound": "weft, WEFT_BIND=none",
          "weft_bound": "weft, WEFT_BIND=auto", "compute_only": "no sync (compute alone)"}
keys = [("mean_step_s", "step"), ("mean_hook_sync_s", "sync (hook)"),
        ("mean_sync_after_all_joined_s", "sync (all joined)"),
        ("mean_sync_hidden_s", "sync hidden by backward"),
        ("mean_sync_exposed_s", "sync exposed after backward"),
        ("mean_standalone_allreduce_s", "standalone all-reduce"),
        ("cpu_per_step_all_ranks_s", "CPU time per step, all ranks' processes")]
print("Medians over runs, ms. weft, barrier only: a barrier in place of each all-reduce (the "
      "step without the gradient's data). C: weft's blocking C all-reduce of the gradient's "
      "bytes.\n")
print("| layout | measure | " + " | ".join(titles[c] for c in configs) + " | weft C all-reduce |")
print("|---|---|" + "---:|" * (len(configs) + 1))
def load(name):
    return [json.load(open(os.path.join(out, f"{name}_{i}.json"))) for i in range(1, repeat + 1)
            if os.path.exists(os.path.join(out, f"{name}_{i}.json"))]
for layout in layouts:
    runs = {c: load(f"{layout}_{c}") for c in configs}
    c_runs = load(f"{layout}_c")
    if not all(runs[c] for c in configs):
        continue
    ranks = runs[configs[0]][0]["world_size"]
    c = statistics.median(r["c_allreduce_s"] for r in c_runs) * 1e3 if c_runs else float("nan")
    for key, name in keys:
        if any(key not in r for conf in configs for r in runs[conf]):
            continue  # runs from before the measure existed
        cells = [statistics.median(r[key] for r in runs[conf]) * 1e3 if runs[conf]
                 else float("nan") for conf in configs]
        print(f"| {layout} ({ranks} ranks) | {name} | " + " | ".join(f"{v:.2f}" for v in cells)
              + f" | {c:.2f} |")
PY
