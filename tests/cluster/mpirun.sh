#!/usr/bin/env bash
# Runs an Open MPI job across the nodes of tests/cluster/cluster.sh --raw:
#
#   cluster.sh --raw --nodes K [--rate R] -- tests/cluster/mpirun.sh [--ppn P | --layout N0,N1,...]
#       [--numbering block|interleave] [MPIRUN OPTIONS...] -- PROGRAM [ARGS...]
#
# mpirun itself runs on node0 (inside its namespaces, so the other nodes can reach it) and starts
# an orted on every other node through ns_exec.sh, its launch agent in place of ssh. The hostfile
# lists the node names with P slots each (--layout: N0 slots on node0, N1 on node1, ..., for
# uneven nodes; it names as many counts as cluster.sh --raw made nodes, like cluster.sh's own
# --layout). Ranks land where cluster.sh would put weft's rank r: block numbering maps by slot
# (ranks 0..N0-1 on node0, the next N1 on node1, ...); interleave maps by node (rank r on node
# r % K) when every node has P ranks, and on uneven nodes follows an explicit list of each rank's
# node (Open MPI's sequential mapper, --map-by seq), dealt round robin over the nodes that still
# have room, the rule cluster.sh --numbering interleave uses. Out-of-band and MPI traffic are
# confined to the cluster's subnet; within a node ranks use shared memory (vader) unless MPIRUN
# OPTIONS choose another --mca btl. When the job has more ranks than this machine has cores,
# ranks yield while they wait (mpi_yield_when_idle), as Open MPI does on nodes it knows to be
# oversubscribed.
# Words are passed through ns_exec.sh like through ssh: no spaces inside arguments.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

ppn=1 layout="" numbering=block mpirun_options=()
while (($#)); do
  case "$1" in
    --ppn) ppn=$2; shift 2 ;;
    --layout) layout=$2; shift 2 ;;
    --numbering) numbering=$2; shift 2 ;;
    --) shift; break ;;
    *) mpirun_options+=("$1"); shift ;;
  esac
done
(($#)) || { echo "mpirun.sh: no program given (after --)" >&2; exit 2; }
[[ -n "${CLUSTER_HOSTNAMES:-}" ]] || { echo "mpirun.sh: run under cluster.sh --raw" >&2; exit 2; }
[[ "$numbering" == block || "$numbering" == interleave ]] ||
  { echo "mpirun.sh: --numbering is block or interleave" >&2; exit 2; }

read -ra hosts <<<"$CLUSTER_HOSTNAMES"
counts=()
if [[ -n "$layout" ]]; then
  [[ "$layout" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
    { echo "mpirun.sh: --layout needs counts like 3,2,1" >&2; exit 2; }
  IFS=, read -ra counts <<<"$layout"
  ((${#counts[@]} == ${#hosts[@]})) ||
    { echo "mpirun.sh: --layout names ${#counts[@]} nodes, the cluster has ${#hosts[@]}" >&2; exit 2; }
else
  for ((i = 0; i < ${#hosts[@]}; ++i)); do counts+=("$ppn"); done
fi
nranks=0 even=1
for count in "${counts[@]}"; do
  nranks=$((nranks + count))
  ((count == counts[0])) || even=0
done
hostfile="$(mktemp /tmp/weft-cluster-hosts.XXXXXX)"
trap 'rm -f "$hostfile"' EXIT
if [[ "$numbering" == interleave ]] && ((!even)); then
  # One line per rank, naming its node: round robin over the nodes that still have room.
  left=("${counts[@]}") assigned=0
  while ((assigned < nranks)); do
    for i in "${!left[@]}"; do
      ((left[i] > 0)) || continue
      echo "${hosts[i]}"
      left[i]=$((left[i] - 1)) assigned=$((assigned + 1))
    done
  done >"$hostfile"
  mapping=seq
else
  for i in "${!hosts[@]}"; do echo "${hosts[i]} slots=${counts[i]}"; done >"$hostfile"
  mapping="$([[ "$numbering" == interleave ]] && echo node || echo slot)"
fi

options=(--allow-run-as-root --hostfile "$hostfile" -np "$nranks" --map-by "$mapping"
  --mca plm_rsh_agent "$here/ns_exec.sh"
  --mca oob_tcp_if_include "$CLUSTER_SUBNET" --mca btl_tcp_if_include "$CLUSTER_SUBNET")
[[ " ${mpirun_options[*]} " == *" btl "* ]] || options+=(--mca pml ob1 --mca btl vader,tcp,self)
((nranks <= $(nproc))) || options+=(--mca mpi_yield_when_idle 1)

# Not exec: the trap removes the hostfile afterwards.
"$here/ns_exec.sh" "${hosts[0]}" mpirun "${options[@]}" "${mpirun_options[@]}" "$@"
