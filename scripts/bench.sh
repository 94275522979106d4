#!/usr/bin/env bash
# The main job: set up, build, and run all_reduce_perf on 4 local ranks over a size sweep.
# Extra arguments replace the default all_reduce_perf flags.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${WEFT_BUILD_DIR:-$root/build}"
flags=("$@")
((${#flags[@]})) || flags=(-b 8 -e 64M -f 2)
exec "$build/tools/weftrun" -n 4 "$build/perf/all_reduce_perf" "${flags[@]}"
