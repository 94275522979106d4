#!/usr/bin/env bash
# Survivors of a failed rank fail in time and name it. weftrun --keep-going starts the ranks (so
# it does not end the survivors itself), each running a loop of random verified collectives; at
# a random moment after init one rank is
#   kill: killed with SIGKILL; every other rank must exit with an error within 2 s;
#   stop: stopped with SIGSTOP; every other rank must exit with an error at its timeout
#         (WEFT_TIMEOUT=3 here): not much before (a stopped rank may resume), not much after.
# Each survivor's message must name the failed rank. A stopped rank looks like one that waits
# for it, except in /proc: on one host the survivor that times out reads its peers' process
# states and names the stopped one ("rank 2 (...) is stopped"); at least one survivor must say
# so, and the others name it as the cause their peers reported. Nothing may be left in /dev/shm
# or the process table.
# MAX_COUNT bounds each call's count (default 100000); a small one keeps most all-reduces within
# the small-call path (core/small_call.h), so the victim dies during calls that take it.
#   survivors_test.sh <weftrun> <weft_coll_check> <tcp|shm> <kill|stop> [trials] [ranks] [max_count]
set -euo pipefail
weftrun="$1"
check="$2"
transport="$3"
mode="$4"
trials="${5:-10}"
ranks="${6:-4}"
max_count="${7:-100000}"
timeout_s=3
case "$mode" in
  kill) signal=KILL min_ms=0 limit_ms=2000 ;;  # RELIABILITY.md: detection within 2 s of a death
  stop) signal=STOP min_ms=$((timeout_s * 1000 - 500)) limit_ms=$((timeout_s * 1000 + 2000)) ;;
  *) echo "usage: survivors_test.sh <weftrun> <checker> <tcp|shm> <kill|stop> [trials] [ranks] [max_count]" >&2; exit 2 ;;
esac
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
nowMs() { date +%s%3N; }

work="$(mktemp -d)"
launcher=""
# weftrun ends its ranks when it gets SIGTERM (SIGKILL after its grace period), so ending it
# that way leaves nothing behind.
endJob() {
  kill -TERM "$launcher" 2>/dev/null || true
  wait "$launcher" 2>/dev/null || true
  launcher=""
}
cleanup() {
  [[ -n "$launcher" ]] && endJob
  rm -rf "$work"
}
trap cleanup EXIT
shmBefore="$(ls -1 /dev/shm 2>/dev/null | sort)"

# Running: it exists and is not a zombie (weftrun reaps its ranks only when the job ends).
running() {
  local stat
  stat="$(cat /proc/"$1"/stat 2>/dev/null)" || return 1
  [[ -n "$stat" && "$(echo "$stat" | cut -d' ' -f3)" != Z ]]
}
children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true; }

for ((trial = 1; trial <= trials; ++trial)); do
  log="$work/log.$trial"
  WEFT_TRANSPORT="$transport" WEFT_TIMEOUT=$timeout_s "$weftrun" --keep-going --tag-output --timeout 120 \
    -n "$ranks" "$check" --random 1000000 "$trial" "$max_count" >"$log" 2>&1 &
  launcher=$!
  # Every rank started and past init (it takes well under a second), then a random moment of
  # the loop of calls.
  mapfile -t pids < <(children "$launcher")
  for ((poll = 0; poll < 500 && ${#pids[@]} < ranks; ++poll)); do
    sleep 0.01
    mapfile -t pids < <(children "$launcher")
  done
  if ((${#pids[@]} < ranks)); then
    fail "trial $trial ($transport): weftrun started ${#pids[@]} of $ranks ranks"
    endJob
    continue
  fi
  sleep "1.$((RANDOM % 10))$((RANDOM % 10))"
  victim=$((RANDOM % ranks))
  kill -"$signal" "${pids[$victim]}"
  killedAt=$(nowMs)
  worst=0
  for ((rank = 0; rank < ranks; ++rank)); do
    ((rank == victim)) && continue
    pid=${pids[$rank]}
    debugged=0
    while running "$pid" && (($(nowMs) - killedAt < limit_ms + 8000)); do
      if [[ -n "${WEFT_TEST_DEBUG_HANG:-}" ]] && ((!debugged && $(nowMs) - killedAt > limit_ms)); then
        gdb -p "$pid" -batch -ex "thread apply all bt" >"$WEFT_TEST_DEBUG_HANG.$trial.$rank" 2>&1
        debugged=1
      fi
      sleep 0.005
    done
    if running "$pid"; then
      fail "trial $trial ($transport): rank $rank still runs $(($(nowMs) - killedAt)) ms after rank $victim was killed: $(grep "^\[$rank\]" "$log" | tail -3)"
      continue
    fi
    took=$(($(nowMs) - killedAt))
    ((took > worst)) && worst=$took
    ((took <= limit_ms)) || fail "trial $trial ($transport): rank $rank took ${took} ms to fail"
    ((took >= min_ms)) || fail "trial $trial ($transport): rank $rank failed after ${took} ms, before its timeout"
  done
  # A stopped rank is ended now (SIGKILL works on a stopped process), which ends the job.
  [[ "$mode" == stop ]] && kill -KILL "${pids[$victim]}" 2>/dev/null
  status=0
  wait "$launcher" || status=$?
  launcher=""
  ((status != 0)) || fail "trial $trial ($transport): the job exited 0 after rank $victim was killed"
  for ((rank = 0; rank < ranks; ++rank)); do
    ((rank == victim)) && continue
    # Each survivor reports an error naming the failed rank (directly, or as the cause a peer
    # reported).
    grep -q "^\[$rank\] rank $rank/$ranks: .*rank $victim (" "$log" ||
      fail "trial $trial ($transport): rank $rank's error does not name rank $victim: $(grep "^\[$rank\]" "$log" | tail -2)"
  done
  if [[ "$mode" == stop ]]; then
    grep -q "^\[[0-9]*\] rank [0-9]*/$ranks: .*rank $victim ([^)]*) is stopped" "$log" ||
      fail "trial $trial ($transport): no survivor found rank $victim stopped: $(grep "/$ranks: " "$log" | head -3)"
  fi
  if [[ "$mode" == kill ]]; then
    grep -q "weftrun: rank $victim (pid ${pids[$victim]}) was killed by signal 9" "$log" ||
      fail "trial $trial ($transport): weftrun did not report the killed rank"
  fi
  echo "trial $trial ($transport, $mode): rank $victim; survivors failed within ${worst} ms"
  grep "^\[[0-9]*\] rank [0-9]*/$ranks: " "$log" | head -3
  for pid in "${pids[@]}"; do running "$pid" && fail "trial $trial: process $pid outlived the job"; done
  shmNow="$(ls -1 /dev/shm 2>/dev/null | sort)"
  [[ "$shmNow" == "$shmBefore" ]] || fail "trial $trial: /dev/shm changed"
done
((failures == 0)) && echo "survivors test ($transport, $mode): passed" ||
  echo "survivors test ($transport, $mode): $failures failures"
exit $((failures > 0))
