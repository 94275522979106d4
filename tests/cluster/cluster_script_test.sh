#!/usr/bin/env bash
# Checks tests/cluster/cluster.sh itself, with plain shell commands as ranks: the rank layout and
# environment, its exit statuses, and that it leaves no namespace, /etc/netns entry or process
# behind after success, a failing rank, a timeout and SIGTERM. Exits 77 (skip) where cluster.sh
# cannot create namespaces.
set -uo pipefail
cluster="$(cd "$(dirname "$0")" && pwd)/cluster.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Probe: skip exactly when cluster.sh would.
probe="$("$cluster" --nodes 1 -- true 2>&1)"
status=$?
if ((status == 77)); then echo "$probe"; exit 77; fi
((status == 0)) || { echo "FAIL: a trivial run exits $status: $probe" >&2; exit 1; }

# Runs cluster.sh in the background (so its pid, hence its namespace prefix, is known) and checks
# the exit status and leftovers. Usage: expect STATUS [SIGNAL_AFTER_S] -- cluster.sh args
expect() {
  local want="$1" signal_after="" out
  shift
  [[ "$1" != "--" ]] && { signal_after="$1"; shift; }
  shift
  out="$(mktemp)"
  "$cluster" "$@" >"$out" 2>&1 &
  local pid=$!
  if [[ -n "$signal_after" ]]; then sleep "$signal_after"; kill -TERM "$pid"; fi
  wait "$pid"
  local got=$?
  ((got == want)) || fail "cluster.sh $*: exit $got, expected $want: $(tail -5 "$out")"
  if ip netns list | grep -q "^weftc${pid}"; then
    fail "cluster.sh $*: namespaces left: $(ip netns list | grep "^weftc${pid}" | tr '\n' ' ')"
  fi
  if compgen -G "/etc/netns/weftc${pid}*" >/dev/null; then fail "cluster.sh $*: /etc/netns entries left"; fi
  # The sleeping ranks run "sleep 3<our pid>": none may survive (looked up, never killed, by name).
  if pgrep -f "^sleep 3$$\$" >/dev/null; then fail "cluster.sh $*: rank processes left"; fi
  LAST_OUTPUT="$(cat "$out")"
  rm -f "$out"
}

# Layout and environment: 3,1 interleaved puts ranks 0,2,3 on node0 and rank 1 on node1.
show='echo "$WEFT_RANK $(hostname) $WEFT_LOCAL_RANK/$WEFT_LOCAL_NRANKS $CLUSTER_NODE_ADDR $WEFT_ROOT_ADDR $WEFT_SOCKET_IFNAME"'
logs="$(mktemp -d)"
expect 0 -- --layout 3,1 --numbering interleave --keep-logs "$logs" -- sh -c "$show"
got="$(echo "$LAST_OUTPUT" | grep -v '^cluster:'; cat "$logs"/rank*.log)"
want="0 node0 0/3 10.231.7.1 10.231.7.1:29400 =veth0
1 node1 0/1 10.231.7.2 10.231.7.1:29400 =veth0
2 node0 1/3 10.231.7.1 10.231.7.1:29400 =veth0
3 node0 2/3 10.231.7.1 10.231.7.1:29400 =veth0"
[[ "$got" == "$want" ]] || fail "layout 3,1 interleave: got
$got
expected
$want"
rm -rf "$logs"

# Nodes reach each other over the emulated network, rate-limited: rank 1 (node1) sends a line to
# rank 0 (node0), which prints it.
talk='if [ "$WEFT_RANK" = 0 ]; then
  exec python3 -c "import socket; s = socket.create_server((\"10.231.7.1\", 29999)); c, _ = s.accept(); print(c.makefile().readline().strip())"
else
  exec timeout 10 bash -c "until exec 3<>/dev/tcp/10.231.7.1/29999; do sleep 0.1; done 2>/dev/null; echo hello-from-\$(hostname) >&3"
fi'
expect 0 -- --nodes 2 --rate 100mbit -- sh -c "$talk"
[[ "$LAST_OUTPUT" == *hello-from-node1* ]] || fail "node1 -> node0 over TCP: got '$LAST_OUTPUT'"

# Statuses: the failing rank's status, 124 on timeout, 143 on SIGTERM; ranks are killed.
expect 3 -- --nodes 3 --grace 1 -- sh -c "[ \$WEFT_RANK = 2 ] && exit 3; exec sleep 3$$"
expect 124 -- --nodes 2 --timeout 1 -- sleep "3$$"
expect 143 1 -- --nodes 2 --ppn 2 -- sleep "3$$"
expect 0 -- --raw --nodes 2 -- sh -c '[ "$(echo $CLUSTER_HOSTNAMES)" = "node0 node1" ] && ip netns exec ${CLUSTER_NAMESPACES%% *} true'
expect 2 -- --nodes 0 -- true

if ((failures)); then echo "$failures failure(s)" >&2; exit 1; fi
echo "cluster.sh: all checks passed"
