#!/usr/bin/env bash
# Time from launch to the first completed collective, per launcher, across emulated hosts: each
# job is started from node0 and ends after one 8-byte all-reduce (weft: examples/minimal, which
# initialises from the launcher's environment; Open MPI's own: MPI_Init + one MPI_Allreduce, the
# perf/baselines/mpi_allreduce_bench program with one iteration). Rounds alternate launchers;
# the table gives the median and the spread of the whole jobs' wall times.
#
#   tests/cluster/cluster.sh --raw --nodes K -- perf/launch_time.sh BUILD_DIR [--ppn P] [--rounds R]
#       [--launchers openmpi-mpi,openmpi,hydra,torchrun,weftrun]
#
# No WEFT_* variable is set: each launcher's own rendezvous is what is timed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cluster="$here/../tests/cluster"
(($# >= 1)) || { echo "usage: launch_time.sh BUILD_DIR [--ppn P] [--rounds R] [--launchers L,...]" >&2; exit 2; }
build="$(cd "$1" && pwd)"
shift
ppn=2 rounds=3 launchers="openmpi-mpi,openmpi,hydra,torchrun,weftrun"
while (($#)); do
  case "$1" in
    --ppn) ppn=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --launchers) launchers=$2; shift 2 ;;
    *) echo "launch_time.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "${CLUSTER_HOSTNAMES:-}" ]] || { echo "launch_time.sh: run under cluster.sh --raw" >&2; exit 2; }
while read -r name; do unset "$name"; done < <(compgen -e | grep '^WEFT_' || true)
export PYTHONPATH="$build/python" OMP_NUM_THREADS=1
read -ra hosts <<<"$CLUSTER_HOSTNAMES"
nodes=${#hosts[@]}
nranks=$((nodes * ppn))
IFS=, read -ra chosen <<<"$launchers"

host_slots=""
for host in "${hosts[@]}"; do host_slots+="${host_slots:+,}$host:$ppn"; done

# Runs one job of the given launcher; prints nothing, fails on a failed job.
run_job() {
  case "$1" in
    openmpi-mpi) "$cluster/mpirun.sh" --ppn "$ppn" -- "$build/perf/mpi_allreduce_bench" 8 8 1 0 ;;
    openmpi) "$cluster/mpirun.sh" --ppn "$ppn" -- "$build/examples/minimal" ;;
    hydra) "$cluster/mpiexec_hydra.sh" --ppn "$ppn" -- "$build/examples/minimal" ;;
    weftrun) "$cluster/ns_exec.sh" "${hosts[0]}" "$build/tools/weftrun" -H "$host_slots" \
               --launch-agent "$cluster/ns_exec.sh" "$build/examples/minimal" ;;
    torchrun)
      local pids=() i status=0 id="launch$RANDOM"
      for i in "${!hosts[@]}"; do
        "$cluster/ns_exec.sh" "${hosts[i]}" /usr/bin/python3 -m weft_torch.run --nnodes "$nodes" \
          --nproc_per_node "$ppn" --rdzv_backend c10d --rdzv_endpoint "${hosts[0]}:29400" \
          --rdzv_id "$id" --no_python "$build/examples/minimal" &
        pids+=($!)
      done
      for i in "${pids[@]}"; do wait "$i" || status=$?; done
      return $status ;;
    *) echo "launch_time.sh: unknown launcher '$1'" >&2; return 2 ;;
  esac
}

declare -A times
for ((round = 0; round < rounds; ++round)); do
  for launcher in "${chosen[@]}"; do
    start=$(date +%s.%N)
    run_job "$launcher" >/tmp/weft-launch-time.$$ 2>&1 ||
      { tail -20 /tmp/weft-launch-time.$$; rm -f /tmp/weft-launch-time.$$; echo "launch_time.sh: $launcher failed" >&2; exit 1; }
    end=$(date +%s.%N)
    times[$launcher]+="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f ", b - a }')"
  done
done
rm -f /tmp/weft-launch-time.$$

echo "| launcher ($nodes hosts x $ppn ranks) | median s | min-max s |"
echo "|---|---:|---:|"
for launcher in "${chosen[@]}"; do
  read -ra values <<<"${times[$launcher]}"
  printf '%s\n' "${values[@]}" | sort -n | awk -v name="$launcher" '
    { v[NR] = $1 }
    END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "| %s | %.2f | %.2f-%.2f |\n", name, m, v[1], v[NR] }'
done
