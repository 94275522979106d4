#!/usr/bin/env bash
# Emulates a small cluster on one Linux machine with network namespaces, and runs a weft job on it.
#
#   cluster.sh [options] -- COMMAND [ARGS...]
#
# Each node is a network namespace with one interface (veth0, address 10.231.7.<node+1>/24),
# plugged into a Linux bridge that lives in a separate "switch" namespace: the host's own network
# is never touched. Each rank runs inside its node's namespace and in a UTS namespace whose host
# name is the node's name (node0, node1, ...). weft's host identity is a hash of the host name
# and the boot id, so the ranks of one node find each other as one host and use shared memory
# (abstract Unix sockets are per network namespace, so they connect within a node only), and
# TCP between nodes, over the emulated network.
#
# Options:
#   --nodes K                  number of nodes (default 2)
#   --ppn P                    ranks per node (default 1)
#   --layout N0,N1,...         ranks per node, for uneven nodes (sets --nodes; overrides --ppn)
#   --numbering block|interleave
#                              block: ranks 0..P-1 on node0, ...; interleave: rank r on node
#                              r % K (round robin over the nodes that still have room)
#   --rate RATE                limit every node's link to RATE in each direction (tc tbf, e.g.
#                              1gbit, 100mbit): on the node's veth0 (its NIC's sending side) and
#                              on the switch port towards it (its receiving side)
#   --node-rate I:RATE         the same for node I only (repeatable; overrides --rate there):
#                              one slow link in an otherwise fast network
#   --keep-logs DIR            write every rank's log to DIR and keep it (default: a temporary
#                              directory, removed at the end)
#   --timeout SEC              end the job after SEC seconds, exit 124 (default 300)
#   --grace SEC                once a rank has failed, how long the others may take to notice
#                              and exit before they are killed (default 10)
#   --raw                      start no ranks: create the namespaces and run COMMAND once, in
#                              the root namespace (see below)
#   -h, --help                 this text
#
# Rank mode (default): K x P ranks. Each gets WEFT_RANK, WEFT_NRANKS, WEFT_LOCAL_RANK,
# WEFT_LOCAL_NRANKS, WEFT_ROOT_ADDR (rank 0's node address, port CLUSTER_ROOT_PORT or 29400),
# WEFT_SECRET (random, shared by the job; kept if already set), WEFT_SOCKET_IFNAME==veth0
# (exact name) and WEFT_BIND=auto (as weftrun sets it; kept if already set), plus for other
# programs (MPI, gloo): CLUSTER_NODE (node index), CLUSTER_NODE_NAME, CLUSTER_NODE_ADDR, CLUSTER_ROOT_ADDR (rank 0's node address), CLUSTER_ADDRS (all node addresses,
# space-separated), CLUSTER_IFNAME. Rank 0's stdout and stderr are this script's; the other ranks'
# go to DIR/rank<r>.log. A failing rank's log tail is printed.
#
# Raw mode (--raw): COMMAND runs in the root namespace with CLUSTER_NAMESPACES, CLUSTER_HOSTNAMES,
# CLUSTER_ADDRS (space-separated, node order), CLUSTER_IFNAME and CLUSTER_SUBNET, e.g. to start
# mpirun through tests/cluster/ns_exec.sh. Each namespace also sees /etc/hosts naming all nodes.
#
# Exit status: 0 when every rank succeeded; otherwise the first failing rank's status (128+N if
# killed by signal N), 124 on timeout, 2 on a usage error, and 77 (ctest's skip code) when
# namespaces cannot be created here (needs root / CAP_SYS_ADMIN and CAP_NET_ADMIN).
# On every exit (success, failure, timeout, SIGINT/SIGTERM) the ranks are killed and every
# namespace this run created is deleted.
set -euo pipefail

readonly tag="weftc$$"                 # unique per invocation: namespace names start with it
readonly switch_ns="${tag}sw"
readonly ifname="veth0"
readonly subnet_prefix="10.231.7"      # private, unlikely to mean anything; lives only in our namespaces
readonly root_port="${CLUSTER_ROOT_PORT:-29400}"

nodes=2 ppn=1 layout="" numbering=block rate="" keep_logs="" timeout=300 grace=10 raw=0
declare -A node_rate=()   # --node-rate: node index -> its rate
command=()

# State the cleanup needs.
created_namespaces=()   # every namespace we added, the switch first
live_pids=()            # process-group leaders started and not yet reaped
log_dir="" remove_log_dir=0

# Per-node and per-rank facts.
node_counts=() node_names=() node_namespaces=() node_addrs=()
rank_node=() rank_local=()

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
usage_error() { echo "cluster.sh: $*" >&2; echo "Try 'cluster.sh --help'." >&2; exit 2; }
skip() { echo "SKIP: $*"; exit 77; }
note() { echo "cluster: $*" >&2; }

is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

parse_args() {
  while (($#)); do
    case "$1" in
      --nodes) is_count "${2:-}" || usage_error "--nodes needs a positive integer"; nodes=$2; shift 2 ;;
      --ppn) is_count "${2:-}" || usage_error "--ppn needs a positive integer"; ppn=$2; shift 2 ;;
      --layout) [[ "${2:-}" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
                  usage_error "--layout needs counts like 3,1"; layout=$2; shift 2 ;;
      --numbering) [[ "${2:-}" == block || "${2:-}" == interleave ]] ||
                     usage_error "--numbering is block or interleave"; numbering=$2; shift 2 ;;
      --rate) [[ "${2:-}" =~ ^[0-9.]+[kKmMgGtT]?i?(bit|bps)$ ]] ||
                usage_error "--rate needs a tc rate, e.g. 1gbit or 100mbit"; rate=$2; shift 2 ;;
      --node-rate) [[ "${2:-}" =~ ^([0-9]+):([0-9.]+[kKmMgGtT]?i?(bit|bps))$ ]] ||
                     usage_error "--node-rate needs NODE:RATE, e.g. 2:100mbit"
                   node_rate[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; shift 2 ;;
      --keep-logs) [[ -n "${2:-}" ]] || usage_error "--keep-logs needs a directory"; keep_logs=$2; shift 2 ;;
      --timeout) is_count "${2:-}" || usage_error "--timeout needs whole seconds"; timeout=$2; shift 2 ;;
      --grace) is_count "${2:-}" || usage_error "--grace needs whole seconds"; grace=$2; shift 2 ;;
      --raw) raw=1; shift ;;
      -h|--help) usage; exit 0 ;;
      --) shift; break ;;
      *) usage_error "unknown option '$1'" ;;
    esac
  done
  (($#)) || usage_error "no command given (after --)"
  command=("$@")
  if [[ -n "$layout" ]]; then
    IFS=, read -ra node_counts <<<"$layout"
    nodes=${#node_counts[@]}
  else
    for ((i = 0; i < nodes; ++i)); do node_counts+=("$ppn"); done
  fi
  ((nodes <= 250)) || usage_error "at most 250 nodes (one /24)"
  for i in "${!node_rate[@]}"; do
    ((i < nodes)) || usage_error "--node-rate names node $i of $nodes"
  done
}

# ---- namespaces -------------------------------------------------------------------------------

# Fails with the SKIP status when this machine cannot give us namespaces, before anything exists.
check_privileges() {
  [[ $(id -u) -eq 0 ]] || skip "cluster.sh needs root (network namespaces); running as uid $(id -u)"
  command -v ip >/dev/null || skip "iproute2 ('ip') is not installed"
  command -v unshare >/dev/null || skip "util-linux 'unshare' is not installed"
  unshare --uts true 2>/dev/null || skip "cannot create UTS namespaces (unshare --uts failed: no CAP_SYS_ADMIN?)"
  if [[ -n "$rate${node_rate[*]}" ]] && ! command -v tc >/dev/null; then skip "--rate needs tc (iproute2)"; fi
}

# Runs one set-up command. The set-up only fails where the machine lacks something (namespaces,
# the veth, bridge or tbf kernel support), which is a reason to skip, not a test failure.
setup() {
  local error
  error=$("$@" 2>&1) || skip "cannot set up the emulated network: '$*' failed: $error"
}

add_namespace() {
  local ns="$1"
  setup ip netns add "$ns"
  created_namespaces+=("$ns")
  setup ip -n "$ns" link set lo up
  # IPv4 only: no link-local IPv6 addresses, no duplicate-address detection to wait for.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
}

# The switch: a bridge in its own namespace, so the root namespace never sees any of this.
create_switch() {
  add_namespace "$switch_ns"
  setup ip -n "$switch_ns" link add br0 type bridge
  setup ip -n "$switch_ns" link set br0 up
}

# Token bucket on one interface's egress. burst holds about 1 ms at 1 Gbit/s and fits a 64 KiB
# GSO packet (veth passes those whole); latency bounds the queue like a switch buffer would.
limit_rate() {
  local ns="$1" dev="$2" rate="$3"
  setup tc -n "$ns" qdisc add dev "$dev" root tbf rate "$rate" \
    burst "${CLUSTER_TBF_BURST:-128kb}" latency "${CLUSTER_TBF_LATENCY:-20ms}"
}

# Node i: namespace, one veth pair (veth0 inside, port<i> on the bridge), address, rate limit.
create_node() {
  local i="$1"
  local ns="${tag}n$i" name="node$i" addr="$subnet_prefix.$((i + 1))"
  add_namespace "$ns"
  # Created inside the switch namespace with the peer placed straight into the node's, so no
  # interface ever appears in the root namespace, even for a moment.
  setup ip -n "$switch_ns" link add "port$i" type veth peer name "$ifname" netns "$ns"
  setup ip -n "$switch_ns" link set "port$i" master br0 up
  setup ip -n "$ns" addr add "$addr/24" dev "$ifname"
  setup ip -n "$ns" link set "$ifname" up
  local node_link="${node_rate[$i]:-$rate}"
  if [[ -n "$node_link" ]]; then
    limit_rate "$ns" "$ifname" "$node_link"          # node -> switch
    limit_rate "$switch_ns" "port$i" "$node_link"    # switch -> node
  fi
  node_namespaces+=("$ns") node_names+=("$name") node_addrs+=("$addr")
}

# ip netns exec bind-mounts /etc/netns/<ns>/hosts over /etc/hosts, so every node resolves every
# node's name (Open MPI and gloo look host names up) without touching the host's /etc/hosts.
write_hosts_files() {
  local i ns
  for ns in "${node_namespaces[@]}"; do
    mkdir -p "/etc/netns/$ns"
    {
      echo "127.0.0.1 localhost"
      for ((i = 0; i < nodes; ++i)); do echo "${node_addrs[i]} ${node_names[i]}"; done
    } >"/etc/netns/$ns/hosts"
  done
}

create_cluster() {
  create_switch
  for ((i = 0; i < nodes; ++i)); do create_node "$i"; done
  write_hosts_files
}

# ---- cleanup ----------------------------------------------------------------------------------

# Ends every process group we started and has not been reaped yet: SIGTERM, then SIGKILL.
kill_live_groups() {
  local pid
  # A signal that lands between starting a rank and recording its pid runs the trap in between
  # (bash runs traps after each command): the shell's own job list has that rank too.
  for pid in $(jobs -rp); do
    [[ " ${live_pids[*]} " == *" $pid "* ]] || live_pids+=("$pid")
  done
  ((${#live_pids[@]})) || return 0
  for pid in "${live_pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for ((tick = 0; tick < 20; ++tick)); do
    local alive=0
    for pid in "${live_pids[@]}"; do
      has_ended "$pid" || alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${live_pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  for pid in "${live_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  live_pids=()
}

delete_namespaces() {
  local ns
  for ns in "${created_namespaces[@]}"; do
    ip netns delete "$ns" 2>/dev/null || note "could not delete namespace $ns"
    rm -rf "/etc/netns/$ns"
    rmdir /etc/netns 2>/dev/null || true   # only if empty: others may use it
  done
  created_namespaces=()
}

cleanup() {
  local status=$?
  trap '' INT TERM HUP
  kill_live_groups
  delete_namespaces
  if ((remove_log_dir)) && [[ -n "$log_dir" ]]; then rm -rf "$log_dir"; fi
  exit "$status"
}

# ---- ranks ------------------------------------------------------------------------------------

# rank_node[r] and rank_local[r] for the chosen numbering.
assign_ranks() {
  local node left=("${node_counts[@]}") total=0 assigned=0 used=()
  for node in "${!node_counts[@]}"; do total=$((total + node_counts[node])); used+=(0); done
  if [[ "$numbering" == block ]]; then
    for node in "${!node_counts[@]}"; do
      for ((j = 0; j < node_counts[node]; ++j)); do rank_node+=("$node"); done
    done
  else
    while ((assigned < total)); do
      for node in "${!left[@]}"; do
        ((left[node] > 0)) || continue
        rank_node+=("$node"); left[node]=$((left[node] - 1)); assigned=$((assigned + 1))
      done
    done
  fi
  for node in "${rank_node[@]}"; do rank_local+=("${used[node]}"); used[node]=$((used[node] + 1)); done
}

random_secret() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

# Starts rank r in its node's namespaces, in a process group of its own (setsid execs in place,
# so $! is the group leader and everything the rank starts can be killed through it).
start_rank() {
  local r="$1" node="${rank_node[$1]}"
  local ns="${node_namespaces[node]}" name="${node_names[node]}"
  (
    export WEFT_RANK="$r" WEFT_NRANKS="${#rank_node[@]}" WEFT_LOCAL_RANK="${rank_local[r]}"
    export WEFT_LOCAL_NRANKS="${node_counts[node]}"
    export WEFT_ROOT_ADDR="${node_addrs[${rank_node[0]}]}:$root_port"
    export WEFT_SOCKET_IFNAME="=$ifname"
    # As weftrun does: the emulated nodes share this machine's cores.
    export WEFT_BIND="${WEFT_BIND:-auto}"
    export CLUSTER_NODE="$node" CLUSTER_NODE_NAME="$name" CLUSTER_NODE_ADDR="${node_addrs[node]}"
    export CLUSTER_ROOT_ADDR="${node_addrs[${rank_node[0]}]}"
    if ((r != 0)); then exec >"$log_dir/rank$r.log" 2>&1; fi
    exec setsid ip netns exec "$ns" unshare --uts \
      sh -c 'hostname "$0" && exec "$@"' "$name" "${command[@]}"
  ) &
  live_pids+=($!)
  rank_of_pid[$!]=$r
}

# Prints the tail of a failed rank's log (rank 0 already wrote to our stderr).
report_failure() {
  local r="$1" status="$2"
  if ((raw)); then note "command exited with status $status"; return; fi
  note "rank $r (node${rank_node[r]}) exited with status $status"
  if ((r != 0)) && [[ -s "$log_dir/rank$r.log" ]]; then
    tail -n 15 "$log_dir/rank$r.log" | sed "s/^/  [rank $r] /" >&2
  fi
}

# Whether a process we started has ended (gone, or a zombie not yet reaped). The state is the
# field after the command name, which is in parentheses and may itself hold spaces.
has_ended() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat="${stat##*) }"
  [[ "${stat%% *}" == Z ]]
}

# Waits for all ranks until the deadline; after the first failure, for --grace seconds more,
# since the others normally notice a dead peer and fail soon after. It polls: bash 5.2's
# `wait -n PIDS`, with a sleep standing for the deadline among the PIDS, sometimes returned only
# when the sleep ended, minutes after every rank had exited (5 of about 900 jobs of the seed
# benchmark took the whole --timeout and still reported success).
wait_for_ranks() {
  local first_status=0 deadline=$((SECONDS + timeout)) pid status r pending
  while ((${#live_pids[@]})); do
    pending=()
    for pid in "${live_pids[@]}"; do
      if ! has_ended "$pid"; then pending+=("$pid"); continue; fi
      status=0
      wait "$pid" || status=$?
      r=${rank_of_pid[$pid]}
      if ((status != 0)); then
        report_failure "$r" "$status"
        if ((first_status == 0)); then
          first_status=$status
          deadline=$((SECONDS + grace))
        fi
      fi
    done
    live_pids=("${pending[@]}")
    ((${#live_pids[@]})) || break
    if ((SECONDS >= deadline)); then
      if ((first_status == 0)); then
        note "timeout after $timeout s; ending ${#live_pids[@]} rank(s)"; first_status=124
      else
        note "ending ${#live_pids[@]} rank(s) still running ${grace} s after the first failure"
      fi
      kill_live_groups
      break
    fi
    sleep 0.1
  done
  return "$first_status"
}

describe_rates() {
  local text="rate ${rate:-unlimited}" i
  for i in "${!node_rate[@]}"; do text+=", node$i ${node_rate[$i]}"; done
  echo "$text"
}

run_ranks() {
  assign_ranks
  declare -gA rank_of_pid=()
  local map="" r
  for r in "${!rank_node[@]}"; do map+=" ${rank_node[r]}"; done
  note "${#rank_node[@]} ranks on $nodes nodes (${node_counts[*]} per node), $numbering numbering," \
    "$(describe_rates); node of each rank:$map; logs in $log_dir"
  export WEFT_SECRET="${WEFT_SECRET:-$(random_secret)}"
  for r in "${!rank_node[@]}"; do start_rank "$r"; done
  wait_for_ranks
}

# Raw mode: one command in the root namespace, told where the nodes are.
run_raw() {
  export CLUSTER_NAMESPACES="${node_namespaces[*]}" CLUSTER_HOSTNAMES="${node_names[*]}"
  export CLUSTER_ADDRS="${node_addrs[*]}" CLUSTER_IFNAME="$ifname" CLUSTER_SUBNET="$subnet_prefix.0/24"
  note "$nodes nodes ready (${node_names[*]} = ${node_namespaces[*]}: ${node_addrs[*]}), $(describe_rates)"
  declare -gA rank_of_pid=()
  setsid "${command[@]}" &
  live_pids+=($!)
  rank_of_pid[$!]=0
  rank_node=(0)
  wait_for_ranks
}

main() {
  parse_args "$@"
  check_privileges
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  if [[ -n "$keep_logs" ]]; then
    mkdir -p "$keep_logs"; log_dir="$(cd "$keep_logs" && pwd)"
  else
    log_dir="$(mktemp -d /tmp/weft-cluster.XXXXXX)"; remove_log_dir=1
  fi
  create_cluster
  export CLUSTER_ADDRS="${node_addrs[*]}" CLUSTER_IFNAME="$ifname"
  if ((raw)); then run_raw; else run_ranks; fi
}

main "$@"
