#!/usr/bin/env bash
# Tuning tables end to end, on 4 ranks: weft_tune measure writes a table for the job's own
# layout; a job started with a table follows its rules; ranks given different tables fail
# together, naming the ranks, instead of waiting on each other; a table measured on another
# layout is refused with a warning and the job runs on the model; weft_tune explain reads the
# table and says why its choice won; on several nodes, online trials settle on a winner.
#
#   tuning_table_job_test.sh local   WEFTRUN    WEFT_TUNE ALL_REDUCE_PERF   (one host)
#   tuning_table_job_test.sh cluster CLUSTER_SH WEFT_TUNE ALL_REDUCE_PERF   (2 x 2, interleaved)
set -euo pipefail
mode="$1" launcher="$2" tune="$3" perf="$4"
dir="$(mktemp -d /tmp/weft-tune-job.XXXXXX)"
trap 'rm -rf "$dir"' EXIT

run() {
  if [[ "$mode" == local ]]; then
    "$launcher" --timeout 120 -n 4 "$@"
  else
    "$launcher" --timeout 120 --nodes 2 --ppn 2 --numbering interleave -- "$@"
  fi
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
show() {
  echo "--- $1" >&2
  tail -n 30 "$1" >&2
}

# The measurement: every listed collective, a short sweep, one table on rank 0.
status=0
run "$tune" measure --colls allreduce,broadcast,allgather --min 16 --max 16K --rounds 2 \
  --target-ms 2 --slices 1K --out "$dir/measured.txt" >"$dir/measure.log" 2>&1 || status=$?
((status != 77)) || exit 77 # no namespaces here (cluster.sh said why)
((status == 0)) || { show "$dir/measure.log"; fail "weft_tune measure exited $status"; }
layout="$(sed -n 's/^layout //p' "$dir/measured.txt")"
[[ "$layout" == "ranks=4 "* ]] || fail "measured table has layout '$layout'"
for coll in allreduce broadcast allgather; do
  grep -q "^rule $coll 0 " "$dir/measured.txt" || fail "no $coll rule from 0 bytes"
  grep -q "^measured $coll 16 " "$dir/measured.txt" || grep -q "^measured $coll 4 " \
    "$dir/measured.txt" || fail "no $coll measurement at the smallest size"
done
[[ "$(grep -c '^measured allreduce ' "$dir/measured.txt")" -ge 12 ]] ||
  fail "expected several candidates at each of 6 all-reduce sizes"
grep -q "^# wrote $dir/measured.txt" "$dir/measure.log" || fail "measure did not say where it wrote"
# Slice variants: where 1 KiB slices cut the call otherwise than the default 512 KiB (a 16 KiB
# ring's 4 KiB blocks, a 16 KiB chain), not where they cannot (a 1 KiB ring's 256-byte blocks).
grep -q "^measured allreduce 16384 ring@1K " "$dir/measured.txt" || fail "no ring@1K at 16 KiB"
grep -q "^measured broadcast 16384 chain@1K " "$dir/measured.txt" || fail "no chain@1K at 16 KiB"
if grep -q "^measured allreduce 1024 ring@1K " "$dir/measured.txt"; then
  fail "ring@1K timed at 1 KiB, where it cuts nothing"
fi

# all_reduce_perf with the table $dir/NAME.txt, checking every result (-c 1); log in $dir/NAME.log.
run_with_table() {
  local name="$1" status=0
  shift
  run env WEFT_TUNE_FILE="$dir/$name.txt" WEFT_DEBUG=INFO "$perf" "$@" -c 1 >"$dir/$name.log" 2>&1 ||
    status=$?
  ((status == 0)) || { show "$dir/$name.log"; fail "the job with the $name table exited $status"; }
}

# A job with the measured table loads it (and its results are right).
run_with_table measured -b 16 -e 16K -f 4 -n 3 -w 1
grep -q "tuning table $dir/measured.txt" "$dir/measured.log" || fail "measured table not loaded"

# A table choosing ring everywhere, which the library would not choose itself for these sizes.
printf 'weft-tuning 1\nlayout %s\nrule allreduce 0 - ring\n' "$layout" >"$dir/ring.txt"
run_with_table ring -b 16 -e 16K -f 4 -n 3 -w 1
grep -q "allreduce of 16384 bytes (float32): ring (tuning table)" "$dir/ring.log" ||
  { show "$dir/ring.log"; fail "the table's rule was not followed"; }
if awk '/allreduce of [0-9]+ bytes \(float32\): / && !/: ring / { found = 1 } END { exit !found }' \
  "$dir/ring.log"; then
  fail "an all-reduce size ran another algorithm than the table's"
fi
status=0
run env -u WEFT_TUNE_FILE WEFT_DEBUG=INFO XDG_CONFIG_HOME="$dir/none" "$perf" -b 16384 -e 16384 \
  -n 1 -w 0 >"$dir/model.log" 2>&1 || status=$?
((status == 0)) || { show "$dir/model.log"; fail "the job without a table exited $status"; }
if grep -q "allreduce of 16384 bytes (float32): ring" "$dir/model.log"; then
  fail "without a table the library also chooses ring: the check above proves nothing"
fi

# A table that names a slice: the ring runs on 1 KiB slices, and its results are right.
printf 'weft-tuning 1\nlayout %s\nrule allreduce 0 - ring@1K\n' "$layout" >"$dir/slice.txt"
run_with_table slice -b 16 -e 64K -f 16 -n 3 -w 1
grep -q "allreduce of 65536 bytes (float32): ring@1K (tuning table)" "$dir/slice.log" ||
  { show "$dir/slice.log"; fail "the table's slice was not followed"; }

# Rank 3 with another table: every rank fails at init, naming both groups, well before the
# launcher's timeout.
printf 'weft-tuning 1\nlayout %s\nrule allreduce 0 - recursive_doubling\n' "$layout" >"$dir/rd.txt"
status=0
start=$SECONDS
run sh -c 'if [ "$WEFT_RANK" = 3 ]; then WEFT_TUNE_FILE="$1"; else WEFT_TUNE_FILE="$2"; fi
  export WEFT_TUNE_FILE; exec "$3" -b 16 -e 16 -n 1 -w 0' sh "$dir/rd.txt" "$dir/ring.txt" \
  "$perf" >"$dir/mismatch.log" 2>&1 || status=$?
((status != 0)) || fail "ranks with different tables started"
((SECONDS - start < 60)) || fail "the mismatch took $((SECONDS - start)) s to fail"
grep -q "different tuning tables (ranks 0-2: table [0-9a-f]*; ranks 3: table" "$dir/mismatch.log" ||
  grep -q "different tuning tables (ranks 3: table [0-9a-f]*; ranks 0-2: table" "$dir/mismatch.log" ||
  { show "$dir/mismatch.log"; fail "the mismatch error does not name the ranks"; }

# A table from another layout: refused with a warning naming both layouts; the job runs.
printf 'weft-tuning 1\nlayout %s\nrule allreduce 0 - ring\n' \
  "ranks=4 nodes=4 per-node=1,1,1,1 numbering=block intra=shm net=tcp" >"$dir/other.txt"
status=0
run env WEFT_TUNE_FILE="$dir/other.txt" "$perf" -b 16 -e 64 -n 1 -w 0 -c 1 >"$dir/other.log" 2>&1 ||
  status=$?
((status == 0)) || { show "$dir/other.log"; fail "the job with another layout's table exited $status"; }
grep -q "WEFT_TUNE_FILE has no table for this layout ('$layout')" "$dir/other.log" ||
  { show "$dir/other.log"; fail "no warning about the other layout's table"; }

# Online trials (several nodes only: one host keeps its measured size rules): the job settles on
# a winner per size, and its results are right throughout (-c 1 checks every iteration).
if [[ "$mode" == cluster ]]; then
  status=0
  run env -u WEFT_TUNE_FILE XDG_CONFIG_HOME="$dir/none" WEFT_TUNE_ONLINE=2 WEFT_DEBUG=INFO "$perf" \
    -b 4K -e 256K -f 8 -n 12 -w 2 -c 1 >"$dir/online.log" 2>&1 || status=$?
  ((status == 0)) || { show "$dir/online.log"; fail "the job with online trials exited $status"; }
  grep -q "allreduce of 262144 bytes (float32): .* after online trials" "$dir/online.log" ||
    { show "$dir/online.log"; fail "no online trial settled at 256 KiB"; }
fi

# explain: the table's choice and why.
"$tune" explain --coll allreduce --bytes 4K --table "$dir/ring.txt" >"$dir/explain.log" 2>&1 ||
  { show "$dir/explain.log"; fail "weft_tune explain"; }
grep -q "^choice: ring" "$dir/explain.log" || { show "$dir/explain.log"; fail "explain's choice"; }
grep -q "^why: the table's rule" "$dir/explain.log" || fail "explain does not say why"
"$tune" explain --coll allreduce --bytes 4K --table "$dir/measured.txt" >"$dir/explain2.log" 2>&1 ||
  { show "$dir/explain2.log"; fail "weft_tune explain on the measured table"; }
grep -q "measured at 4 KiB" "$dir/explain2.log" || { show "$dir/explain2.log"; fail "no measured column"; }
"$tune" explain --coll allreduce --bytes 16K --table "$dir/measured.txt" >"$dir/explain3.log" 2>&1 ||
  { show "$dir/explain3.log"; fail "weft_tune explain at 16 KiB"; }
grep -q "^ring@1K " "$dir/explain3.log" || { show "$dir/explain3.log"; fail "explain omits ring@1K"; }
echo "tuning tables: ok ($mode)"
