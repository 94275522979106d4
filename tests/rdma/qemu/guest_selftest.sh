#!/usr/bin/env bash
# Tests rxe_guest.sh itself, in two guest boots (about 30 s with a warm cache):
#  1. rxe0 is PORT_ACTIVE in ibv_devinfo, and a real RDMA transfer works: perftest's ib_write_bw
#     (RC, RDMA write) server in the background and its client on 127.0.0.1, both checked. The
#     same boot checks what the harness promises about the command: its exit status (42 here),
#     stdout and stderr kept apart, cwd, the caller's WEFT_* variables and nothing else, a
#     writable /tmp and WEFT_QEMU_OUT.
#  2. A command that hangs ends at --timeout with status 124, and no qemu is left behind.
# Exits 77 when the harness skips (no QEMU or kernel here), 1 on a failed check, 0 otherwise.
#
#   guest_selftest.sh [--quick]      (--quick: only the first boot)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
harness=$here/rxe_guest.sh
quick=0
[[ ${1:-} == --quick ]] && quick=1

work=$(mktemp -d "${TMPDIR:-/tmp}/rxe_selftest.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

failures=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAILED: $what"
    failures=$((failures + 1))
  fi
}

token="t$RANDOM$RANDOM"
export WEFT_SELFTEST_TOKEN="$token"
export SELFTEST_NOT_PASSED=leak

# The guest half: each step's result as a 'step rc' line on stdout, transfer logs in the out
# share. Small -n: TCG moves about 70 MB/s.
guest_script=$(
  cat <<'EOF'
set -u
out=$WEFT_QEMU_OUT
echo "env token=${WEFT_SELFTEST_TOKEN:-} leak=${SELFTEST_NOT_PASSED:-none} cwd=$PWD"
echo "to stderr" >&2
ibv_devinfo -d rxe0 >"$out/devinfo.txt" 2>&1
echo "devinfo $?"
grep -q 'state:[[:space:]]*PORT_ACTIVE' "$out/devinfo.txt"
echo "port_active $?"
echo x >/tmp/selftest_tmp && echo "tmp_writable 0" || echo "tmp_writable 1"
port=18515
ib_write_bw -d rxe0 -F -p "$port" -s 65536 -n 200 >"$out/server.txt" 2>&1 &
server=$!
# The client fails outright if the server is not listening yet.
for _ in $(seq 100); do
  ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
  sleep 0.1
done
timeout 60 ib_write_bw -d rxe0 -F -p "$port" -s 65536 -n 200 127.0.0.1 >"$out/client.txt" 2>&1
echo "client $?"
timeout 30 tail --pid="$server" -f /dev/null
wait "$server"
echo "server $?"
exit 42
EOF
)

rc=0
"$harness" --timeout 120 --out "$work/boot1" -- bash -c "$guest_script" >"$work/stdout" 2>"$work/stderr" || rc=$?
if ((rc == 77)); then
  cat "$work/stderr" >&2
  echo "SKIP: the rxe guest is not available here"
  exit 77
fi
sed 's/^/  guest: /' "$work/stdout"
grep -v '^to stderr$' "$work/stderr" | sed 's/^/  guest stderr: /' || true

# A qemu of ours names its out dir on its command line.
no_qemu_for() {
  local f
  for f in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' 2>/dev/null <"$f" | grep -q "mount_tag=weftout" &&
      tr '\0' ' ' 2>/dev/null <"$f" | grep -qF "path=$1,"; then
      return 1
    fi
  done
  return 0
}
step() { grep -qx "$1 0" "$work/stdout"; }
check "exit status passed through (42, got $rc)" test "$rc" -eq 42
check "ibv_devinfo -d rxe0 succeeded" step devinfo
check "rxe0 is PORT_ACTIVE" step port_active
check "ib_write_bw client succeeded" step client
check "ib_write_bw server succeeded" step server
check "the client reported 65536-byte writes" grep -Eq '^[[:space:]]*65536[[:space:]]+200[[:space:]]' "$work/boot1/client.txt"
check "stderr kept apart from stdout" grep -qx 'to stderr' "$work/stderr"
check "stdout has no stderr line" bash -c "! grep -q 'to stderr' '$work/stdout'"
check "WEFT_* passed, others not, cwd kept" grep -qx "env token=$token leak=none cwd=$(pwd -P)" "$work/stdout"
check "/tmp writable in the guest" step tmp_writable
check "the harness kept its files in --out" test -s "$work/boot1/rxe_guest.console"
bw=$(awk '$1 == 65536 && $2 == 200 { print $4 }' "$work/boot1/client.txt" 2>/dev/null || true)
echo "  ib_write_bw 64 KiB: ${bw:-?} MB/s average"

if ((!quick)); then
  start=$SECONDS
  rc=0
  "$harness" --timeout 3 --out "$work/boot2" -- sleep 600 >"$work/stdout2" 2>"$work/stderr2" || rc=$?
  if ((rc == 77)); then
    echo "FAILED: the second boot skipped after the first one worked: $(tail -n 1 "$work/stderr2")"
    failures=$((failures + 1))
  else
    check "a hanging command ends with 124 (got $rc, after $((SECONDS - start)) s)" test "$rc" -eq 124
    check "the timeout is reported" grep -q 'TIMEOUT' "$work/stderr2"
    check "no qemu left running" no_qemu_for "$work/boot2"
  fi
fi

if ((failures)); then
  for f in devinfo server client; do
    [[ -f $work/boot1/$f.txt ]] && tail -n 20 "$work/boot1/$f.txt" | sed "s/^/  $f: /"
  done
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
