#!/usr/bin/env bash
# Inside the Soft-RoCE guest: one perftest measurement as two processes over rxe0 (server in the
# background, client to 127.0.0.1), raw output in DIR/NAME.server and DIR/NAME.client.
#   perftest_pair.sh DIR NAME PORT TOOL [ARGS...]
# Prints "NAME client=RC server=RC"; exits non-zero when either side failed.
set -u
dir=$1 name=$2 port=$3 tool=$4
shift 4
"$tool" -d rxe0 -F -p "$port" "$@" >"$dir/$name.server" 2>&1 &
server=$!
for _ in $(seq 100); do
  ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
  sleep 0.1
done
crc=0
timeout 120 "$tool" -d rxe0 -F -p "$port" "$@" 127.0.0.1 >"$dir/$name.client" 2>&1 || crc=$?
src=0
timeout 30 tail --pid="$server" -f /dev/null || kill "$server" 2>/dev/null
wait "$server" || src=$?
echo "$name client=$crc server=$src"
((crc == 0 && src == 0))
