#!/usr/bin/env bash
# Builds the Debian packages libweft0, libweft-dev and weft-tools (cmake/packaging.cmake,
# docs/PACKAGING.md) into build-deb/, or the folder given:
#   scripts/package.sh [build dir]
# The configuration is made afresh each time (--prefix /usr, Release, no tests, examples, CUDA or
# torch backend, so that the packages depend on no toolkit), which rebuilds the packaged targets,
# and only those, with the library compiled in batches (WEFT_UNITY_BUILD): about a minute on 2
# cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-deb}"
cmake --fresh -S "$root" -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release \
  -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_CUDA=OFF -DWEFT_TORCH=OFF \
  -DWEFT_UNITY_BUILD=ON \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null   # cpack then builds nothing more
perf_tools=(all_reduce_perf all_gather_perf broadcast_perf reduce_perf reduce_scatter_perf
            alltoall_perf sendrecv_perf gather_perf scatter_perf)
cmake --build "$build" -j "${WEFT_JOBS:-2}" --target weft weftrun weft_tune "${perf_tools[@]}"
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB >/dev/null)
ls "$build"/*.deb
