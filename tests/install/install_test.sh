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
echo "install test: find_package and pkg-config consumers built and ran"
