#!/usr/bin/env bash
# DDP training (examples/torch_ddp_cnn.py, the seed's ~141k-parameter CNN) with the weft backend
# against gloo, side by side: on one machine (NPROCS ranks, default 4) and, where network
# namespaces can be made, on an emulated cluster of 4 nodes x 2 ranks (tests/cluster/cluster.sh).
# The backends alternate, REPEAT times each (default 3), so drift on a busy machine hits both.
#
#   perf/torch_ddp.sh                 # both layouts
#   LAYOUTS=local STEPS=100 perf/torch_ddp.sh
#
# Prints one line per run and a table of means: step time, gradient sync as the hook sees it,
# gradient sync once every rank has joined (the all-reduce itself), and a standalone blocking
# all-reduce of the gradient's size; the ratio column is gloo / weft. Results (JSON per run and
# the table) go to $OUT (default perf/results/torch_ddp).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$root/build}"
python="${WEFT_PYTHON:-/usr/bin/python3}"
repeat="${REPEAT:-3}" steps="${STEPS:-60}" warmup="${WARMUP:-10}" nprocs="${NPROCS:-4}"
layouts="${LAYOUTS:-local cluster}"
out="${OUT:-$root/perf/results/torch_ddp}"
example="$root/examples/torch_ddp_cnn.py"
mkdir -p "$out"
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

run_local() {  # backend json
  WEFT_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo "$python" "$example" --nprocs "$nprocs" \
    --backend "$1" --steps "$steps" --warmup "$warmup" --json-out "$2" | grep "^means"
}

run_cluster() {  # backend json
  # MASTER_PORT is free in every node's own namespace; the JSON is written by rank 0 on node0.
  "$root/tests/cluster/cluster.sh" --nodes 4 --ppn 2 --timeout 600 -- \
    "$root/tests/cluster/torch_env.sh" "$python" "$example" --backend "$1" --steps "$steps" \
    --warmup "$warmup" --json-out "$2" | grep "^means"
}

for layout in $layouts; do
  if [[ "$layout" == cluster ]]; then
    status=0
    "$root/tests/cluster/cluster.sh" --nodes 1 -- true >/dev/null 2>&1 || status=$?
    if ((status == 77)); then
      echo "torch_ddp: network namespaces are not available here; skipping the cluster layout"
      continue
    fi
  fi
  for ((i = 1; i <= repeat; i++)); do
    for backend in weft gloo; do
      json="$out/${layout}_${backend}_$i.json"
      echo "== $layout $backend run $i"
      "run_$layout" "$backend" "$json"
    done
  done
done

"$python" - "$out" "$repeat" $layouts <<'PY' | tee "$out/table.md"
import json, os, statistics, sys
out, repeat, layouts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
keys = [("mean_step_s", "step"), ("mean_hook_sync_s", "sync (hook)"),
        ("mean_sync_after_all_joined_s", "sync (all joined)"),
        ("mean_standalone_allreduce_s", "standalone all-reduce")]
print("| layout | measure | weft ms | gloo ms | gloo / weft |")
print("|---|---|---:|---:|---:|")
for layout in layouts:
    runs = {b: [json.load(open(os.path.join(out, f"{layout}_{b}_{i}.json")))
                for i in range(1, repeat + 1)
                if os.path.exists(os.path.join(out, f"{layout}_{b}_{i}.json"))]
            for b in ("weft", "gloo")}
    if not runs["weft"] or not runs["gloo"]:
        continue
    ranks = runs["weft"][0]["world_size"]
    for key, name in keys:
        w = statistics.mean(r[key] for r in runs["weft"]) * 1e3
        g = statistics.mean(r[key] for r in runs["gloo"]) * 1e3
        print(f"| {layout} ({ranks} ranks) | {name} | {w:.2f} | {g:.2f} | {g / w:.2f} |")
PY
