#!/usr/bin/env bash
# Runs weft under a real Slurm on the emulated cluster of tests/cluster/cluster.sh --raw: one
# slurmctld on node0 and one slurmd per node, each inside its node's namespaces, and srun and
# sbatch run on node0. Nothing is exported by hand: ranks find each other from Slurm's variables.
#
#   cluster.sh --raw --nodes 3 -- slurm_cluster.sh --perf ALL_REDUCE_PERF --minimal MINIMAL \
#       [--keep DIR] [CASE...]
#
# Cases (default: all but pmix, which cluster.slurm.pmix runs on its own):
#   srun    srun -N 3 -n 6 --mpi=none all_reduce_perf: no wrong values, 6 ranks on 3 nodes, rank 0
#           on node0; then srun -m cyclic over uneven nodes (2,2,1)
#   sbatch  an sbatch script with srun inside (sbatch --wait); the secret it exports is used
#   lone    weft's minimal example started in an sbatch script without srun fails at init,
#           naming SLURM_STEP_ID; what a batch script and a step see is checked and recorded
#   mpi     srun --mpi=pmi2: its variables, and weft under it; --mpi=pmix's variables recorded
#   killed  a rank on node2 killed with SIGKILL mid-job: every survivor fails within 2 s
#           naming it, srun exits non-zero, no process is left on any node
#   readme  the README's recipe ("### Slurm" in "Running on a cluster"), as written there
#   pmix    srun --mpi=pmix: weft's rendezvous through Slurm's PMIx server
#   timing  (for perf/launch_time.sh, never by default) srun's launch to first collective: whole
#           jobs of weft's minimal example, --mpi=none and --mpi=pmix alternating, TIMING_PPN
#           (2) ranks per node, TIMING_ROUNDS (3) rounds; prints the median and the spread
#
# Slurm runs with auth/none (no munge), proctrack/linuxproc and task/none, each node declaring 2
# CPUs. The daemons start once per run (about 1 s) and serve every case. Slurm's files
# (slurm.conf, state, spool, logs, the cases' output) live in a temporary directory (or DIR,
# kept). Everything this script started is ended on every exit path: the daemons by their
# recorded pids, then any process still inside the nodes' network namespaces (which cluster.sh
# created for this run alone: steps and their tasks). The environment Slurm gave the batch
# script, a step and the PMI-2 and PMIx steps is printed at the end. Exit status: 0 when every
# case passed, 1 when one failed, 77 (ctest's skip code) when Slurm cannot run here (why is
# printed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=job_checks.sh
source "$here/job_checks.sh"  # readme_recipes

skip() { echo "SKIP: $*"; exit 77; }
note() { echo "slurm: $*" >&2; }

perf="" minimal="" keep="" cases=()
while (($#)); do
  case "$1" in
    --perf) perf="$2"; shift 2 ;;
    --minimal) minimal="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) cases+=("$1"); shift ;;
  esac
done
((${#cases[@]})) || cases=(srun sbatch lone mpi killed readme)
usage_error() { echo "slurm_cluster.sh: $*" >&2; exit 2; }
[[ -x "$perf" && -x "$minimal" ]] || usage_error "--perf and --minimal must name the built programs"
perf="$(cd "$(dirname "$perf")" && pwd)/$(basename "$perf")"
minimal="$(cd "$(dirname "$minimal")" && pwd)/$(basename "$minimal")"
[[ -n "${CLUSTER_NAMESPACES:-}" ]] || usage_error "run under tests/cluster/cluster.sh --raw"
read -ra namespaces <<<"$CLUSTER_NAMESPACES"
read -ra hosts <<<"$CLUSTER_HOSTNAMES"
read -ra addrs <<<"$CLUSTER_ADDRS"
((${#hosts[@]} >= 3)) || usage_error "needs --nodes 3 or more"

for program in slurmctld slurmd srun sbatch scontrol sinfo squeue; do
  command -v "$program" >/dev/null || skip "Slurm's $program is not installed (Debian: slurm-wlm)"
done
[[ -n "$(find /usr/lib -maxdepth 4 -path '*slurm*' -name auth_none.so 2>/dev/null)" ]] ||
  skip "Slurm's auth/none plugin is not installed (Slurm 23.11 and later have none)"

# Launchers' variables from the calling environment would be weft's to read: none may leak in.
unset WEFT_RANK WEFT_NRANKS WEFT_LOCAL_RANK WEFT_LOCAL_NRANKS WEFT_ROOT_ADDR WEFT_SECRET \
  WEFT_SOCKET_IFNAME WEFT_HOSTID RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR \
  MASTER_PORT PMI_RANK PMI_SIZE PMIX_RANK PMIX_NAMESPACE
while read -r name; do
  unset "$name"
done < <(compgen -e | grep -E '^(SLURM_|SBATCH_|SRUN_|SALLOC_)' || true)

# ---- state and cleanup --------------------------------------------------------------------------

dir="" daemon_pids=() failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Every process inside the nodes' network namespaces belongs to this run.
leftovers() {
  local ns
  for ns in "${namespaces[@]}"; do ip netns pids "$ns" 2>/dev/null || true; done
}

# Quick enough to finish inside cluster.sh's own grace period (2 s) when it ends us on timeout.
cleanup() {
  local status=$? pid tick
  trap '' INT TERM HUP
  for pid in "${daemon_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((tick = 0; tick < 15; ++tick)); do
    local alive=0
    for pid in "${daemon_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${daemon_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${daemon_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  # slurmstepd detaches from slurmd, and steps may still run: whatever is left in our
  # namespaces goes now.
  for pid in $(leftovers); do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ -n "$dir" && -z "$keep" ]]; then rm -rf "$dir"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# on HOST COMMAND-LINE: runs a shell command line on a node, with Slurm's configuration. In the
# background, waited for: a signal's trap then runs at once instead of after the command.
on() {
  local host="$1"
  shift
  SLURM_CONF="$dir/slurm.conf" "$here/ns_exec.sh" "$host" "$*" &
  wait $!
}

# ---- the cluster --------------------------------------------------------------------------------

if [[ -n "$keep" ]]; then
  mkdir -p "$keep"
  dir="$(cd "$keep" && pwd)"
else
  dir="$(mktemp -d /tmp/weft-slurm.XXXXXX)"
fi
chmod 755 "$dir"
mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/out"

write_config() {
  local i
  cat >"$dir/slurm.conf" <<EOF
# Generated by tests/cluster/slurm_cluster.sh for one test run.
ClusterName=weft
SlurmctldHost=${hosts[0]}(${addrs[0]})
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
# No munge: the cluster is one machine's namespaces, reachable only from within.
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
# The machine has fewer cores than the nodes declare: believe the configuration.
SlurmdParameters=config_overrides
SlurmdTimeout=30
InactiveLimit=0
KillWait=1
MinJobAge=2
MessageTimeout=5
EOF
  # slurmd 22.05 initialises a cgroup plugin whatever the plugins above need, and autodetection
  # fails where /sys is the namespace's own (ip netns exec mounts one): name the plugin instead.
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
  echo "PMIxCliTmpDirBase=$dir/tmp/pmix" >"$dir/mpi.conf"
  mkdir -p "$dir/tmp/pmix"
  for i in "${!hosts[@]}"; do
    echo "NodeName=${hosts[i]} NodeAddr=${addrs[i]} CPUs=2 State=UNKNOWN" >>"$dir/slurm.conf"
  done
  echo "PartitionName=weft Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE" \
    >>"$dir/slurm.conf"
}

# start_daemon NAME HOST COMMAND-LINE: the daemon in the foreground (-D) on HOST; ns_exec.sh and
# the shells it runs exec in place (the command line ends in exec), so $! is the daemon itself.
start_daemon() {
  SLURM_CONF="$dir/slurm.conf" "$here/ns_exec.sh" "$2" "$3" >"$dir/log/$1.out" 2>&1 &
  daemon_pids+=($!)
}

start_cluster() {
  write_config
  start_daemon slurmctld "${hosts[0]}" "exec slurmctld -D -i"
  local i tick
  for ((tick = 0; tick < 100; ++tick)); do
    on "${hosts[0]}" "scontrol ping" 2>/dev/null | grep -q UP && break
    sleep 0.1
  done
  # The nodes share this machine's file system, where Slurm's PMIx plugin makes one directory
  # per step under PMIxCliTmpDirBase: each slurmd gets a private one, bind-mounted in the mount
  # namespace that ip netns exec gave it (its steps inherit it; nothing is mounted outside).
  for i in "${!hosts[@]}"; do
    mkdir -p "$dir/tmp/${hosts[i]}"
    start_daemon "slurmd.${hosts[i]}" "${hosts[i]}" \
      "mount --bind $dir/tmp/${hosts[i]} $dir/tmp/pmix && exec slurmd -D -N ${hosts[i]}"
  done
  local states=""
  for ((tick = 0; tick < 150; ++tick)); do
    states="$(on "${hosts[0]}" "sinfo -h -N -o '%N=%T'" 2>/dev/null | sort -u | tr '\n' ' ')"
    [[ "$(grep -o '=idle' <<<"$states" | wc -l)" -eq "${#hosts[@]}" ]] && break
    sleep 0.2
  done
  if [[ "$(grep -o '=idle' <<<"$states" | wc -l)" -ne "${#hosts[@]}" ]]; then
    tail -n 5 "$dir"/log/*.log >&2 || true
    skip "Slurm's daemons do not run here: nodes ${states:-unknown to slurmctld} (logs above)"
  fi
  note "slurmctld on ${hosts[0]}, slurmd on ${hosts[*]}: $states"
}


# ---- the cases ----------------------------------------------------------------------------------

# expect_in FILE PATTERN WHAT: FILE must hold a line matching the extended regex PATTERN.
expect_in() {
  grep -Eq -- "$2" "$1" || fail "$3: no line matching '$2' in $(basename "$1"): $(tail -n 8 "$1")"
}
expect_not_in() {
  ! grep -Eq -- "$2" "$1" ||
    fail "$3: a line matches '$2' in $(basename "$1"): $(grep -E -- "$2" "$1" | head -n 3)"
}

# Waits up to 10 s for the nodes to be idle again (a job's end takes Slurm a moment).
wait_idle() {
  local tick
  for ((tick = 0; tick < 100; ++tick)); do
    [[ -z "$(on "${hosts[0]}" "squeue -h -o %i" 2>/dev/null)" ]] && return 0
    sleep 0.1
  done
  fail "jobs still queued: $(on "${hosts[0]}" "squeue -h" 2>&1)"
}

# Processes of ours still on a node (the programs the cases start, by their executables).
programs_left() {
  local pid exe
  for pid in $(leftovers); do
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || continue
    [[ "$exe" == "$perf" || "$exe" == "$minimal" ]] && echo "$pid"
  done
  return 0
}

# srun across three nodes: rank 0's host from SLURM_STEP_NODELIST, the port from the job and
# step ids, nothing exported by hand.
case_srun() {
  local out="$dir/out/srun.txt" status=0
  on "${hosts[0]}" "cd $dir/out && WEFT_DEBUG=INFO srun -N 3 -n 6 --mpi=none -l $perf -b 8 -e 1M -f 4 -c 1" \
    >"$out" 2>&1 || status=$?
  ((status == 0)) || fail "srun exited with status $status: $(tail -n 8 "$out")"
  expect_in "$out" '^0: # Out of bounds values : 0 OK' "srun"
  expect_in "$out" "^0: .*rendezvous root listening on ${addrs[0]}:" "srun: rank 0 on ${hosts[0]}"
  expect_in "$out" '^0: .*comm all_reduce_perf: 6 ranks on 3 nodes, 2 per node' "srun"
  expect_in "$out" '^0: #  Rank  5 .* on +node2 ' "srun: block distribution"
  # Without WEFT_SECRET rank 0 warns that the derived secret stops accidents, not attackers.
  expect_in "$out" '^0: .*WARN ranks span 3 hosts but WEFT_SECRET is not set' "srun"
  # Cyclic, uneven (2,2,1 tasks: SLURM_NODEID picks the local size): rank 0 still on node0.
  out="$dir/out/cyclic.txt" status=0
  on "${hosts[0]}" "WEFT_DEBUG=INFO srun -N 3 -n 5 -m cyclic --mpi=none -l $minimal" >"$out" 2>&1 || status=$?
  ((status == 0)) || fail "srun -m cyclic exited with status $status: $(tail -n 8 "$out")"
  expect_in "$out" '^4: rank 4 of 5: sum of ranks = 10 ' "srun -m cyclic"
  expect_in "$out" '^0: .*comm .*: 5 ranks on 3 nodes, 1 to 2 per node, numbered across nodes' "srun -m cyclic"
}

# An sbatch script whose srun starts the ranks; the secret exported in the script reaches them.
case_sbatch() {
  local out="$dir/out/sbatch.txt" status=0
  cat >"$dir/out/job.sh" <<EOF
#!/bin/sh
#SBATCH -N 3 -n 6 -o $out
export WEFT_SECRET=\$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
srun --mpi=none $perf -b 8 -e 64K -f 4 -c 1
EOF
  on "${hosts[0]}" "cd $dir/out && sbatch --wait -Q $dir/out/job.sh" >"$dir/out/sbatch.log" 2>&1 || status=$?
  ((status == 0)) || fail "sbatch --wait exited with status $status: $(cat "$dir/out/sbatch.log"; tail -n 8 "$out")"
  expect_in "$out" '^# Out of bounds values : 0 OK' "sbatch"
  expect_in "$out" '^#  Rank  5 .* on +node2 ' "sbatch"
  expect_not_in "$out" 'WEFT_SECRET is not set' "sbatch: the secret exported in the script"
}

# Slurm 22.05 gives a batch script SLURM_PROCID=0, SLURM_NTASKS (the allocation's), SLURM_NODEID,
# SLURM_TASKS_PER_NODE and SLURM_JOB_NODELIST, but no SLURM_STEP_ID, SLURM_STEPID or
# SLURM_STEP_NODELIST: srun's steps have them. So a program started in the script without srun
# is told apart by the missing step id, which is what weft refuses.
case_lone() {
  local out="$dir/out/lone.txt" status=0
  cat >"$dir/out/lone.sh" <<EOF
#!/bin/sh
#SBATCH -N 3 -n 6 -o $out
env | grep '^SLURM_' | sort >$dir/out/batch.env
$minimal
echo "minimal exited with status \$?"
srun -N 3 -n 3 sh -c 'env | grep "^SLURM_" | sort >$dir/out/step.\$SLURM_PROCID.env'
EOF
  on "${hosts[0]}" "cd $dir/out && sbatch --wait -Q $dir/out/lone.sh" >"$dir/out/lone.log" 2>&1 || status=$?
  ((status == 0)) || fail "lone: sbatch --wait exited with status $status: $(cat "$dir/out/lone.log" "$out")"
  expect_in "$out" 'weftCommInitFromEnv.*SLURM_STEP_ID is not set' "lone: minimal without srun"
  expect_in "$out" '^minimal exited with status 1$' "lone: minimal without srun"
  expect_in "$dir/out/batch.env" '^SLURM_PROCID=0$' "batch script"
  expect_in "$dir/out/batch.env" '^SLURM_NTASKS=6$' "batch script"
  expect_not_in "$dir/out/batch.env" '^SLURM_STEP' "batch script"
  expect_in "$dir/out/step.2.env" '^SLURM_STEP_ID=[0-9]+$' "step"
  expect_in "$dir/out/step.2.env" '^SLURM_STEP_NODELIST=node\[0-2\]$' "step"
  expect_in "$dir/out/step.2.env" '^SLURM_NODEID=2$' "step"
  {
    echo "== what Slurm exports to a batch script"; cat "$dir/out/batch.env"
    echo "== to the third task of a step in it"; cat "$dir/out/step.2.env"
  } >>"$dir/out/environment.txt"
}

# srun --mpi=pmi2 sets PMI-2's variables, which weft leaves to Slurm (SLURM_MPI_TYPE): the ranks
# meet as under --mpi=none. --mpi=pmix's variables are recorded for the PMIx client.
case_mpi() {
  local out="$dir/out/mpi.txt" status=0
  on "${hosts[0]}" "srun -N 2 -n 2 --mpi=pmi2 -l sh -c 'env | grep -E \"^(PMI|SLURM_MPI)\" | sort'" \
    >"$dir/out/pmi2.env" 2>&1 || fail "srun --mpi=pmi2 env: $(cat "$dir/out/pmi2.env")"
  expect_in "$dir/out/pmi2.env" '^1: SLURM_MPI_TYPE=pmi2$' "pmi2"
  expect_in "$dir/out/pmi2.env" '^1: PMI_RANK=1$' "pmi2"
  expect_in "$dir/out/pmi2.env" '^1: PMI_FD=[0-9]+$' "pmi2"
  on "${hosts[0]}" "srun -N 3 -n 3 --mpi=pmi2 -l $minimal" >"$out" 2>&1 || status=$?
  ((status == 0)) || fail "srun --mpi=pmi2 minimal exited with status $status: $(tail -n 8 "$out")"
  expect_in "$out" '^2: rank 2 of 3: sum of ranks = 3' "pmi2"
  on "${hosts[0]}" "srun -N 2 -n 2 --mpi=pmix -l sh -c 'env | grep -E \"^(PMI|SLURM_MPI|SLURM_PMIX)\" | sort'" \
    >"$dir/out/pmix.env" 2>&1 || fail "srun --mpi=pmix env: $(cat "$dir/out/pmix.env")"
  expect_in "$dir/out/pmix.env" '^1: PMIX_RANK=1$' "pmix"
  expect_in "$dir/out/pmix.env" '^1: PMIX_NAMESPACE=' "pmix"
  {
    echo "== srun --mpi=pmi2"; cat "$dir/out/pmi2.env"
    echo "== srun --mpi=pmix"; cat "$dir/out/pmix.env"
  } >>"$dir/out/environment.txt"
}

# Weft's rendezvous through Slurm's PMIx server (srun --mpi=pmix).
case_pmix() {
  local out="$dir/out/pmix.txt" status=0
  on "${hosts[0]}" "WEFT_DEBUG=INFO srun -N 3 -n 6 --mpi=pmix -l $perf -b 8 -e 64K -f 4 -c 1" \
    >"$out" 2>&1 || status=$?
  ((status == 0)) || fail "srun --mpi=pmix exited with status $status: $(tail -n 8 "$out")"
  expect_in "$out" '^0: # Out of bounds values : 0 OK' "pmix"
  expect_in "$out" '^0: .*comm all_reduce_perf: 6 ranks on 3 nodes' "pmix"
  expect_in "$out" '^0: .*INFO PMIx' "pmix: the rendezvous through Slurm's PMIx server"
}

# The README's recipe as written there: its two sh blocks under "### Slurm",
# with weft's minimal example as ./app; the first runs on node0, the second is an sbatch script.
case_readme() {
  local blocks="$dir/out/readme" status=0
  readme_recipes "$repo/README.md" "### Slurm" "$minimal" "$blocks"
  [[ -s "$blocks.1.sh" && -s "$blocks.2.sh" ]] || { fail "readme: no two sh blocks in the Slurm section"; return; }
  on "${hosts[0]}" "cd $dir/out && sh $blocks.1.sh" >"$blocks.1.txt" 2>&1 || status=$?
  ((status == 0)) || fail "readme: the srun recipe exited with status $status: $(tail -n 8 "$blocks.1.txt")"
  expect_in "$blocks.1.txt" '^rank 3 of 4: sum of ranks = 6 \(expected 6\)$' "readme: srun"
  expect_not_in "$blocks.1.txt" 'WEFT_SECRET is not set' "readme: srun"
  status=0
  on "${hosts[0]}" "cd $dir/out && sbatch --wait -Q -o $blocks.2.txt $blocks.2.sh" >"$blocks.2.log" 2>&1 || status=$?
  ((status == 0)) || fail "readme: the sbatch recipe exited with status $status: $(cat "$blocks.2.log"; tail -n 8 "$blocks.2.txt")"
  expect_in "$blocks.2.txt" '^rank 3 of 4: sum of ranks = 6 \(expected 6\)$' "readme: sbatch"
  expect_not_in "$blocks.2.txt" 'WEFT_SECRET is not set' "readme: sbatch"
}

# A rank on node2 killed with SIGKILL while the job runs: the others fail within 2 s naming it.
case_killed() {
  local out="$dir/out/killed.txt" status=0 victim=4 tick pid
  cat >"$dir/out/task.sh" <<EOF
#!/bin/sh
# One rank: its pid for the killer, and when it ended.
"\$@" &
echo \$! >$dir/out/pid.\$SLURM_PROCID
wait \$!
status=\$?
date +%s.%N >$dir/out/end.\$SLURM_PROCID
exit \$status
EOF
  chmod +x "$dir/out/task.sh"
  # exec all the way down: $! is srun.
  SLURM_CONF="$dir/slurm.conf" "$here/ns_exec.sh" "${hosts[0]}" \
    "exec env WEFT_TIMEOUT=60 srun -N 3 -n 6 --mpi=none -l $dir/out/task.sh $perf -b 1M -e 1M -w 1 -n 1000000 -c 0" \
    >"$out" 2>&1 &
  local srun_pid=$!
  for ((tick = 0; tick < 300; ++tick)); do
    grep -q '(B)' "$out" 2>/dev/null && [[ -s "$dir/out/pid.$victim" ]] && break
    sleep 0.1
  done
  pid="$(cat "$dir/out/pid.$victim" 2>/dev/null || true)"
  if [[ -z "$pid" ]] || ! grep -q '(B)' "$out"; then
    kill -TERM "$srun_pid" 2>/dev/null || true
    wait "$srun_pid" || true
    fail "killed: the job did not start: $(tail -n 8 "$out")"
    return
  fi
  sleep 0.5
  # The rank's node, as its namespace says (the pid is this run's: it wrote it).
  [[ "$(ip netns identify "$pid")" == "${namespaces[2]}" ]] || fail "killed: rank $victim is not on node2"
  local killed_at
  killed_at="$(date +%s.%N)"
  kill -KILL "$pid"
  for ((tick = 0; tick < 300; ++tick)); do
    kill -0 "$srun_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$srun_pid" 2>/dev/null; then
    fail "killed: srun still runs 30 s after the kill"
    kill -TERM "$srun_pid" 2>/dev/null || true
  fi
  wait "$srun_pid" || status=$?
  ((status != 0)) || fail "killed: srun exited with status 0"
  local rank end
  for rank in 0 1 2 3 5; do
    end="$(cat "$dir/out/end.$rank" 2>/dev/null || echo never)"
    if [[ "$end" == never ]] || awk -v e="$end" -v k="$killed_at" 'BEGIN { exit !(e - k > 2.0) }'; then
      fail "killed: rank $rank ended at $end, the kill was at $killed_at (more than 2 s)"
    fi
    expect_in "$out" "^$rank: .*rank $victim" "killed: rank $rank names rank $victim"
  done
  note "killed: survivors ended $(for rank in 0 1 2 3 5; do
    awk -v e="$(cat "$dir/out/end.$rank" 2>/dev/null || echo 0)" -v k="$killed_at" \
      'BEGIN { printf "%.2f ", e - k }'; done)s after the kill; srun exited with status $status"
  for ((tick = 0; tick < 50; ++tick)); do
    [[ -z "$(programs_left)" ]] && break
    sleep 0.1
  done
  [[ -z "$(programs_left)" ]] || fail "killed: processes left: $(programs_left)"
}

case_timing() {
  local ppn=${TIMING_PPN:-2} rounds=${TIMING_ROUNDS:-3} nranks round mpi started
  local -A seconds
  nranks=$((${#hosts[@]} * ppn))
  for ((round = 0; round < rounds; ++round)); do
    for mpi in none pmix; do
      started=$(date +%s.%N)
      on "${hosts[0]}" "srun -N ${#hosts[@]} -n $nranks -O --mpi=$mpi $minimal" \
        >"$dir/out/timing.txt" 2>&1 ||
        { fail "timing: srun --mpi=$mpi: $(tail -n 5 "$dir/out/timing.txt")"; return; }
      seconds[$mpi]+="$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f ", e - s }')"
    done
  done
  for mpi in none pmix; do
    printf '%s\n' ${seconds[$mpi]} | sort -n | awk -v name="srun --mpi=$mpi" -v shape="${#hosts[@]}x$ppn" '
      { v[NR] = $1 }
      END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "| %s (%s) | %.2f | %.2f-%.2f |\n", name, shape, m, v[1], v[NR] }'
  done
}

start_cluster
for name in "${cases[@]}"; do
  declare -F "case_$name" >/dev/null || { fail "no case '$name'"; continue; }
  before=$failures
  started=$(date +%s.%N)
  "case_$name"
  wait_idle
  [[ -z "$(programs_left)" ]] || fail "$name: processes left: $(programs_left)"
  seconds=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  if ((failures == before)); then note "PASS $name (${seconds} s)"; else note "FAIL $name (${seconds} s)"; fi
done
if [[ -s "$dir/out/environment.txt" ]]; then
  echo "What Slurm $(srun --version | awk '{print $2}') exports (for the record):"
  cat "$dir/out/environment.txt"
fi
((failures == 0))
