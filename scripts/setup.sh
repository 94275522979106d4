#!/usr/bin/env bash
# Installs what weft builds and tests with, from Debian 12's packages. Idempotent: it only calls
# apt-get when a package is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config      # toolchain
  catch2                                # tests (Catch2 v2, single header)
  libssl-dev                            # HMAC authentication (libcrypto)
  libhwloc-dev                          # machine topology (cores, NUMA, NICs)
  libibverbs-dev                        # the rdma transport's headers (libibverbs is dlopen'ed)
  iproute2 procps                       # network namespaces and process checks in tests
  python3                               # the layer check (scripts/check_layers.py)
  mpich                                 # mpiexec.hydra for the PMI-1 tests (launcher.hydra.*);
                                        # beside Open MPI, whose mpirun keeps priority
  libpmix-dev                           # PMIx headers (libpmix itself is dlopen'ed)
  openmpi-bin libopenmpi-dev            # mpirun for the PMIx tests (cluster.mpi_job.openmpi),
                                        # mpicc for examples/mpi_allreduce.c (weft_mpi.h)
  slurm-wlm                             # slurmctld, slurmd, srun for cluster.slurm.*
  dpkg-dev lintian                      # the Debian packages' dependencies (dpkg-shlibdeps)
                                        # and their report in install.deb
  abigail-tools                         # abidw/abidiff for the ABI check (install.abi)
)
# The torch.distributed backend (bindings/torch) and its tests; WEFT_SETUP_NO_TORCH=1 skips them
# (the backend is then not built).
if [[ "${WEFT_SETUP_NO_TORCH:-0}" != 1 ]]; then
  packages+=(python3-torch libtorch-dev pybind11-dev python3-dev)
fi
# The fuzzer (scripts/fuzz.sh): clang ships libFuzzer.
if [[ "${WEFT_SETUP_FUZZ:-0}" == 1 ]]; then
  packages+=(clang)
fi
# Comparison baselines (perf/compare.sh); skipped with WEFT_SETUP_MINIMAL=1.
if [[ "${WEFT_SETUP_MINIMAL:-0}" != 1 ]]; then
  packages+=(python3-matplotlib)
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
