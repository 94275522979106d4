#!/usr/bin/env bash
# weft under a real MPI launcher across three emulated hosts, with no WEFT_* variable set: the
# rendezvous and its secret go through the launcher's own key-value store (Open MPI's PMIx,
# MPICH Hydra's PMI-1). Run under cluster.sh --raw:
#
#   cluster.sh --raw --nodes 3 -- mpi_job_test.sh openmpi|hydra ALL_REDUCE_PERF
#
# 1. all_reduce_perf -c 1 on 3 hosts x 2 ranks: exit 0, #wrong 0 everywhere, rank 0's log says
#    6 ranks on 3 nodes and that the rendezvous went through the launcher's store.
# 2. The same job with rank 5 (on node2, not rank 0's host) killed by SIGKILL mid-run: the
#    launcher must fail, the output must name rank 5, and no process of the job may be left.
#    The time from the kill to the launcher's exit is printed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
(($# == 2)) || { echo "usage: mpi_job_test.sh openmpi|hydra ALL_REDUCE_PERF" >&2; exit 2; }
launcher=$1 perf=$2
case "$launcher" in
  openmpi) run=("$here/mpirun.sh" --ppn 2 --) store="PMIx" ;;
  hydra) run=("$here/mpiexec_hydra.sh" --ppn 2 --) store="PMI-1" ;;
  *) echo "mpi_job_test.sh: unknown launcher '$launcher'" >&2; exit 2 ;;
esac
[[ "$launcher" != hydra ]] || command -v mpiexec.hydra >/dev/null ||
  { echo "SKIP: mpiexec.hydra is not installed"; exit 77; }
[[ "$launcher" != openmpi ]] || command -v mpirun.openmpi >/dev/null ||
  { echo "SKIP: Open MPI's mpirun is not installed"; exit 77; }

# Nothing set by hand: every WEFT_* variable goes, and the launch agent passes this environment
# on to every node. Only the log level is set, to see what rank 0 decided.
while read -r name; do unset "$name"; done < <(compgen -e | grep '^WEFT_' || true)
export WEFT_DEBUG=INFO

work="$(mktemp -d /tmp/weft-mpijob.XXXXXX)"
# A name of this run's own, so that the check for leftovers finds this job's processes only.
program="$work/all_reduce_perf"
ln -s "$perf" "$program"
cleanup() {
  local pids
  pids="$(pgrep -f "$program" || true)"
  [[ -z "$pids" ]] || kill -9 $pids 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL ($launcher): $*" >&2; exit 1; }
# shellcheck source=job_checks.sh
source "$here/job_checks.sh"

echo "== $launcher: all_reduce_perf -c 1 on 3 hosts x 2 ranks"
status=0
"${run[@]}" "$program" -b 8 -e 1M -f 4 -c 1 >"$work/ok.out" 2>"$work/ok.log" || status=$?
((status == 0)) || { tail -30 "$work/ok.out" "$work/ok.log"; fail "the job exited $status"; }
check_perf_job "$work/ok.out" "$work/ok.log"
grep -q "$store: rank 0 of 6" "$work/ok.log" || fail "rank 0 did not rendezvous through $store"
echo "ok: #wrong 0, 6 ranks on 3 nodes ($job_hosts), rendezvous through $store"

echo "== $launcher: the README's recipe, as written"
# Its first sh block under the launcher's heading, with examples/minimal as ./app, run on node0.
# The launch agent (ssh on a real cluster) and Open MPI's consent to run as root come from the
# environment, so the command stays as written.
heading="### Open MPI"
[[ "$launcher" == hydra ]] && heading="### MPICH and Intel MPI (Hydra)"
readme_recipes "$here/../../README.md" "$heading" "$(dirname "$(dirname "$perf")")/examples/minimal" \
  "$work/readme"
[[ -s "$work/readme.1.sh" ]] || fail "no sh block under '$heading' in README.md"
status=0
"$here/ns_exec.sh" "${CLUSTER_HOSTNAMES%% *}" "cd $work && OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=$here/ns_exec.sh \
  HYDRA_LAUNCHER=ssh HYDRA_LAUNCHER_EXEC=$here/ns_exec.sh sh $work/readme.1.sh" \
  >"$work/readme.out" 2>&1 || status=$?
((status == 0)) || { cat "$work/readme.1.sh"; tail -20 "$work/readme.out"; fail "the README's recipe exited $status"; }
count=$(grep -c "sum of ranks = 15 (expected 15)" "$work/readme.out" || true)
((count == 6)) || { cat "$work/readme.out"; fail "the README's recipe ran $count of 6 ranks"; }
echo "ok: the README's recipe ran 6 ranks"

echo "== $launcher: rank 5 on node2 killed mid-run"
status=0
"${run[@]}" "$here/kill_rank.sh" --record "$work/kill.record" 5 2 "$program" -b 256K -e 256K -n 1000000 -w 0 -c 0 \
  >"$work/kill.log" 2>&1 || status=$?
ended=$(date +%s.%N)
((status != 0)) || fail "the job exited 0 though rank 5 was killed"
killed="$(sed -n 's/^kill_rank: killed rank 5 on \([^ ]*\) at \([0-9.]*\)$/\1 \2/p' "$work/kill.record")"
[[ -n "$killed" ]] || { tail -20 "$work/kill.log"; fail "rank 5 was never killed"; }
read -r killed_host killed_at <<<"$killed"
[[ "$killed_host" == node2 ]] || fail "rank 5 ran on $killed_host, not node2"
# weft's survivors name it as "rank 5 (node2:pid N)" when they fail before the launcher ends
# them; the launcher names it in its own words otherwise.
# Counted, not grep -q: under pipefail a grep that quits at the first match can kill the one
# feeding it with SIGPIPE and fail the pipeline though rank 5 is named.
named=$(grep -v "^kill_rank" "$work/kill.log" | grep -v "weft INFO" | grep -ci "rank 5" || true)
((named > 0)) || { tail -20 "$work/kill.log"; fail "nothing names rank 5"; }
seconds="$(awk -v a="$killed_at" -v b="$ended" 'BEGIN { printf "%.2f", b - a }')"
echo "ok: the job failed (status $status) $seconds s after the kill"
grep -i "rank 5" "$work/kill.log" | grep -v "^kill_rank" | grep -v "weft INFO" | head -3 || true
# Survivors must be gone with the launcher, on every host.
sleep 0.5
left="$(pgrep -f "$program" || true)"
[[ -z "$left" ]] || fail "processes left behind: $left"
awk -v s="$seconds" 'BEGIN { exit !(s < 10) }' || fail "the job took $seconds s to end after the kill"
echo "PASS ($launcher)"
