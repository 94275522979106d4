#!/usr/bin/env bash
# Soft-RoCE baseline in the QEMU/TCG guest of tests/rdma/qemu/rxe_guest.sh: perftest's
# ib_write_bw (RC, RDMA write) at 64 KiB, 1 MiB and 4 MiB, --bidirectional at 1 MiB, and
# ib_write_lat at 8 B, each as 2 processes in one guest over rxe0 (server in the background,
# client to 127.0.0.1). Prints markdown tables; the raw perftest output stays in --out.
#
#   perf/rdma/ib_write_bw.sh [--smp N] [--cpu MODEL] [--mem MB] [--quick] [--out DIR]
#
# --quick divides the iteration counts by 10 (a smoke run, noisy numbers). These numbers measure
# the emulator (TCG on this host's cores), not any network: use them to compare weft's own RDMA
# transport against perftest on the same guest, never as hardware figures.
# Exit status: 0, 1 if a transfer failed, 77 if the guest is not available here.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
harness=$root/tests/rdma/qemu/rxe_guest.sh
guest_args=()
scale=1
out=""
while (($#)); do
  case "$1" in
    --smp | --cpu | --mem)
      (($# >= 2)) || { echo "ib_write_bw.sh: $1 needs a value" >&2; exit 2; }
      guest_args+=("$1" "$2")
      shift 2
      ;;
    --out)
      (($# >= 2)) || { echo "ib_write_bw.sh: --out needs a value" >&2; exit 2; }
      out=$2
      shift 2
      ;;
    --quick) scale=10; shift ;;
    -h | --help) sed -n '7p' "${BASH_SOURCE[0]}" | sed 's/^#   //'; exit 0 ;;
    *) echo "ib_write_bw.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done

keep=1
if [[ -z $out ]]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/ib_write_bw.XXXXXX")
  keep=0
fi
mkdir -p -- "$out"
out=$(cd -- "$out" && pwd -P)
# shellcheck disable=SC2317  # reached through the trap
cleanup() { if ((!keep)); then rm -rf -- "$out"; fi; }
trap cleanup EXIT

# name, tool, perftest arguments. Iterations keep each case near 200 MB or a few seconds.
cases=(
  "write_64k ib_write_bw -s 65536 -n $((2000 / scale))"
  "write_1m ib_write_bw -s 1048576 -n $((200 / scale))"
  "write_4m ib_write_bw -s 4194304 -n $((50 / scale))"
  "write_1m_bidir ib_write_bw -s 1048576 -n $((100 / scale)) --bidirectional"
  "lat_8 ib_write_lat -s 8 -n $((5000 / scale))"
)

guest_script=$(
  cat <<EOF
set -u
port=18515
failed=0
while read -r name tool args; do
  [[ -n \$name ]] || continue
  read -ra a <<<"\$args"
  port=\$((port + 1))
  "$root/perf/rdma/perftest_pair.sh" "\$WEFT_QEMU_OUT" "\$name" "\$port" "\$tool" "\${a[@]}" || failed=1
done <"\$WEFT_QEMU_OUT/cases.txt"
exit "\$failed"
EOF
)
printf '%s\n' "${cases[@]}" >"$out/cases.txt"

load=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
"$harness" --timeout 600 --out "$out" "${guest_args[@]}" -- bash -c "$guest_script" >"$out/summary.txt" || rc=$?
((rc == 77)) && exit 77
cat "$out/summary.txt"

# perftest's MB/sec is 2^20 bytes per second; its Gb/sec is 10^9 bits.
bw_row() {  # bw_row NAME LABEL
  local f=$out/$1.client
  awk -v label="$2" '
    $1 ~ /^[0-9]+$/ && NF >= 5 && seen { size = $1; iters = $2; peak = $3; avg = $4; found = 1; exit }
    /#bytes/ { seen = 1 }
    END {
      if (!found) { printf "| %s | failed | | | | |\n", label; exit }
      unit = size >= 1048576 ? sprintf("%d MiB", size / 1048576) : sprintf("%d KiB", size / 1024)
      printf "| %s | %s | %d | %.1f | %.3f | %.1f |\n", label, unit, iters, avg, avg * 1048576 * 8 / 1e9, peak
    }' "$f" 2>/dev/null || printf '| %s | failed | | | | |\n' "$2"
}
lat_row() {
  local f=$out/$1.client
  awk '
    $1 ~ /^[0-9]+$/ && NF >= 9 && seen { printf "| %d B | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", $1, $2, $3, $5, $6, $8, $9, $4; found = 1; exit }
    /#bytes/ { seen = 1 }
    END { if (!found) print "| 8 B | failed | | | | | | |" }' "$f" 2>/dev/null || echo "| 8 B | failed | | | | | | |"
}

smp=2 cpu="max,-erms,-fsrm (default)"
for ((i = 0; i < ${#guest_args[@]}; i += 2)); do
  case "${guest_args[i]}" in --smp) smp=${guest_args[i + 1]} ;; --cpu) cpu=${guest_args[i + 1]} ;; esac
done
echo
echo "Soft-RoCE (rxe0 over a dummy netdev) in QEMU/TCG -smp $smp -cpu $cpu; host load average before: $load"
echo
echo "| ib_write_bw (RC) | size | iterations | MB/s (2^20 B/s) | Gb/s | peak MB/s |"
echo "|---|---|---|---|---|---|"
bw_row write_64k "write"
bw_row write_1m "write"
bw_row write_4m "write"
bw_row write_1m_bidir "write, bidirectional (both directions summed)"
echo
echo "| ib_write_lat | iterations | t_min µs | t_typical µs | t_avg µs | 99% µs | 99.9% µs | t_max µs |"
echo "|---|---|---|---|---|---|---|---|"
lat_row lat_8
((keep)) && echo && echo "raw perftest output: $out"
exit $((rc == 0 ? 0 : 1))
