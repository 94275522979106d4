#!/usr/bin/env bash
# Starts N processes by hand with the variables torchrun, Open MPI, Slurm or a PMI-1 launcher
# would set, and checks
# that weftCommInitFromEnv brings them into one communicator (the program all-reduces and checks
# the sum). Usage: launcher_env_test.sh <torchrun|openmpi|slurm> <program> [N]
set -euo pipefail
launcher="$1"
program="$2"
n="${3:-3}"
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
for ((rank = 0; rank < n; ++rank)); do
  case "$launcher" in
    torchrun)
      env RANK=$rank WORLD_SIZE=$n LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$n \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$program" &
      ;;
    openmpi)
      # Single host: the rendezvous port is derived from the job id.
      env OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$rank \
        OMPI_COMM_WORLD_LOCAL_SIZE=$n OMPI_MCA_ess_base_jobid=$port "$program" &
      ;;
    slurm)
      env SLURM_PROCID=$rank SLURM_NTASKS=$n SLURM_LOCALID=$rank SLURM_TASKS_PER_NODE=$n \
        SLURM_STEP_ID=0 WEFT_ROOT_ADDR=127.0.0.1:$port "$program" &
      ;;
    pmi)
      # MPICH's Hydra or Intel MPI without its PMI server: the root is given by hand.
      env PMI_RANK=$rank PMI_SIZE=$n WEFT_ROOT_ADDR=127.0.0.1:$port "$program" &
      ;;
    *) echo "unknown launcher $launcher" >&2; exit 2 ;;
  esac
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
pids=()
exit $status
