#!/usr/bin/env bash
# Runs PROGRAM as a rank of a job, and on rank RANK kills it with SIGKILL after DELAY seconds:
#
#   kill_rank.sh [--record FILE] RANK DELAY PROGRAM [ARGS...]
#
# The rank comes from whichever launcher started the process (Open MPI, PMI-1, Slurm, weftrun,
# torchrun). The killed rank's wrapper exits 137, as a shell reports a process killed by SIGKILL,
# after printing "kill_rank: killed rank R" with the time (just before the kill), for the test to
# measure from; with --record, that line is also appended to FILE.
set -euo pipefail
record=/dev/null
if [[ "${1:-}" == --record ]]; then
  record=$2
  shift 2
fi
(($# >= 3)) || { echo "usage: kill_rank.sh [--record FILE] RANK DELAY PROGRAM [ARGS...]" >&2; exit 2; }
target=$1 delay=$2
shift 2
rank="${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-${WEFT_RANK:-${RANK:--1}}}}}"
[[ "$rank" == "$target" ]] || exec "$@"
"$@" &
pid=$!
sleep "$delay"
# Said before the kill: once the rank dies, its launcher may end this wrapper at any moment.
host=$(hostname)
line="kill_rank: killed rank $rank on $host at $(date +%s.%N)"
echo "$line" >&2
# Also in FILE: a launcher that ends the job may drop this wrapper's last output.
echo "$line" >>"$record"
kill -9 "$pid"
wait "$pid" || true
exit 137
