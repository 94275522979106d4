#!/usr/bin/env bash
# A weft job under the real mpiexec.hydra with nothing exported by hand: no WEFT_* variable, the
# rendezvous and its secret through Hydra's PMI-1 key-value store. Runs examples/minimal at 3
# ranks over PMI_FD and over -pmi-port, then all_reduce_perf -c 1 at 2 ranks, whose #wrong must
# be 0. Usage: hydra_job_test.sh <mpiexec.hydra> <minimal> [all_reduce_perf]
set -euo pipefail
hydra="$1"
minimal="$2"
perf="${3:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Nothing of weft's own: the job must need none of it (loopback is the only network here).
for variable in $(env | grep -o '^WEFT_[A-Z_]*' || true); do unset "$variable"; done
export WEFT_SOCKET_IFNAME=lo

for mode in fd port; do
  options=(-n 3)
  [[ $mode == port ]] && options=(-pmi-port -n 3)
  timeout -k 5 60 "$hydra" "${options[@]}" "$minimal" >"$work/minimal.$mode" 2>&1 || {
    echo "FAIL: minimal under mpiexec.hydra ($mode)"; cat "$work/minimal.$mode"; exit 1; }
  count=$(grep -c "sum of ranks = 3 (expected 3)" "$work/minimal.$mode" || true)
  [[ $count == 3 ]] || { echo "FAIL: $count of 3 ranks ($mode)"; cat "$work/minimal.$mode"; exit 1; }
  echo "ok: minimal at 3 ranks over PMI-1 ($mode)"
done

if [[ -n "$perf" ]]; then
  timeout -k 5 120 "$hydra" -n 2 "$perf" -b 8 -e 1M -f 8 -c 1 -n 5 >"$work/perf" 2>&1 || {
    echo "FAIL: all_reduce_perf under mpiexec.hydra"; cat "$work/perf"; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$work/perf" || {
    echo "FAIL: all_reduce_perf reported wrong values"; cat "$work/perf"; exit 1; }
  grep -q "#  Rank  1 " "$work/perf" || {
    echo "FAIL: all_reduce_perf did not run 2 ranks"; cat "$work/perf"; exit 1; }
  echo "ok: all_reduce_perf -c 1 at 2 ranks, #wrong 0"
fi
