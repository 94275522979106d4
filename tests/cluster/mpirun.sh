#!/usr/bin/env bash
# Runs an Open MPI job across the nodes of tests/cluster/cluster.sh --raw:
#
#   cluster.sh --raw --nodes K [--rate R] -- tests/cluster/mpirun.sh [--ppn P]
#       [--numbering block|interleave] [MPIRUN OPTIONS...] -- PROGRAM [ARGS...]
#
# mpirun itself runs on node0 (inside its namespaces, so the other nodes can reach it) and starts
# an orted on every other node through ns_exec.sh, its launch agent in place of ssh. The hostfile
# lists the node names with P slots each; block numbering maps by slot (ranks 0..P-1 on node0),
# interleave by node (rank r on node r % K). Out-of-band and MPI traffic are confined to the
# cluster's subnet; within a node ranks use shared memory (vader) unless MPIRUN OPTIONS choose
# another --mca btl. When the job has more ranks than this machine has cores, ranks yield while
# they wait (mpi_yield_when_idle), as Open MPI does on nodes it knows to be oversubscribed.
# Words are passed through ns_exec.sh like through ssh: no spaces inside arguments.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

ppn=1 numbering=block mpirun_options=()
while (($#)); do
  case "$1" in
    --ppn) ppn=$2; shift 2 ;;
    --numbering) numbering=$2; shift 2 ;;
    --) shift; break ;;
    *) mpirun_options+=("$1"); shift ;;
  esac
done
(($#)) || { echo "mpirun.sh: no program given (after --)" >&2; exit 2; }
[[ -n "${CLUSTER_HOSTNAMES:-}" ]] || { echo "mpirun.sh: run under cluster.sh --raw" >&2; exit 2; }

read -ra hosts <<<"$CLUSTER_HOSTNAMES"
nranks=$((${#hosts[@]} * ppn))
hostfile="$(mktemp /tmp/weft-cluster-hosts.XXXXXX)"
trap 'rm -f "$hostfile"' EXIT
for host in "${hosts[@]}"; do echo "$host slots=$ppn"; done >"$hostfile"

options=(--allow-run-as-root --hostfile "$hostfile" -np "$nranks"
  --map-by "$([[ "$numbering" == interleave ]] && echo node || echo slot)"
  --mca plm_rsh_agent "$here/ns_exec.sh"
  --mca oob_tcp_if_include "$CLUSTER_SUBNET" --mca btl_tcp_if_include "$CLUSTER_SUBNET")
[[ " ${mpirun_options[*]} " == *" btl "* ]] || options+=(--mca pml ob1 --mca btl vader,tcp,self)
((nranks <= $(nproc))) || options+=(--mca mpi_yield_when_idle 1)

# Not exec: the trap removes the hostfile afterwards.
"$here/ns_exec.sh" "${hosts[0]}" mpirun "${options[@]}" "${mpirun_options[@]}" "$@"
