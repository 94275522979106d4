# Checks shared by the tests that start all_reduce_perf across emulated hosts; sourced, with
# fail() defined by the test.
#
# check_perf_job OUT LOG: all_reduce_perf's stdout OUT says every value was right (#wrong 0 in
# every row) and rank 0's log LOG (WEFT_DEBUG=INFO) says 6 ranks on 3 nodes, 2 per node. Sets
# job_hosts to the hosts the ranks ran on, as "node0x2 node1x2 node2x2 " (host x ranks).
check_perf_job() {
  local out=$1 log=$2 wrong
  grep -q "Out of bounds values : 0 OK" "$out" || { cat "$out"; fail "wrong results"; }
  wrong="$(awk '$1 ~ /^[0-9]+$/ && NF >= 13 && ($9 != 0 || $13 != 0)' "$out")"
  [[ -z "$wrong" ]] || fail "rows with #wrong != 0: $wrong"
  grep -q "comm [^:]*: 6 ranks on 3 nodes, 2 per node" "$log" ||
    { grep "INFO" "$log" | head || true; fail "rank 0's log does not say 6 ranks on 3 nodes"; }
  job_hosts="$(awk '/^#  Rank/ { for (i = 1; i < NF; i++) if ($i == "on") print $(i + 1) }' "$out" |
    sort | uniq -c | awk '{ print $2 "x" $1 }' | tr '\n' ' ')"
  [[ "$job_hosts" == "node0x2 node1x2 node2x2 " ]] ||
    fail "ranks ran on '$job_hosts', not 2 on each of node0 node1 node2"
}

# readme_recipes README HEADING APP PREFIX: writes each sh block under the README's heading (any
# level, exact text) to PREFIX.1.sh, PREFIX.2.sh, ..., with ./app replaced by APP, so that a test
# runs the recipes exactly as the README gives them.
readme_recipes() {
  local readme=$1 heading=$2 app=$3 prefix=$4
  awk -v heading="$heading" -v prefix="$prefix" '
    /^#+ / { inside = ($0 == heading) }
    inside && /^```sh$/ { file = prefix "." (++n) ".sh"; next }
    inside && /^```$/ { file = ""; next }
    file != "" { print > file }' "$readme"
  sed -i "s|\./app|$app|g" "$prefix".*.sh 2>/dev/null || true
}
