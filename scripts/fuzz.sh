#!/usr/bin/env bash
# Builds the wire-decoder fuzzer with clang (libFuzzer + ASan + UBSan) into build-fuzz/ and runs
# it on the corpus in tests/fuzz/corpus for a bounded time (CI runs it):
#   scripts/fuzz.sh [seconds]      default 60
# New inputs that reach new code are added to the corpus directory; commit the interesting ones
# (`scripts/fuzz.sh 600` then `git add tests/fuzz/corpus`). A crash leaves its input in
# build-fuzz/ (crash-*) and fails the script.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${WEFT_BUILD_DIR:-$root/build-fuzz}"
WEFT_SETUP_MINIMAL=1 WEFT_SETUP_FUZZ=1 "$root/scripts/setup.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWEFT_FUZZ=ON -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_TESTS=OFF \
  -DWEFT_BUILD_PERF=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target wire_fuzzer
corpus="$build/corpus"
rm -rf "$corpus"
mkdir -p "$corpus"
cp "$root"/tests/fuzz/corpus/* "$corpus"/
cd "$build"
# -rss_limit_mb: a decoder that allocates from an unchecked length fails here.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
./wire_fuzzer -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=8192 -timeout=5 \
  -print_final_stats=1 "$corpus"
echo "fuzz: no crash in ${seconds} s ($(ls "$corpus" | wc -l) inputs in the corpus)"
