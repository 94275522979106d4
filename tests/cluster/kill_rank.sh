#!/usr/bin/env bash
# Runs PROGRAM as a rank of a job, and on rank RANK kills it with SIGKILL after DELAY seconds:
#
#   kill_rank.sh RANK DELAY PROGRAM [ARGS...]
#
# The rank comes from whichever launcher started the process (Open MPI, PMI-1, Slurm, weftrun,
# torchrun). The killed rank's wrapper exits 137, as a shell reports a process killed by SIGKILL,
# after printing "kill_rank: killed rank R" with the time, for the test to measure from.
set -euo pipefail
(($# >= 3)) || { echo "usage: kill_rank.sh RANK DELAY PROGRAM [ARGS...]" >&2; exit 2; }
target=$1 delay=$2
shift 2
rank="${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-${WEFT_RANK:-${RANK:--1}}}}}"
[[ "$rank" == "$target" ]] || exec "$@"
"$@" &
pid=$!
sleep "$delay"
kill -9 "$pid"
echo "kill_rank: killed rank $rank on $(hostname) at $(date +%s.%N)" >&2
wait "$pid" || true
exit 137
