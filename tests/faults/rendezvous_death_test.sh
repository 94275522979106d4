#!/usr/bin/env bash
# A rank that dies during the rendezvous. Ranks 0, 1 and 2 of 4 start (rank 3 never does, so the
# round stays open) and join the root, which rank 0 hosts (environment initialisation, as under
# weftrun); then rank 1 or 2 is killed with SIGKILL. Its rendezvous connection drops, and after
# the root's grace period (1 s) every survivor must exit with an error naming the killed rank,
# long before its timeout (WEFT_TIMEOUT=30 here). Nothing may be left behind.
#   rendezvous_death_test.sh <weft_coll_check> [trials]
set -euo pipefail
check="$1"
trials="${2:-3}"
nranks=4
started=3
limit_ms=3000  # the 1 s grace period, and time to spare on a loaded machine
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
nowMs() { date +%s%3N; }

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do { wait "$pid"; } 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
shmBefore="$(ls -1 /dev/shm 2>/dev/null | sort)"
freePort() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
running() { kill -0 "$1" 2>/dev/null; }

for ((trial = 1; trial <= trials; ++trial)); do
  pids=()
  port="$(freePort)"
  for ((rank = 0; rank < started; ++rank)); do
    level=WARN
    ((rank == 0)) && level=INFO  # the root's "rank N joined" lines
    WEFT_RANK=$rank WEFT_NRANKS=$nranks WEFT_LOCAL_RANK=$rank WEFT_LOCAL_NRANKS=$nranks \
      WEFT_ROOT_ADDR="127.0.0.1:$port" WEFT_SECRET="rendezvous-death-$$-$trial" \
      WEFT_SOCKET_IFNAME=lo WEFT_TIMEOUT=30 WEFT_DEBUG=$level \
      "$check" --random 10 "$trial" 100 >"$work/log.$trial.$rank" 2>&1 &
    pids+=($!)
  done
  for ((poll = 0; poll < 1000; ++poll)); do
    grep -q "joined from .* ($started of $nranks)" "$work/log.$trial.0" 2>/dev/null && break
    sleep 0.01
  done
  if ! grep -q "joined from .* ($started of $nranks)" "$work/log.$trial.0"; then
    fail "trial $trial: the ranks did not all join: $(tail -3 "$work/log.$trial.0")"
    cleanup
    continue
  fi
  victim=$((1 + RANDOM % (started - 1)))
  disown "${pids[$victim]}"  # no "Killed" notice from the shell
  kill -KILL "${pids[$victim]}"
  killedAt=$(nowMs)
  worst=0
  for ((rank = 0; rank < started; ++rank)); do
    ((rank == victim)) && continue
    pid=${pids[$rank]}
    while running "$pid" && (($(nowMs) - killedAt < limit_ms + 5000)); do sleep 0.005; done
    if running "$pid"; then
      fail "trial $trial: rank $rank still runs $(($(nowMs) - killedAt)) ms after rank $victim was killed"
      continue
    fi
    took=$(($(nowMs) - killedAt))
    ((took > worst)) && worst=$took
    ((took <= limit_ms)) || fail "trial $trial: rank $rank took ${took} ms to fail"
    status=0
    { wait "$pid"; } 2>/dev/null || status=$?
    ((status != 0)) || fail "trial $trial: rank $rank exited 0"
    grep "init failed" "$work/log.$trial.$rank" | grep "rank $victim (" |
      grep -q "left the rendezvous after joining" ||
      fail "trial $trial: rank $rank's error does not name rank $victim: $(grep -v INFO "$work/log.$trial.$rank" | tail -2)"
  done
  echo "trial $trial: rank $victim killed during the rendezvous; survivors failed within ${worst} ms"
  grep -h "init failed" "$work/log.$trial.0" | head -1
  shmNow="$(ls -1 /dev/shm 2>/dev/null | sort)"
  [[ "$shmNow" == "$shmBefore" ]] || fail "trial $trial: /dev/shm changed"
done
pids=()
((failures == 0)) && echo "rendezvous death test: passed" || echo "rendezvous death test: $failures failures"
exit $((failures > 0))
