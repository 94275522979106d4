#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds examples/minimal.c against it twice,
# through find_package(weft) and through pkg-config, and runs both. Usage:
#   install_test.sh <build dir> <source dir>
set -euo pipefail
build="$1"
source="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null

mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(weft 0.1 REQUIRED)
add_executable(minimal "$source/examples/minimal.c")
target_link_libraries(minimal PRIVATE weft::weft)
CMAKE
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
libdir="$(dirname "$(find "$work/prefix" -name 'libweft.so*' | head -n 1)")"
LD_LIBRARY_PATH="$libdir" "$work/consumer/build/minimal"

pcdir="$(dirname "$(find "$work/prefix" -name weft.pc)")"
flags="$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs weft)"
# shellcheck disable=SC2086
cc "$source/examples/minimal.c" $flags -o "$work/minimal-pc"
LD_LIBRARY_PATH="$libdir" "$work/minimal-pc"

# A packager's install: --prefix /usr into a DESTDIR, then a pkg-config consumer against it.
DESTDIR="$work/dest" cmake --install "$build" --prefix /usr >/dev/null
pcdir="$(dirname "$(find "$work/dest" -name weft.pc)")"
prefix="$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=prefix weft)"
[[ "$(cd "$prefix" && pwd)" == "$work/dest/usr" ]] || {
  echo "weft.pc's prefix is $prefix, not $work/dest/usr"; exit 1; }
flags="$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs weft)"
# shellcheck disable=SC2086
cc "$source/examples/minimal.c" $flags -o "$work/minimal-usr"
LD_LIBRARY_PATH="$(dirname "$(find "$work/dest" -name 'libweft.so*' | head -n 1)")" \
  "$work/minimal-usr"

# Debian's multiarch libdir (lib/x86_64-linux-gnu, what GNUInstallDirs picks for /usr): the
# weft.pc a /usr configuration writes, placed where it installs, resolves too.
cmake -S "$source" -B "$work/usr-config" -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_PERF=OFF \
  -DWEFT_BUILD_TOOLS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_TORCH=OFF -DWEFT_CUDA=OFF \
  -DWEFT_RDMA=OFF >/dev/null
multiarch="$work/multiarch/usr/lib/x86_64-linux-gnu"
mkdir -p "$multiarch/pkgconfig" "$work/multiarch/usr/include"
cp "$work/usr-config/weft.pc" "$multiarch/pkgconfig/"
cp -a "$work/dest/usr/include/weft" "$work/multiarch/usr/include/"
cp -a "$(dirname "$(find "$work/dest" -name 'libweft.so*' | head -n 1)")"/libweft.so* "$multiarch/"
flags="$(PKG_CONFIG_PATH="$multiarch/pkgconfig" pkg-config --cflags --libs weft)"
# shellcheck disable=SC2086
cc "$source/examples/minimal.c" $flags -o "$work/minimal-multiarch"
LD_LIBRARY_PATH="$multiarch" "$work/minimal-multiarch"
echo "install test: find_package and pkg-config consumers built and ran (a custom prefix," \
  "--prefix /usr into a DESTDIR, the multiarch libdir)"
