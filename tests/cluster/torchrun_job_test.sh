#!/usr/bin/env bash
# weft under torchrun across three emulated hosts (c10d rendezvous), with no WEFT_* variable
# set: one torchrun agent per node, 2 workers each. Run under cluster.sh --raw:
#
#   cluster.sh --raw --nodes 3 -- torchrun_job_test.sh BUILD_DIR SOURCE_DIR
#
# torchrun is `python3 -m weft_torch.run`: torchrun itself, with the fix Debian's torch 1.13 needs
# to start any worker (see bindings/torch/weft_torch/run.py).
# 1. all_reduce_perf -c 1 with --no_python: #wrong 0 and 6 ranks on 3 nodes in rank 0's log (weft
#    finds rank 0 at MASTER_ADDR:MASTER_PORT+1).
# 2. The DDP example on backend weft for a few steps (the rendezvous through torch's store).
# 3. Rank 5 killed mid-run: every agent exits nonzero, a survivor names rank 5 or 4 (node2, whose agent ends both), and no
#    process is left.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
(($# == 2)) || { echo "usage: torchrun_job_test.sh BUILD_DIR SOURCE_DIR" >&2; exit 2; }
build=$1 source=$2
python=/usr/bin/python3
[[ -f "$build/python/weft_torch/run.py" ]] || { echo "SKIP: weft_torch is not built"; exit 77; }
"$python" -c "import torch" 2>/dev/null || { echo "SKIP: $python cannot import torch"; exit 77; }

while read -r name; do unset "$name"; done < <(compgen -e | grep '^WEFT_' || true)
export WEFT_DEBUG=INFO PYTHONPATH="$build/python" OMP_NUM_THREADS=1
read -ra hosts <<<"$CLUSTER_HOSTNAMES"

work="$(mktemp -d /tmp/weft-torchrun.XXXXXX)"
export TMPDIR="$work"  # torchrun's agents leave torchelastic_* folders there
program="$work/all_reduce_perf"  # a name of this run's own, for the leftovers check
ln -s "$build/perf/all_reduce_perf" "$program"
agents=()
cleanup() {
  local pid
  for pid in "${agents[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  pid="$(pgrep -f "$work" || true)"
  [[ -z "$pid" ]] || kill -9 $pid 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL (torchrun): $*" >&2; exit 1; }
# shellcheck source=job_checks.sh
source "$here/job_checks.sh"

# Starts one agent per node, each with the given worker command; returns the agents' statuses
# in $work/<case>.status.
run_job() {
  local case=$1 id=$2
  shift 2
  agents=()
  local i
  for i in "${!hosts[@]}"; do
    "$here/ns_exec.sh" "${hosts[i]}" "$python" -m weft_torch.run --nnodes 3 --nproc_per_node 2 \
      --rdzv_backend c10d --rdzv_endpoint "${hosts[0]}:29400" --rdzv_id "$id" "$@" \
      >"$work/$case.node$i.out" 2>"$work/$case.node$i.log" &
    agents+=($!)
  done
  : >"$work/$case.status"
  for i in "${!agents[@]}"; do
    local status=0
    wait "${agents[i]}" || status=$?
    echo "$status" >>"$work/$case.status"
  done
  agents=()
}

echo "== torchrun: all_reduce_perf -c 1 on 3 hosts x 2 workers (--no_python)"
run_job perf perf --no_python "$program" -b 8 -e 1M -f 4 -c 1
[[ "$(sort -u "$work/perf.status")" == 0 ]] ||
  { tail -n 20 "$work"/perf.node*.log; fail "agents exited $(tr '\n' ' ' <"$work/perf.status")"; }
cat "$work"/perf.node*.out >"$work/perf.out"
cat "$work"/perf.node*.log >"$work/perf.log"
check_perf_job "$work/perf.out" "$work/perf.log"
echo "ok: #wrong 0, 6 ranks on 3 nodes ($job_hosts)"

echo "== torchrun: the README's recipe, as written, on every node"
readme_recipes "$source/README.md" "### torchrun" "$build/examples/minimal" "$work/readme"
[[ -s "$work/readme.1.sh" ]] || fail "no sh block under '### torchrun' in README.md"
agents=()
for i in "${!hosts[@]}"; do
  "$here/ns_exec.sh" "${hosts[i]}" "PATH=$(dirname "$python"):\$PATH sh $work/readme.1.sh" \
    >"$work/readme.node$i.out" 2>&1 &
  agents+=($!)
done
for pid in "${agents[@]}"; do wait "$pid" || fail "the README's recipe failed: $(tail -5 "$work"/readme.node*.out)"; done
agents=()
count=$(cat "$work"/readme.node*.out | grep -c "sum of ranks = 15 (expected 15)" || true)
((count == 6)) || { cat "$work"/readme.node*.out; fail "the README's recipe ran $count of 6 ranks"; }
echo "ok: the README's recipe ran 6 ranks"

echo "== torchrun: the DDP example on backend weft"
run_job ddp ddp "$source/examples/torch_ddp_cnn.py" --backend weft --steps 8 --warmup 2
[[ "$(sort -u "$work/ddp.status")" == 0 ]] ||
  { tail -n 20 "$work"/ddp.node*.log "$work"/ddp.node*.out; fail "DDP agents exited $(tr '\n' ' ' <"$work/ddp.status")"; }
steps="$(cat "$work"/ddp.node*.out | grep -ci "loss" || true)"
((steps > 0)) || { cat "$work"/ddp.node*.out; fail "rank 0 printed no loss"; }
echo "ok: DDP trained 8 steps on 6 ranks ($steps lines with a loss)"

echo "== torchrun: rank 5 killed mid-run"
run_job kill kill --no_python "$here/kill_rank.sh" --record "$work/kill.record" 5 3 "$program" -b 256K -e 256K -n 1000000 -w 0 -c 0
ended=$(date +%s.%N)
grep -qv '^0$' "$work/kill.status" || fail "every agent exited 0 though rank 5 was killed"
killed_at="$(sed -n 's/^kill_rank: killed rank 5 on [^ ]* at \([0-9.]*\)$/\1/p' "$work/kill.record")"
[[ -n "$killed_at" ]] || fail "rank 5 was never killed"
# node2's agent ends its other worker (rank 4) as soon as rank 5 dies, so a survivor may first
# see either of node2's ranks go.
grep -Eqh "rank [45] \(node2:pid" "$work"/kill.node*.log ||
  { tail -n 20 "$work"/kill.node*.log; fail "no survivor names rank 5 or 4 (node2:pid ...)"; }
grep -Eh "rank [45] \(node2:pid" "$work"/kill.node*.log | head -2 || true
seconds="$(awk -v a="$killed_at" -v b="$ended" 'BEGIN { printf "%.2f", b - a }')"
echo "ok: agents exited $(sort "$work/kill.status" | tr '\n' ' ')$seconds s after the kill"
sleep 0.5
left="$(pgrep -f "$program" || true)"
[[ -z "$left" ]] || fail "processes left behind: $left"
echo "PASS (torchrun)"
