#!/usr/bin/env bash
# Set up, build, and run the whole test suite (what CI runs). Extra arguments go to ctest,
# e.g. `scripts/test.sh -L unit` or `scripts/test.sh -R matrix`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
WEFT_SETUP_MINIMAL="${WEFT_SETUP_MINIMAL:-1}" "$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${WEFT_BUILD_DIR:-$root/build}"
cd "$build"
exec ctest --output-on-failure --timeout 900 -j 2 "$@"
