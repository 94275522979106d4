#!/usr/bin/env bash
# Runs an MPICH (Hydra) job across the nodes of tests/cluster/cluster.sh --raw, as mpirun.sh does
# for Open MPI:
#
#   cluster.sh --raw --nodes K -- tests/cluster/mpiexec_hydra.sh [--ppn P] -- PROGRAM [ARGS...]
#
# mpiexec.hydra runs on node0 and starts a proxy on every node through ns_exec.sh, its launch
# agent in place of ssh; ranks are placed node by node (ranks 0..P-1 on node0). Hydra passes the
# whole environment on to every rank. Always by its full name: `mpiexec` may be Open MPI's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

ppn=1
while (($#)); do
  case "$1" in
    --ppn) ppn=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "mpiexec_hydra.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "mpiexec_hydra.sh: no program given (after --)" >&2; exit 2; }
[[ -n "${CLUSTER_HOSTNAMES:-}" ]] || { echo "mpiexec_hydra.sh: run under cluster.sh --raw" >&2; exit 2; }
command -v mpiexec.hydra >/dev/null || { echo "SKIP: mpiexec.hydra is not installed"; exit 77; }

read -ra hosts <<<"$CLUSTER_HOSTNAMES"
host_list=""
for host in "${hosts[@]}"; do host_list+="${host_list:+,}$host:$ppn"; done
exec "$here/ns_exec.sh" "${hosts[0]}" mpiexec.hydra -launcher ssh -launcher-exec "$here/ns_exec.sh" \
  -hosts "$host_list" -n $((${#hosts[@]} * ppn)) -iface "$CLUSTER_IFNAME" "$@"
