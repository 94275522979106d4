#!/bin/sh
# Runs a torch.distributed program as one rank of a tests/cluster/cluster.sh job: translates the
# WEFT_* / CLUSTER_* variables cluster.sh sets into torchrun's (RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE, MASTER_ADDR = rank 0's node, MASTER_PORT) and points gloo at the node's
# interface.
#   cluster.sh --nodes 2 --ppn 2 -- tests/cluster/torch_env.sh python3 prog.py ...
# MASTER_PORT defaults to 29500 (each node has its own network namespace, so no port clashes).
set -eu
export RANK="$WEFT_RANK" WORLD_SIZE="$WEFT_NRANKS"
export LOCAL_RANK="$WEFT_LOCAL_RANK" LOCAL_WORLD_SIZE="$WEFT_LOCAL_NRANKS"
export MASTER_ADDR="$CLUSTER_ROOT_ADDR" MASTER_PORT="${MASTER_PORT:-29500}"
export GLOO_SOCKET_IFNAME="$CLUSTER_IFNAME"
exec "$@"
