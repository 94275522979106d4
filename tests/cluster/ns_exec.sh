#!/usr/bin/env bash
# Runs a command "on" one node of a cluster that tests/cluster/cluster.sh --raw created: inside
# that node's network namespace and in a UTS namespace named after the node.
#
#   ns_exec.sh [SSH OPTIONS] HOST COMMAND [ARGS...]
#
# HOST is a node's host name (node0, node1, ...), its index (0, 1, ...) or its namespace name.
# Names are looked up in CLUSTER_HOSTNAMES and CLUSTER_NAMESPACES, which cluster.sh --raw sets.
# Like ssh, the command's words are joined with spaces and run by sh -c, so that this script can
# stand in for ssh as Open MPI's launch agent (mpirun passes "HOST <shell command line>"):
#
#   mpirun --mca plm_rsh_agent tests/cluster/ns_exec.sh --hostfile FILE_LISTING_node0_node1 ...
#
# As with ssh, quote arguments that contain spaces or shell characters one level more.
set -euo pipefail

die() { echo "ns_exec.sh: $*" >&2; exit 255; }   # 255, like ssh when it cannot connect

# ssh's own options, which some launchers pass before the host (MPICH's Hydra passes -x), mean
# nothing here: skip them, with the value of those that take one.
while (($#)) && [[ "$1" == -* ]]; do
  case "$1" in
    -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
    *) shift ;;
  esac
done
(($# >= 2)) || die "usage: ns_exec.sh [SSH OPTIONS] HOST COMMAND [ARGS...]"
host="$1"
shift
read -ra namespaces <<<"${CLUSTER_NAMESPACES:-}"
read -ra hostnames <<<"${CLUSTER_HOSTNAMES:-}"
((${#namespaces[@]})) || die "CLUSTER_NAMESPACES is not set (run under tests/cluster/cluster.sh --raw)"

index=""
for i in "${!namespaces[@]}"; do
  if [[ "$host" == "${namespaces[i]}" || "$host" == "${hostnames[i]:-}" || "$host" == "$i" ]]; then
    index=$i
    break
  fi
done
[[ -n "$index" ]] || die "unknown host '$host' (nodes: ${hostnames[*]:-} = ${namespaces[*]})"

exec ip netns exec "${namespaces[index]}" unshare --uts \
  sh -c 'hostname "$1" && exec sh -c "$2"' sh "${hostnames[index]:-node$index}" "$*"
