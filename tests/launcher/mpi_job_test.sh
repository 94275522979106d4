#!/usr/bin/env bash
# A weft job under a real MPI launcher on this host with nothing exported by hand: no WEFT_*
# variable, the rendezvous and its secret through the launcher's key-value store (MPICH Hydra's
# PMI-1, Open MPI's PMIx). Runs examples/minimal at 3 ranks (under Hydra over PMI_FD and over
# -pmi-port), then all_reduce_perf -c 1 at 2 ranks, whose #wrong must be 0.
# Usage: mpi_job_test.sh hydra|openmpi <mpiexec.hydra|mpirun.openmpi> <minimal> [all_reduce_perf]
set -euo pipefail
kind="$1"
launcher="$2"
minimal="$3"
perf="${4:-}"
case "$kind" in
  hydra) modes=(fd port) store="PMI-1" common=() ;;
  openmpi) modes=(pmix) store="PMIx" common=(--allow-run-as-root --oversubscribe) ;;
  *) echo "mpi_job_test.sh: unknown launcher kind '$kind'" >&2; exit 2 ;;
esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Nothing of weft's own: the job must need none of it (loopback is the only network here).
for variable in $(env | grep -o '^WEFT_[A-Z_]*' || true); do unset "$variable"; done
export WEFT_SOCKET_IFNAME=lo WEFT_DEBUG=INFO

for mode in "${modes[@]}"; do
  options=("${common[@]}" -n 3)
  [[ $mode == port ]] && options=(-pmi-port -n 3)
  timeout -k 5 60 "$launcher" "${options[@]}" "$minimal" >"$work/minimal.$mode" 2>&1 || {
    echo "FAIL: minimal under $kind ($mode)"; cat "$work/minimal.$mode"; exit 1; }
  count=$(grep -c "sum of ranks = 3 (expected 3)" "$work/minimal.$mode" || true)
  [[ $count == 3 ]] || { echo "FAIL: $count of 3 ranks ($mode)"; cat "$work/minimal.$mode"; exit 1; }
  grep -q "$store: rank 0 of 3" "$work/minimal.$mode" || {
    echo "FAIL: no rendezvous through $store ($mode)"; cat "$work/minimal.$mode"; exit 1; }
  echo "ok: minimal at 3 ranks over $store ($mode)"
done

if [[ -n "$perf" ]]; then
  timeout -k 5 120 "$launcher" "${common[@]}" -n 2 "$perf" -b 8 -e 1M -f 8 -c 1 -n 5 >"$work/perf" 2>&1 || {
    echo "FAIL: all_reduce_perf under $kind"; cat "$work/perf"; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$work/perf" || {
    echo "FAIL: all_reduce_perf reported wrong values"; cat "$work/perf"; exit 1; }
  grep -q "#  Rank  1 " "$work/perf" || {
    echo "FAIL: all_reduce_perf did not run 2 ranks"; cat "$work/perf"; exit 1; }
  echo "ok: all_reduce_perf -c 1 at 2 ranks, #wrong 0"
fi
