#!/usr/bin/env bash
# Checks libweft.so.0's ABI against the checked-in baseline, abi/libweft.so.0.abi (libabigail's
# abidw/abidiff; Debian: abigail-tools). Only what include/weft/ declares counts.
#   scripts/abi_check.sh            build build-abi/ (RelWithDebInfo, the library only) and compare
#   scripts/abi_check.sh --library L   compare libweft.so.0 at L, already built (the test suite
#                                   passes its own: src/api is always built with debug information)
#   scripts/abi_check.sh --update   rewrite the baseline from build-abi/, to commit deliberately
# Exit status: 0 compatible (additions are reported, and pass), 1 a removal or a change of a public
# type or signature (or a failure), 77 abigail-tools is not installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_ABI_BUILD_DIR:-$root/build-abi}"
baseline="$root/abi/libweft.so.0.abi"
suppressions="$root/abi/private_types.suppr"
update=0
library=""
case "${1:-}" in
  --update) update=1 ;;
  --library) library="${2:?--library needs the path of libweft.so.0}" ;;
  "") ;;
  *) echo "abi check: unknown argument '$1' (--update or --library PATH)" >&2; exit 1 ;;
esac
for tool in abidw abidiff; do
  if ! command -v "$tool" >/dev/null; then
    echo "abi check skipped: $tool not found (apt-get install abigail-tools)"
    exit 77
  fi
done

if [[ -z "$library" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_BUILD_TESTS=OFF \
    -DWEFT_BUILD_PERF=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_TOOLS=OFF -DWEFT_CUDA=OFF \
    -DWEFT_TORCH=OFF >/dev/null
  cmake --build "$build" -j "${WEFT_JOBS:-2}" --target weft >/dev/null
  library="$build/libweft.so.0"
fi
[[ -f "$library" ]] || { echo "abi check: $library does not exist" >&2; exit 1; }
current="$(mktemp /tmp/weft_abi.XXXXXX)"
report="$current.diff"
trap 'rm -f "$current" "$report"' EXIT

# The ABI as libweft's users see it: only what include/weft/ declares; the internals behind the
# opaque handles are dropped (abi/private_types.suppr). No line numbers or checkout paths: the
# file changes only when the ABI does. The baseline and the build are both written this way and
# compared as XML.
abidw --headers-dir "$root/include/weft" --drop-private-types --suppressions "$suppressions" \
  --no-corpus-path --no-comp-dir-path --no-show-locs --out-file "$current" "$library"
sed -i "s|path='$root/|path='|" "$current"
if ((update)); then
  cp "$current" "$baseline"
  echo "abi check: wrote ${baseline#"$root"/}; commit it with the change that altered the ABI"
  exit 0
fi

status=0
abidiff --no-show-locs "$baseline" "$current" >"$report" || status=$?
cat "$report"
# abidiff's status is a bit mask: 1 error, 2 usage, 4 the ABI changed, 8 incompatibly. Bit 8 is
# set for removed functions and variables only: a changed layout or signature of a public type is
# bit 4, as an addition is, so the summary lines tell them apart.
summary='s/^(Functions|Variables) changes summary: ([0-9]+) Removed, ([0-9]+) Changed.*/\2 \3/p'
changed="$(sed -nE "$summary" "$report" | tr ' ' '\n' | grep -vcx 0 || true)"
if ((status & 3)); then
  echo "abi check: abidiff failed (status $status)"
  exit 1
elif ((status & 8 || (status & 4 && changed))); then
  echo "abi check: FAILED, libweft.so.0's ABI changed (above): something public was removed or"
  echo "changed its layout or signature. Keep the old ABI (add functions instead), or, when the"
  echo "change is meant (a break also bumps WEFT_VERSION_MAJOR, the soname), record the new"
  echo "baseline deliberately: scripts/abi_check.sh --update, committed with the change."
  exit 1
elif ((status & 4)); then
  echo "abi check: additions to the ABI (above), compatible. Record them in the baseline knowingly:"
  echo "scripts/abi_check.sh --update, committed with the change."
fi
echo "abi check: libweft.so.0 is compatible with ${baseline#"$root"/}"
