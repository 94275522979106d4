#!/usr/bin/env bash
# Init against the number of ranks on one host: the wall time of init plus one checked 8-byte
# all-reduce, and the descriptors, threads and resident memory per rank after it
# (perf/init_footprint.cc), for ranks as threads of one process and as processes under weftrun.
# Rounds alternate the builds and the sizes; the table gives the median wall time and its
# spread. Several builds (e.g. before and after a change) are compared side by side; a build
# without init_footprint gets it compiled from this checkout against its library. A build
# given as BUILD_DIR@VAR=VALUE[,VAR=VALUE] runs with those variables set, so that one build can
# be compared with itself under two settings (build@WEFT_RUNTIME_CONNECT=0 against build).
#
#   perf/init_scale.sh BUILD_DIR[@VAR=VALUE,...] [BUILD_DIR...] [--threads 16,256,1024]
#       [--processes 16,64,192] [--rounds 3]
#
# Loopback only (WEFT_SOCKET_IFNAME=lo). A failed init is a row saying so, not an abort.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
threads="16,64,256,512,1024" processes="16,64,128,192" rounds=3 builds=()
while (($#)); do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --processes) processes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -*) echo "init_scale.sh: unknown option '$1'" >&2; exit 2 ;;
    *@*) builds+=("$(cd "${1%%@*}" && pwd)@${1#*@}"); shift ;;
    *) builds+=("$(cd "$1" && pwd)"); shift ;;
  esac
done
((${#builds[@]} >= 1)) || { echo "usage: init_scale.sh BUILD_DIR... [--threads L] [--processes L] [--rounds R]" >&2; exit 2; }
export WEFT_SOCKET_IFNAME=lo
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
labels=("${builds[@]}") settings=()
for b in "${!builds[@]}"; do
  settings[b]=""
  if [[ ${builds[b]} == *@* ]]; then
    settings[b]=${builds[b]#*@}
    builds[b]=${builds[b]%%@*}
  fi
done
for build in "${builds[@]}"; do
  if [[ ! -x $build/perf/init_footprint ]]; then
    g++ -O2 -std=c++17 -I"$here/../include" -I"$build/include" "$here/init_footprint.cc" \
      -o "$build/perf/init_footprint" -L"$build" -Wl,-rpath,"$build" -lweft -pthread
  fi
done

# One job; appends "wall_s fds threads rss_kb wrong" (per rank) to $out/<build#>-<kind>-<n>.
run_once() {
  local b=$1 kind=$2 n=$3 log="$out/job.log" start end
  local build=${builds[$b]} vars=()
  local probe="$build/perf/init_footprint" weftrun="$build/tools/weftrun"
  [[ -n ${settings[$b]} ]] && IFS=, read -ra vars <<<"${settings[$b]}"
  start=$(date +%s.%N)
  if [[ $kind == threads ]]; then
    timeout 120 env "${vars[@]}" "$probe" -t "$n" >"$log" 2>&1 || echo "failed" >>"$log"
  else
    timeout 120 env "${vars[@]}" "$weftrun" -n "$n" "$probe" >"$log" 2>&1 || echo "failed" >>"$log"
  fi
  end=$(date +%s.%N)
  python3 - "$kind" "$n" "$start" "$end" "$log" >>"$out/$b-$kind-$n" <<'EOF'
import re, statistics, sys
kind, n, start, end, log = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rows = [dict(re.findall(r"(\w+)=([\d.]+)", line)) for line in open(log) if line.startswith("footprint ")]
failed = len(rows) == 0 or any(line.strip() == "failed" for line in open(log))
if failed:
    print("failed")
else:
    ranks = sum(int(r["ranks"]) for r in rows)
    per = lambda key: statistics.median(float(r[key]) / int(r["ranks"]) for r in rows)
    wrong = sum(int(r["wrong"]) for r in rows)
    print(f"{end - start:.3f} {per('fds'):.1f} {per('threads'):.2f} {per('rss_kb'):.0f} {wrong}")
EOF
}

IFS=, read -ra thread_sizes <<<"$threads"
IFS=, read -ra process_sizes <<<"$processes"
for ((round = 0; round < rounds; ++round)); do
  for n in "${thread_sizes[@]}"; do
    for b in "${!builds[@]}"; do [[ -n $n ]] && run_once "$b" threads "$n"; done
  done
  for n in "${process_sizes[@]}"; do
    for b in "${!builds[@]}"; do [[ -n $n ]] && run_once "$b" processes "$n"; done
  done
done

for b in "${!builds[@]}"; do echo "build $b: ${labels[$b]}"; done
echo
echo "| build | ranks as | N | init + first all-reduce, s (median, min-max of $rounds) | fds per rank | threads per rank | resident KiB per rank | #wrong |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for kind in threads processes; do
  [[ $kind == threads ]] && sizes=("${thread_sizes[@]}") || sizes=("${process_sizes[@]}")
  for n in "${sizes[@]}"; do
    [[ -n $n ]] || continue
    for b in "${!builds[@]}"; do
    python3 - "$kind" "$n" "$out/$b-$kind-$n" "$b" <<'EOF'
import statistics, sys
kind, n, path, build = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
lines = [l.split() for l in open(path)]
ok = [l for l in lines if l[0] != "failed"]
if not ok:
    print(f"| {build} | {kind} | {n} | init failed in every round | | | | |")
    sys.exit()
walls = [float(l[0]) for l in ok]
last = ok[-1]
note = "" if len(ok) == len(lines) else f" ({len(lines) - len(ok)} rounds failed)"
print(f"| {build} | {kind} | {n} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}){note} "
      f"| {last[1]} | {last[2]} | {last[3]} | {sum(int(l[4]) for l in ok)} |")
EOF
    done
  done
done
