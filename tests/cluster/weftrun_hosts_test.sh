#!/usr/bin/env bash
# weftrun across three emulated hosts, with tests/cluster/ns_exec.sh as its launch agent in place
# of ssh. Run under cluster.sh --raw:
#
#   cluster.sh --raw --nodes 3 -- weftrun_hosts_test.sh WEFTRUN ALL_REDUCE_PERF
#
# weftrun itself runs on node0 and starts node1's and node2's ranks through the agent.
# 1. -H node0:2,node1:2,node2:2 all_reduce_perf -c 1: exit 0, #wrong 0, rank 0's log says 6 ranks
#    on 3 nodes, and the ranks ran on node0, node1 and node2.
# 2. --hostfile, the same hosts, with rank 5 (node2) killed by SIGKILL mid-run: weftrun exits 137
#    within a few seconds, names rank 5 on node2, and no process of the job is left on any host.
# 3. weftrun itself killed by SIGKILL mid-run: no rank survives it, on any host.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
(($# == 2)) || { echo "usage: weftrun_hosts_test.sh WEFTRUN ALL_REDUCE_PERF" >&2; exit 2; }
weftrun=$1 perf=$2
[[ -n "${CLUSTER_HOSTNAMES:-}" ]] || { echo "weftrun_hosts_test.sh: run under cluster.sh --raw" >&2; exit 2; }

# Nothing inherited: weftrun sets what the ranks need; the log level goes to every host with -x.
while read -r name; do unset "$name"; done < <(compgen -e | grep '^WEFT_' || true)

work="$(mktemp -d /tmp/weft-hosts.XXXXXX)"
# A name of this run's own: every process of the job has $work in its command line, so the check
# for leftovers finds this job's processes and nothing else.
program="$work/all_reduce_perf"
ln -s "$perf" "$program"
# This job's live processes: a zombie (exited, not yet reaped by its parent, e.g. a host's
# weftrun agent whose launch agent is still ending) runs nothing and is left out.
leftovers() {
  local pid
  for pid in $(pgrep -f "$work/" || true); do
    [[ "$(ps -o stat= -p "$pid" 2>/dev/null || true)" == Z* ]] || echo "$pid"
  done
}
cleanup() {
  local pid
  # Only if a check failed: end what this run left, by pid.
  for pid in $(leftovers); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# shellcheck source=job_checks.sh
source "$here/job_checks.sh"
check_no_leftovers() {
  local left
  left="$(leftovers)"
  [[ -z "$left" ]] || { ps -o pid,args -p "$(paste -sd, <<<"$left")" || true; fail "processes left behind: $left"; }
}

# Runs weftrun on node0 with the given arguments (no spaces inside them: ns_exec.sh joins words
# like ssh). Output in $work/$1.out and $work/$1.log; sets status.
run_on_node0() {
  local name=$1
  shift
  status=0
  "$here/ns_exec.sh" node0 "$weftrun" --launch-agent "$here/ns_exec.sh" -x WEFT_DEBUG=INFO \
    -x WEFT_TIMEOUT=60 "$@" >"$work/$name.out" 2>"$work/$name.log" || status=$?
}

echo "== weftrun -H node0:2,node1:2,node2:2 all_reduce_perf -c 1"
started=$(date +%s.%N)
run_on_node0 ok -H node0:2,node1:2,node2:2 "$program" -b 8 -e 1M -f 4 -c 1
((status == 0)) || { tail -30 "$work/ok.out" "$work/ok.log"; fail "the job exited $status"; }
check_perf_job "$work/ok.out" "$work/ok.log"
echo "ok: #wrong 0, 6 ranks on 3 nodes ($job_hosts) in $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

echo "== weftrun --hostfile FILE, rank 5 on node2 killed mid-run"
for node in node0 node1 node2; do echo "$node slots=2   # two ranks"; done >"$work/hosts"
# Rank 5 runs the benchmark in the background, kills it and then itself: weftrun must see rank 5
# killed by signal 9, on node2.
cat >"$work/rank.sh" <<'SCRIPT'
#!/bin/sh
[ "$WEFT_RANK" = 5 ] || exec "$@"
"$@" &
sleep 2
echo "rank.sh: killing rank 5 on $(hostname) at $(date +%s.%N)" >&2
kill -9 $!
kill -9 $$
SCRIPT
chmod +x "$work/rank.sh"
run_on_node0 kill --hostfile "$work/hosts" "$work/rank.sh" "$program" -b 256K -e 256K -n 1000000 -w 0 -c 0
ended=$(date +%s.%N)
killed="$(sed -n 's/^rank.sh: killing rank 5 on \([^ ]*\) at \([0-9.]*\)$/\1 \2/p' "$work/kill.log")"
[[ -n "$killed" ]] || { tail -20 "$work/kill.log"; fail "rank 5 was never killed"; }
read -r killed_host killed_at <<<"$killed"
[[ "$killed_host" == node2 ]] || fail "rank 5 ran on $killed_host, not node2"
((status == 137)) || { tail -20 "$work/kill.log"; fail "weftrun exited $status, not 137 (rank 5's SIGKILL)"; }
message="$(grep '^weftrun: rank 5 on node2 (pid [0-9]*) was killed by signal 9 (Killed); ending the job$' "$work/kill.log" || true)"
[[ -n "$message" ]] || { grep '^weftrun' "$work/kill.log" || true; fail "weftrun's message does not name rank 5 on node2"; }
seconds="$(awk -v a="$killed_at" -v b="$ended" 'BEGIN { printf "%.2f", b - a }')"
echo "ok: $message"
echo "ok: weftrun exited 137 $seconds s after the kill"
awk -v s="$seconds" 'BEGIN { exit !(s < 4) }' || fail "the job took $seconds s to end after the kill"
# Nothing of the job may outlive weftrun, on any host (all namespaces share this pid view).
sleep 0.3
check_no_leftovers
echo "ok: no process of the job left"

echo "== weftrun killed by SIGKILL mid-run"
"$here/ns_exec.sh" node0 "$weftrun" --launch-agent "$here/ns_exec.sh" -H node0:2,node1:2,node2:2 \
  "$program" -b 256K -e 256K -n 1000000 -w 0 -c 0 >"$work/sigkill.out" 2>&1 &
shell=$!   # ns_exec.sh ends as "sh -c", whose child is weftrun
for ((tick = 0; tick < 100; ++tick)); do
  (($(pgrep -c -f "^$program" || true) == 6)) && break
  sleep 0.1
done
(($(pgrep -c -f "^$program" || true) == 6)) || { cat "$work/sigkill.out"; fail "the 6 ranks did not start"; }
top="$(ps -o pid= --ppid "$shell" | tr -d ' ')"
[[ "$(readlink "/proc/$top/exe")" == "$(readlink -f "$weftrun")" ]] || fail "weftrun's pid not found (got '$top')"
kill -9 "$top"
wait "$shell" || true
for ((tick = 0; tick < 20; ++tick)); do
  [[ -z "$(pgrep -f "^$program" || true)" ]] && break
  sleep 0.1
done
ranksGone=$tick
# The hosts' weftrun agents end once their ranks have: give them as long again.
for ((tick = 0; tick < 20; ++tick)); do
  [[ -z "$(leftovers)" ]] && break
  sleep 0.1
done
tick=$ranksGone
check_no_leftovers
echo "ok: no rank outlived weftrun ($((tick * 100)) ms)"
echo PASS
