#!/usr/bin/env bash
# weftrun --bind-to and WEFT_BIND: where init leaves each rank and the threads it already had.
# Usage: bind_test.sh WEFTRUN BIND_PROBE
set -euo pipefail
weftrun="$1"
probe="$2"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
allowed="$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
# The allowed list expanded ("0-2,4" -> "0,1,2,4"): what an unbound rank reports.
cpus=()
IFS=, read -ra ranges <<<"$allowed"
for range in "${ranges[@]}"; do
  if [[ "$range" == *-* ]]; then
    for ((cpu = ${range%-*}; cpu <= ${range#*-}; ++cpu)); do cpus+=("$cpu"); done
  else
    cpus+=("$range")
  fi
done
all="$(IFS=,; echo "${cpus[*]}")"
fail() { echo "FAIL: $*" >&2; cat "$out" >&2; exit 1; }

# Runs the probe under weftrun with the given arguments, checks every rank reported, and that the
# earlier thread sits where the main thread does.
run() {
  local n="$1"
  shift
  "$weftrun" --timeout 60 -n "$n" "$@" "$probe" >"$out" 2>&1 || fail "weftrun $* exited $?"
  [[ "$(grep -c '^rank ' "$out")" == "$n" ]] || fail "$n ranks should have reported"
  while read -r _ _ _ main _ _ thread; do
    [[ "${main%;}" == "$thread" ]] || fail "a thread started before init is on $thread, main on $main"
  done < <(grep '^rank ' "$out")
}

# Bound: one CPU each, round robin: each allowed CPU holds n/cpus ranks, give or take one.
check_spread() {
  local n="$1" per
  per=$(grep '^rank ' "$out" | awk '{print $4}' | sed 's/;$//' | sort | uniq -c | awk '{print $1}')
  ! grep '^rank ' "$out" | awk '{print $4}' | grep -q ',' || fail "a bound rank has several CPUs"
  local expected=$((n < ${#cpus[@]} ? n : ${#cpus[@]}))
  [[ "$(wc -l <<<"$per")" == "$expected" ]] || fail "$n ranks should use $expected CPUs"
  local low=$((n / ${#cpus[@]})) high=$(((n + ${#cpus[@]} - 1) / ${#cpus[@]}))
  for count in $per; do
    ((count >= low && count <= high)) || fail "a CPU holds $count ranks (expected $low..$high)"
  done
}

check_unbound() {
  ! grep '^rank ' "$out" | grep -v "main $all;" | grep -q . || fail "ranks should keep CPUs $all"
}

n=$((${#cpus[@]} + 2))
run "$n" --bind-to core
check_spread "$n"
run "$n"  # auto: more ranks than CPUs
check_spread "$n"
run "$n" --bind-to none
check_unbound
WEFT_BIND=none run "$n"  # weftrun keeps a WEFT_BIND it was given
check_unbound
if ((${#cpus[@]} > 1)); then
  run 2 --bind-to auto  # no more ranks than CPUs: nothing to bind
  check_unbound
  run 2 --bind-to core
  check_spread 2
fi
# A launcher's binding is kept: binding happens within the CPUs a rank may use.
first="${cpus[0]}"
"$weftrun" --timeout 60 -n 3 --bind-to core taskset -c "$first" "$probe" >"$out" 2>&1 ||
  fail "taskset run exited $?"
[[ "$(grep -c "^rank .*: main $first; earlier thread $first\$" "$out")" == 3 ]] ||
  fail "ranks restricted to CPU $first should stay there"

# Bad values are refused by name.
if "$weftrun" -n 1 --bind-to sometimes "$probe" >"$out" 2>&1; then fail "--bind-to sometimes ran"; fi
grep -q "invalid --bind-to 'sometimes'" "$out" || fail "weftrun should name --bind-to"
if WEFT_BIND=sometimes "$weftrun" --timeout 60 -n 1 "$probe" >"$out" 2>&1; then
  fail "weftrun ran with WEFT_BIND=sometimes"
fi
grep -q "WEFT_BIND='sometimes' in weftrun's environment" "$out" || fail "weftrun should name WEFT_BIND"
# Without a launcher (a communicator of one) init itself refuses it.
if WEFT_BIND=sometimes timeout 60 "$probe" >"$out" 2>&1; then fail "init ran with WEFT_BIND=sometimes"; fi
grep -q "WEFT_BIND must be none, core or auto, got 'sometimes'" "$out" ||
  fail "init should name WEFT_BIND"
echo "binding: ${#cpus[@]} CPUs ($all), all cases passed"
