#!/usr/bin/env bash
# The Debian packages (cmake/packaging.cmake): builds them with scripts/package.sh (or takes the
# .debs in the folder given), runs lintian when it is installed (a report, not a verdict), checks
# each package's contents and Depends, then installs them with dpkg -i, runs the installed tools
# and builds a consumer through pkg-config and find_package(weft) against /usr, and purges them
# again on every way out. Usage:
#   deb_test.sh <source dir> [folder of built .debs]
# Skipped (77) without root or dpkg-deb. The install part is skipped when libweft0 is installed
# already: the test leaves alone a system it did not set up.
set -euo pipefail
source="$1"
debs="${2:-}"
[[ $(id -u) -eq 0 ]] || { echo "deb test skipped: dpkg -i needs root"; exit 77; }
command -v dpkg-deb >/dev/null || { echo "deb test skipped: dpkg-deb not found"; exit 77; }
if [[ -z "$debs" ]]; then
  debs="$source/build-deb"
  "$source/scripts/package.sh" "$debs" >/dev/null
fi
fail() { echo "deb test: $*" >&2; exit 1; }
package_file() {
  local files=("$debs"/"$1"_*.deb)
  if ((${#files[@]} != 1)) || [[ ! -f "${files[0]}" ]]; then
    fail "expected one $1_*.deb in $debs"
  fi
  echo "${files[0]}"
}
runtime="$(package_file libweft0)"
dev="$(package_file libweft-dev)"
tools="$(package_file weft-tools)"
version="$(dpkg-deb -f "$runtime" Version)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)"
libdir="usr/lib/$multiarch"

if command -v lintian >/dev/null; then
  echo "--- lintian (report only)"
  # lintian leaves its scratch databases (mldbm-elf-*) in TMPDIR: give it one of its own.
  scratch="$(mktemp -d /tmp/weft-lintian.XXXXXX)"
  TMPDIR="$scratch" lintian --tag-display-limit 0 "$runtime" "$dev" "$tools" || true
  rm -rf "$scratch"
fi

# Contents: each path listed must be in the package, and the library files only in libweft0.
contents() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'; }
expect() {
  local deb="$1" listing
  shift
  listing="$(contents "$deb")"
  for path in "$@"; do
    grep -qx "$path" <<<"$listing" || fail "$(basename "$deb") lacks $path"
  done
}
lib_version="${version%%-*}"
expect "$runtime" "/$libdir/libweft.so.${lib_version}" "/$libdir/libweft.so.0"
expect "$dev" /usr/include/weft/weft.h /usr/include/weft/weft_mpi.h "/$libdir/libweft.so" \
  "/$libdir/pkgconfig/weft.pc" "/$libdir/cmake/weft/weftConfig.cmake" \
  "/$libdir/cmake/weft/weftConfigVersion.cmake" "/$libdir/cmake/weft/weftTargets.cmake"
perf_tools=(all_reduce_perf all_gather_perf broadcast_perf reduce_perf reduce_scatter_perf
            alltoall_perf sendrecv_perf gather_perf scatter_perf)
expect "$tools" /usr/bin/weftrun /usr/bin/weft_tune "${perf_tools[@]/#//usr/bin/}"
if grep -q "libweft\.so\.0" <<<"$(contents "$dev")$(contents "$tools")"; then
  fail "libweft.so.0 is packaged outside libweft0"
fi
if grep -q "/include/\|/bin/" <<<"$(contents "$runtime")"; then
  fail "libweft0 holds headers or programs"
fi

# Depends: the libraries dpkg-shlibdeps found, and libweft0 at this exact version.
depends() { dpkg-deb -f "$1" Depends; }
for needed in libc6 libssl3 libstdc++6; do
  grep -q "\b$needed\b" <<<"$(depends "$runtime")" || fail "libweft0 does not depend on $needed"
done
for deb in "$dev" "$tools"; do
  grep -qF "libweft0 (= $version)" <<<"$(depends "$deb")" ||
    fail "$(basename "$deb") does not depend on libweft0 (= $version): $(depends "$deb")"
done
for deb in "$runtime" "$dev" "$tools"; do
  echo "$(dpkg-deb -f "$deb" Package) $version: Depends: $(depends "$deb")"
done

# No RPATH in /usr (Debian policy): the loader finds libweft in the system libdir.
work="$(mktemp -d)"
installed=0
cleanup() {
  if ((installed)); then
    dpkg -P weft-tools libweft-dev libweft0 >/dev/null || echo "deb test: dpkg -P failed"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
dpkg-deb -x "$tools" "$work/tools"
dpkg-deb -x "$runtime" "$work/runtime"
for binary in "$work"/tools/usr/bin/* "$work/runtime/$libdir/libweft.so.0"; do
  if grep -q "RPATH\|RUNPATH" <<<"$(readelf -d "$binary")"; then fail "$binary has an RPATH"; fi
done
echo "deb test: contents, Depends and RPATHs of the three packages are right"

if dpkg -s libweft0 >/dev/null 2>&1; then
  echo "deb test: libweft0 is installed already; the dpkg -i part is left out"
  exit 0
fi
installed=1
dpkg -i "$runtime" "$dev" "$tools" >/dev/null
unset LD_LIBRARY_PATH
export WEFT_SOCKET_IFNAME=lo WEFT_TIMEOUT=60
output="$(/usr/bin/weftrun --timeout 120 -n 2 /usr/bin/all_reduce_perf -b 8 -e 1M -f 4 -c 1)" ||
  { echo "$output"; fail "the installed all_reduce_perf failed"; }
# Every size's #wrong columns (out of place, in place) are 0, and the summary agrees.
wrong="$(awk '!/^#/ && NF >= 13 { rows++; if ($9 != 0 || $13 != 0) bad++ }
              END { print (rows ? bad + 0 : "no rows") }' <<<"$output")"
if [[ "$wrong" != 0 ]] || ! grep -q "Out of bounds values : 0 OK" <<<"$output"; then
  echo "$output"
  fail "the installed all_reduce_perf reported wrong values ($wrong)"
fi
/usr/bin/weft_tune --nodes 2 --ppn 2 --net 10Gbit,10us >/dev/null ||
  fail "the installed weft_tune failed"

# Consumers of the installed dev package: pkg-config, and find_package(weft) with no hints.
# shellcheck disable=SC2046
cc "$source/examples/minimal.c" $(pkg-config --cflags --libs weft) -o "$work/minimal-pc"
mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(weft ${lib_version} EXACT REQUIRED)
add_executable(minimal "$source/examples/minimal.c")
target_link_libraries(minimal PRIVATE weft::weft)
CMAKE
cmake -S "$work/consumer" -B "$work/consumer/build" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
for program in "$work/minimal-pc" "$work/consumer/build/minimal"; do
  if ! output="$(/usr/bin/weftrun --timeout 60 -n 2 "$program")" ||
     [[ "$(grep -c "sum of ranks = 1 (expected 1)" <<<"$output")" != 2 ]]; then
    echo "$output"
    fail "$program, built against the installed package, failed on 2 ranks"
  fi
done
echo "deb test: installed with dpkg -i; weftrun, all_reduce_perf, weft_tune and consumers built" \
  "with pkg-config and find_package(weft) ran from /usr; purged again"
