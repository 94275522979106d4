#!/usr/bin/env bash
# weft's PMI-1 client under the real mpiexec.hydra (MPICH), on this host only:
#   exchange           N ranks (PMI_FD) put, barrier and check every rank's values, twice; exit 0
#   exchange_pmi_port  the same with -pmi-port (PMI_PORT, PMI_ID and the initack)
#   leave_early        the last rank finalizes and leaves; the others' barrier fails at its
#                      deadline (Hydra never completes it), the first of them to exit 1 makes
#                      Hydra kill the rest, and the job ends, failed
#   die_early          the last rank dies without finalize; Hydra kills the job
# Whatever happens, the job must end within a bound, and no rank may be left running.
#   pmi1_hydra_test.sh <mpiexec.hydra> <pmi1_probe> <case> [N]
set -uo pipefail
hydra="$1"
probe="$2"
case="$3"
n="${4:-3}"
limit_s=60  # the job's bound; each case needs a few seconds at most
work="$(mktemp -d)"
failures=0
fail() { echo "FAIL ($case): $*" >&2; failures=$((failures + 1)); }

# Ranks this run started that are still alive: each probe wrote its pid under $work/pids.
leftovers() {
  local file pid
  for file in "$work"/pids/rank*; do
    [[ -f "$file" ]] || continue
    pid="$(cat "$file")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
  done
}
cleanup() {
  local pid
  for pid in $(leftovers); do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/pids"

mode="$case"
options=(-launcher fork -hosts localhost -n "$n")
if [[ "$case" == exchange_pmi_port ]]; then
  mode=exchange
  options=(-pmi-port "${options[@]}")
fi

start_ms=$(date +%s%3N)
# SIGTERM first, so that Hydra can take its ranks down with it; SIGKILL if it does not.
timeout -k 5 "$limit_s" "$hydra" "${options[@]}" "$probe" "$mode" "$work/pids" \
  >"$work/out" 2>"$work/err" </dev/null
rc=$?
elapsed_ms=$(($(date +%s%3N) - start_ms))
echo "$case: mpiexec.hydra exited $rc after ${elapsed_ms} ms"
sed 's/^/  stdout: /' "$work/out"
sed 's/^/  stderr: /' "$work/err"

((rc == 124 || rc == 137)) && fail "the job did not end within ${limit_s} s"
ranks_started=$(ls "$work/pids" | wc -l)
case "$case" in
  exchange | exchange_pmi_port)
    ((rc == 0)) || fail "mpiexec.hydra exited $rc"
    ((ranks_started == n)) || fail "$ranks_started of $n ranks connected"
    oks=$(grep -c "^pmi1_probe: rank [0-9]* of $n ok" "$work/out")
    ((oks == n)) || fail "$oks of $n ranks reported ok"
    ;;
  leave_early)
    ((rc != 0)) || fail "the job succeeded although a rank left before the barrier"
    grep -q "completed without the last rank" "$work/out" && fail "a barrier completed"
    # The first survivor to fail exits 1 and Hydra kills the others, so one report may be all.
    deadline_report="barrier: PMI-1 cmd=barrier_in: no reply from the server before the deadline"
    timeouts=$(grep -c "$deadline_report" "$work/err")
    ((timeouts >= 1)) || fail "no survivor reported the barrier's deadline"
    ;;
  die_early)
    ((rc != 0)) || fail "the job succeeded although a rank died"
    grep -q "^pmi1_probe: rank .* ok" "$work/out" && fail "a rank reported success"
    ;;
  *)
    echo "unknown case $case" >&2
    exit 2
    ;;
esac

# Hydra reaps its ranks before it exits; give a straggler a moment, then insist.
for _ in $(seq 50); do
  [[ -z "$(leftovers)" ]] && break
  sleep 0.1
done
left="$(leftovers)"
[[ -z "$left" ]] || fail "ranks still running after the job ended: $left"

((failures == 0)) && echo "PASS ($case)"
exit $((failures > 0))
