#!/usr/bin/env bash
# Variables that say a process is one of several ranks never make a silent communicator of one:
# processes started with them but with nothing to join fail at init, within seconds, with an error
# that names the variables. Usage: launcher_refused_test.sh <program>
set -euo pipefail
program="$1"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# expect_refused NAME FRAGMENT VAR=VALUE... : every started process exits non-zero and its
# output names FRAGMENT.
expect_refused() {
  local name="$1" fragment="$2"
  shift 2
  local status=0
  timeout 30 env "$@" "$program" >"$work/$name.out" 2>&1 || status=$?
  if ((status == 0)); then
    echo "FAIL ($name): the process exited 0 (a silent singleton?):"; cat "$work/$name.out"; exit 1
  fi
  if ((status == 124)); then
    echo "FAIL ($name): the process hung"; cat "$work/$name.out"; exit 1
  fi
  if ! grep -qF -- "$fragment" "$work/$name.out"; then
    echo "FAIL ($name): the error does not name '$fragment':"; cat "$work/$name.out"; exit 1
  fi
  echo "ok ($name): $(grep -F -- "$fragment" "$work/$name.out" | head -1)"
}

# Two processes of a PMI-1 job (MPICH's Hydra, Intel MPI) started without its PMI server.
for rank in 0 1; do
  expect_refused "pmi$rank" "PMI_RANK=$rank PMI_SIZE=2" PMI_RANK=$rank PMI_SIZE=2 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
pids=()
expect_refused mvapich "MV2_COMM_WORLD_SIZE=4" MV2_COMM_WORLD_RANK=1 MV2_COMM_WORLD_SIZE=4
expect_refused sbatch "srun" SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_JOB_ID=77
expect_refused size_only "WORLD_SIZE=4" WORLD_SIZE=4
expect_refused pmix "PMIX_RANK=0" PMIX_RANK=0
expect_refused conflict "conflicting" OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 \
  PMI_RANK=1 PMI_SIZE=2 WEFT_ROOT_ADDR=127.0.0.1:1
echo "launcher_refused: 7 processes refused"
