#!/usr/bin/env bash
# Starts N processes by hand with the variables torchrun, Open MPI, Slurm or a PMI-1 launcher
# would set, and checks
# that weftCommInitFromEnv brings them into one communicator (the program all-reduces and checks
# the sum). Usage: launcher_env_test.sh <torchrun|openmpi|slurm> <program> [N]
set -euo pipefail
launcher="$1"
program="$2"
n="${3:-3}"
pids=()
log="$(mktemp)"
cleanup() {
  cleanup_ranks
  rm -f "$log"
}
trap cleanup EXIT
# Ports below the kernel's ephemeral range, which other tests' connections draw from.
read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || ephemeral=32768

# One job on `port`; the ranks' stderr goes to $log.
run_job() {
  local port="$1" rank status=0
  : >"$log"
  for ((rank = 0; rank < n; ++rank)); do
    case "$launcher" in
      torchrun)
        env RANK=$rank WORLD_SIZE=$n LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$n \
          MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$program" 2>>"$log" &
        ;;
      openmpi)
        # Single host: the rendezvous port is derived from the job id.
        env OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$rank \
          OMPI_COMM_WORLD_LOCAL_SIZE=$n OMPI_MCA_ess_base_jobid=$port "$program" 2>>"$log" &
        ;;
      slurm)
        env SLURM_PROCID=$rank SLURM_NTASKS=$n SLURM_LOCALID=$rank SLURM_TASKS_PER_NODE=$n \
          SLURM_STEP_ID=0 WEFT_ROOT_ADDR=127.0.0.1:$port "$program" 2>>"$log" &
        ;;
      pmi)
        # MPICH's Hydra or Intel MPI without its PMI server: the root is given by hand.
        env PMI_RANK=$rank PMI_SIZE=$n WEFT_ROOT_ADDR=127.0.0.1:$port "$program" 2>>"$log" &
        ;;
      *) echo "unknown launcher $launcher" >&2; exit 2 ;;
    esac
    pids+=($!)
  done
  # A root that could not bind leaves the others waiting for it until their deadline: end
  # them at once, to be run again on another port.
  while kill -0 "${pids[@]}" 2>/dev/null; do
    if grep -q "Address already in use" "$log"; then
      cleanup_ranks
      return 75
    fi
    sleep 0.1
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  pids=()
  return $status
}

cleanup_ranks() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}

# A port another process took between our choice and the root's bind is retried on another.
for attempt in 1 2 3; do
  status=0
  run_job $((10000 + RANDOM % (ephemeral - 10000))) || status=$?
  ((status == 75)) || break
  echo "launcher_env_test: the rendezvous port was taken; again on another (attempt $attempt)" >&2
done
cat "$log" >&2
exit $status
