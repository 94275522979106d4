#!/usr/bin/env bash
# Runs inside the Soft-RoCE guest (tests/rdma/qemu/rxe_guest.sh): the rdma transport over the
# real libibverbs and rxe0, as threads (the transport tests that need no fake) and as processes
# under weftrun with WEFT_TRANSPORT=rdma. Emulated hardware is slow, so sizes stay small.
#   soft_roce_guest.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: soft_roce_guest.sh BUILD_DIR}"
export WEFT_SOCKET_IFNAME=lo WEFT_TIMEOUT=120
step() { echo "=== soft_roce: $*"; }

step "device"
ibv_devinfo -d rxe0 | grep -E "hca_id|state|active_mtu|link_layer"

step "transport tests over real verbs (threads)"
WEFT_RDMA_TEST_VERBS=real "$build/tests/rdma/weft_rdma_tests" "[guest]"

step "random verified collectives, 2 processes, WEFT_TRANSPORT=rdma"
"$build/tools/weftrun" --timeout 300 -n 2 -x WEFT_TRANSPORT=rdma \
  "$build/tests/multirank/weft_coll_check" --random 200 7 70000

step "random verified collectives, 3 processes, zero-copy from 4 KiB, 2 slots"
"$build/tools/weftrun" --timeout 300 -n 3 -x WEFT_TRANSPORT=rdma -x WEFT_RDMA_ZCOPY_BYTES=4096 \
  -x WEFT_RDMA_SLOTS=2 -x WEFT_RDMA_SLOT_BYTES=4096 \
  "$build/tests/multirank/weft_coll_check" --random 100 11 20000

step "a rank killed in the middle: the survivor fails naming it"
set +e
WEFT_TIMEOUT=30 "$build/tools/weftrun" --keep-going --timeout 120 -n 2 -x WEFT_TRANSPORT=rdma \
  bash -c 'if [[ $WEFT_RANK == 1 ]]; then (sleep 3; kill -9 $$) & fi;
           exec "$0" --random 100000 5 4096' "$build/tests/multirank/weft_coll_check" \
  >"${WEFT_QEMU_OUT:-/tmp}/killed.log" 2>&1
status=$?
set -e
tail -n 5 "${WEFT_QEMU_OUT:-/tmp}/killed.log"
# The survivor's own error, not weftrun's report of the kill.
if [[ $status == 0 ]] || ! grep -q "rdma with rank 1 .*died" "${WEFT_QEMU_OUT:-/tmp}/killed.log"; then
  echo "soft_roce: the survivor did not report rank 1's death (status $status)"
  exit 1
fi

step "all_reduce_perf over rdma, 2 processes"
"$build/tools/weftrun" --timeout 300 -n 2 -x WEFT_TRANSPORT=rdma \
  "$build/perf/all_reduce_perf" -b 8 -e 1M -f 32 -n 5 -w 1 -c 1
step "passed"
