#!/usr/bin/env bash
# weftMemAlloc memory leaves nothing behind: it is a memfd (no name in /dev/shm, while the job
# runs or after), and a job whose ranks read each other's windowed buffers in place ends, with
# no process left, when one rank is killed (by its pid) mid-run.
#   memory_leftovers_test.sh <weftrun> <weft_memory_check> [kill trials]
set -euo pipefail
weftrun="$1"
check="$2"
trials="${3:-2}"
ranks=3
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
descendants() { # pids below $1, found through /proc (by parent pid, never by name)
  local children
  children="$(cat /proc/"$1"/task/*/children 2>/dev/null || true)"
  for child in $children; do echo "$child"; descendants "$child"; done
}
# Whatever this script started and is still alive goes when it exits, however it exits.
launcher=""
cleanup() {
  if [[ -n "$launcher" ]]; then
    for pid in $(descendants "$launcher") "$launcher"; do kill -9 "$pid" 2>/dev/null || true; done
  fi
  rm -f "${log:-}"
}
trap cleanup EXIT

echo "== normal run with windowed buffers"
"$weftrun" --timeout 60 -n "$ranks" "$check" --window-loop 300 || fail "normal run failed"
checkShm "normal run"

echo "== kill -9 of a rank reading its peers' windows, $trials trials"
for ((trial = 1; trial <= trials; ++trial)); do
  log="$(mktemp)"
  "$weftrun" --timeout 60 -n "$ranks" "$check" --window-loop 100000000 >"$log" 2>&1 &
  launcher=$!
  # Wait (up to 10 s) until every rank runs and one maps a peer's weftMemAlloc memory (the
  # zero-copy path): in /proc/<pid>/maps as a second shared memfd beside the rank's own one
  # allocation, never a /dev/shm file.
  pids=()
  mapped=""
  for ((poll = 0; poll < 1000; ++poll)); do
    mapfile -t pids < <(descendants "$launcher")
    if ((${#pids[@]} >= ranks)); then
      for pid in "${pids[@]}"; do
        memfds="$(awk '/ rw-s .*\/memfd:weft-mem-/ {print $5}' /proc/"$pid"/maps 2>/dev/null |
                  sort -u | wc -l)"
        if ((memfds >= 2)); then mapped="$pid"; fi
      done
    fi
    [[ -n "$mapped" ]] || ! kill -0 "$launcher" 2>/dev/null && break
    sleep 0.01
  done
  if [[ -z "$mapped" ]]; then
    fail "trial $trial: no rank mapped a peer's weftMemAlloc memory: $(tail -3 "$log")"
  else
    grep -q '/dev/shm' /proc/"$mapped"/maps && fail "trial $trial: a rank maps a /dev/shm file"
    checkShm "trial $trial, while the job runs"
  fi
  if ((${#pids[@]} == 0)); then
    kill -9 "$launcher" 2>/dev/null || true
    wait "$launcher" || true
    launcher=""
    fail "trial $trial: no rank to kill: $(tail -3 "$log")"
    continue
  fi
  sleep "0.$((RANDOM % 3 + 1))"  # well into the loop of calls
  victim="${pids[$((RANDOM % ${#pids[@]}))]}"
  start=$SECONDS
  kill -9 "$victim" 2>/dev/null || true
  if wait "$launcher"; then
    fail "trial $trial: weftrun exited 0 after a rank was killed"
  fi
  elapsed=$((SECONDS - start))
  grep -q "was killed by signal 9" "$log" || fail "trial $trial: weftrun did not name the killed rank: $(tail -3 "$log")"
  ((elapsed <= 10)) || fail "trial $trial: the job took ${elapsed}s to end after the kill"
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      fail "trial $trial: process $pid is still alive"
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  launcher=""
  checkShm "trial $trial"
  echo "trial $trial: killed pid $victim, job ended in ${elapsed}s"
  rm -f "$log"
done

((failures == 0)) && echo "memory leftovers test: passed" || echo "memory leftovers test: $failures failures"
exit $((failures > 0))
