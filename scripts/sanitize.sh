#!/usr/bin/env bash
# Builds the library and tests with sanitizers and runs the tests under them (CI runs both):
#   scripts/sanitize.sh address,undefined
#   scripts/sanitize.sh thread
# Sanitized code runs 5-20x slower, so the rank counts of the multi-rank tests are capped at 4
# (3 under TSan; WEFT_TEST_MAX_RANKS) and the process matrices above 4 ranks (shm and tcp) are
# left to the normal build, as are the soak test (10,000 calls), the install test (its consumer
# programs are not built with the sanitizer runtime) and the emulated-cluster tests (up to 8
# ranks per run; the two-level algorithms they exercise are covered under the sanitizers by the
# thread tests). The torch backend is not built here: Python is not built with the runtimes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sanitizers="${1:?usage: scripts/sanitize.sh address,undefined|thread}"
build="${WEFT_BUILD_DIR:-$root/build-${sanitizers//,/-}}"
WEFT_SETUP_MINIMAL=1 "$root/scripts/setup.sh"
# AddressSanitizer with UBSan compiles twice as slowly at -O2 as at -O1 (the instrumented code
# is what the optimiser then works through), and -O1 is what ASan's own documentation suggests.
optimise=()
if [[ "$sanitizers" == *address* ]]; then
  optimise=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG"
            -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG")
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_SANITIZE="$sanitizers" \
  -DWEFT_BUILD_PERF=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_UNITY_BUILD=ON "${optimise[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
# ThreadSanitizer is the slower of the two (its thread matrices take minutes at 4 ranks): 3
# ranks already run every algorithm's concurrent paths; ASan+UBSan keeps 4.
default_max_ranks=4
[[ "$sanitizers" == thread ]] && default_max_ranks=3
export WEFT_TEST_MAX_RANKS="${WEFT_TEST_MAX_RANKS:-$default_max_ranks}"
# halt_on_error: a report fails its test at once, with the report in the test's output.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
# ThreadSanitizer looks for data races, so it skips what runs on one thread: the reduction
# kernels' exhaustive checks (ASan+UBSan runs them) and the process matrices, whose processes
# each run the same two threads (caller and executor) that the thread-rank matrices exercise
# far more densely.
# The process checks of the zero-copy buffers (processes.memory.*) run the code that the
# thread-rank test "every collective on plain and weftMemAlloc ..." runs here.
# faults.survivors.small is faults.survivors.shm with small counts: the same wait loop, run
# serially for 13 s; the release build runs it.
excluded='processes\.matrix\.(tcp\.)?np[5-8]|processes\.memory|faults\.survivors\.small'
# The device layer's chunked staging of large calls is the same threads as its other staged
# calls, over more chunks: ThreadSanitizer takes 45 s over it; ASan+UBSan runs it. Likewise the
# transports' 64 MiB crossings (50 s) run the threads of their smaller messages, and the
# survivors of a stopped rank (22 s, one test at a time) wait as those of a killed rank do,
# ended by their deadline instead.
[[ "$sanitizers" == thread ]] &&
  excluded='processes\.(matrix|memory)|faults\.(survivors\.small|stopped)|^reduce: |^finishAvg: |^half: |large device calls across hosts|^64 MiB messages cross both ways'
exec ctest --output-on-failure --timeout 900 -j 2 -LE 'install|soak|cluster|soft_roce' -E "$excluded" "$@"
