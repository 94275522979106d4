#!/bin/bash
# weft_tune fit on measured tables: it scores and fits them (before, after, held out), and a
# table it cannot use is an error naming the file.
# Usage: fit_tool_test.sh WEFT_TUNE TABLES_DIR
set -euo pipefail
weft_tune="$1"
tables="$2"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

"$weft_tune" fit --cores 2 --one-machine "$tables"/4x2.block.txt "$tables"/3x2.interleave.txt \
  "$tables"/2x4.block.txt >"$out"
cat "$out"
for expected in '^# fitted: WEFT_TUNE_SHM=' '^  start +error median' '^  fitted +error median' \
  '^  held out error median' '^all tables'; do
  grep -Eq "$expected" "$out" || { echo "FAIL: no line matching '$expected'"; exit 1; }
done
# 12 sizes per table, every one a pick that was measured.
grep -Eq '^  start .*picks within 10% +[0-9]+ of +36,' "$out" || {
  echo "FAIL: expected 36 scored picks over the three tables"; exit 1; }

status=0
"$weft_tune" fit /nonexistent/table.txt >"$out" 2>&1 || status=$?
cat "$out"
[[ $status == 2 ]] || { echo "FAIL: a missing table exited $status, not 2"; exit 1; }
grep -q '/nonexistent/table.txt' "$out" || { echo "FAIL: the error does not name the file"; exit 1; }
echo "weft_tune fit: ok"
