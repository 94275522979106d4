#!/usr/bin/env bash
# Nothing is left behind: no segment in /dev/shm and no process, after a normal run, after
# kill -9 of a random rank at a random moment (init included), and after a failed init.
# weft's shared memory is memfd-backed and its Unix sockets are abstract, so no name is ever
# created; these runs check that promise from the outside.
#   leftovers_test.sh <weftrun> <weft_coll_check> [kill trials]
set -euo pipefail
weftrun="$1"
check="$2"
trials="${3:-6}"
ranks=4
export WEFT_SOCKET_IFNAME=lo WEFT_TIMEOUT=20
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

shmList() { ls -1 /dev/shm 2>/dev/null | sort; }
before="$(shmList)"
checkShm() {
  local now
  now="$(shmList)"
  if [[ "$now" != "$before" ]]; then
    fail "$1: /dev/shm changed: $(comm -13 <(echo "$before") <(echo "$now") | tr '\n' ' ')"
  fi
}
# Every process of the job (weftrun's descendants) must be gone.
checkGone() {
  local what="$1"
  shift
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then fail "$what: process $pid is still alive"; kill -9 "$pid" 2>/dev/null || true; fi
  done
}
descendants() { # pids below $1, found through /proc (by parent pid, never by name)
  local children
  children="$(cat /proc/"$1"/task/*/children 2>/dev/null || true)"
  for child in $children; do echo "$child"; descendants "$child"; done
}

echo "== normal run"
"$weftrun" --timeout 120 -n "$ranks" "$check" --random 300 11 65536 || fail "normal run failed"
checkShm "normal run"

echo "== kill -9 of a random rank, $trials trials"
for ((trial = 1; trial <= trials; ++trial)); do
  log="$(mktemp)"
  "$weftrun" --timeout 120 -n "$ranks" "$check" --random 1000000 "$trial" 300000 >"$log" 2>&1 &
  launcher=$!
  # From the middle of init (a few ms) to well into the run.
  sleep "0.$((RANDOM % 9))$((RANDOM % 10))"
  # weftrun may not have started every rank yet after a short sleep; wait (briefly) until it has.
  for ((poll = 0; poll < 500; ++poll)); do
    mapfile -t pids < <(descendants "$launcher")
    ((${#pids[@]} >= ranks)) || ! kill -0 "$launcher" 2>/dev/null && break
    sleep 0.01
  done
  if ((${#pids[@]} == 0)); then
    kill -9 "$launcher" 2>/dev/null || true
    wait "$launcher" || true
    fail "trial $trial: no rank to kill: $(tail -3 "$log")"
    rm -f "$log"
    continue
  fi
  victim="${pids[$((RANDOM % ${#pids[@]}))]}"
  start=$SECONDS
  kill -9 "$victim" 2>/dev/null || true
  if wait "$launcher"; then
    fail "trial $trial: weftrun exited 0 after a rank was killed"
  fi
  elapsed=$((SECONDS - start))
  grep -q "was killed by signal 9" "$log" || fail "trial $trial: weftrun did not name the killed rank: $(tail -3 "$log")"
  ((elapsed <= 10)) || fail "trial $trial: the job took ${elapsed}s to end after the kill"
  checkGone "trial $trial" "${pids[@]}"
  checkShm "trial $trial"
  echo "trial $trial: killed pid $victim, job ended in ${elapsed}s"
  rm -f "$log"
done

echo "== failed init (a rank never joins)"
WEFT_TIMEOUT=3 "$weftrun" --timeout 60 -n "$ranks" sh -c \
  'if [ "$WEFT_RANK" = 2 ]; then sleep 30; else exec "$0" --random 10; fi' "$check" \
  >/dev/null 2>&1 && fail "an init missing a rank succeeded"
checkShm "failed init"

((failures == 0)) && echo "leftovers test: passed" || echo "leftovers test: $failures failures"
exit $((failures > 0))
