#!/usr/bin/env bash
# Runs one command inside a QEMU/TCG guest that boots Debian's own kernel and has a Soft-RoCE
# device (rxe0, PORT_ACTIVE) ready, so real libibverbs code can run on a host whose kernel has no
# RDMA support (see shared/reference/rdma_cuda_testing.md, A1b).
#
#   rxe_guest.sh [--timeout S] [--smp N] [--mem MB] [--cpu MODEL] [--out DIR] -- COMMAND [ARGS...]
#
# The guest chroots into the host's root, shared read-only over 9p, so COMMAND is the host's own
# binary and sees the build tree at the same paths. It runs as root in the caller's cwd with only
# PATH, HOME and the caller's exported WEFT_* variables, plus WEFT_QEMU_OUT: a directory shared
# writable with the host (--out DIR, or a temporary one removed at the end), for results.
# Harness files in it are named rxe_guest.*; with --out they are kept for inspection.
#
# Exit status: COMMAND's own status; 77 (ctest's skip code) when the guest cannot be had here
# (packages, kernel package, qemu, rxe); 124 when COMMAND outlives --timeout; 125 when the guest
# died under COMMAND (a kernel panic, say) or the harness itself failed; 2 for a usage error.
#
# Environment: WEFT_QEMU_CACHE (kernel and initramfs cache, default ~/.cache/weft/qemu),
# WEFT_QEMU_VERBOSE=1 (guest console on stderr, timings), WEFT_QEMU_BOOT_TIMEOUT (seconds to a
# ready rxe0, default 180), WEFT_QEMU_MODULES (more modules to load), WEFT_QEMU_APPEND (more kernel
# parameters), WEFT_QEMU_KERNEL_PKG (pin a linux-image-* package), WEFT_QEMU_RXE_ADDR (an address
# for d0, the netdev under rxe0, e.g. 192.0.2.1/24). tests/rdma/qemu/README.md
# has the details and timings.
set -euo pipefail

prog=rxe_guest
cache_format=3   # bump when the cached initramfs layout changes

usage() {
  sed -n '6p' "${BASH_SOURCE[0]}" | sed 's/^#   //'
  echo "See the comments at the top of ${BASH_SOURCE[0]} and tests/rdma/qemu/README.md."
}
die_usage() { echo "$prog: $*" >&2; usage >&2; exit 2; }
skip() { echo "$prog: SKIP: $*" >&2; exit 77; }
fail() { echo "$prog: $*" >&2; exit 125; }
note() { if [[ $verbose == 1 ]]; then echo "$prog: $*" >&2; fi; }
now() { echo "${EPOCHREALTIME/,/.}"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# Quotes a string for POSIX sh (the guest's busybox reads some generated scripts).
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
last_line() { if [[ -f $1 ]]; then tr -d '\r' <"$1" | grep -v '^[[:space:]]*$' | tail -n 1 || true; fi; }

timeout_s=600
smp=2
mem=2048
# Without ERMS/FSRM the guest kernel copies with rep movsq instead of rep movsb, which TCG runs
# byte by byte: rxe's bandwidth goes from about 40 to about 60 MB/s at 64 KiB.
cpu=max,-erms,-fsrm
out=""
verbose=${WEFT_QEMU_VERBOSE:-0}
boot_timeout=${WEFT_QEMU_BOOT_TIMEOUT:-180}
cache=${WEFT_QEMU_CACHE:-${HOME:-/root}/.cache/weft/qemu}

while (($#)); do
  case "$1" in
    --timeout | --smp | --mem | --cpu | --out)
      (($# >= 2)) || die_usage "$1 needs a value"
      case "$1" in
        --timeout) timeout_s=$2 ;;
        --smp) smp=$2 ;;
        --mem) mem=$2 ;;
        --cpu) cpu=$2 ;;
        --out) out=$2 ;;
      esac
      shift 2
      ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --smp=*) smp=${1#*=}; shift ;;
    --mem=*) mem=${1#*=}; shift ;;
    --cpu=*) cpu=${1#*=}; shift ;;
    --out=*) out=${1#*=}; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) die_usage "unknown option '$1' (put the command after --)" ;;
  esac
done
(($#)) || die_usage "no command given"
for v in "--timeout:$timeout_s" "--smp:$smp" "--mem:$mem" "WEFT_QEMU_BOOT_TIMEOUT:$boot_timeout"; do
  [[ ${v#*:} =~ ^[1-9][0-9]*$ ]] || die_usage "${v%%:*} must be a positive integer, not '${v#*:}'"
done
[[ $cpu =~ ^[A-Za-z0-9._,=+-]+$ ]] || die_usage "bad --cpu '$cpu'"

qpid=""
bg_pids=()
work=""
out_is_temp=0
build_tmp=""

# shellcheck disable=SC2317  # reached through the trap
cleanup() {
  # A second signal (timeout(1) signals the whole group too) must not cut the clean-up short.
  trap '' INT TERM
  # Only the qemu this script started, by pid: SIGTERM lets it exit cleanly, SIGKILL if it won't.
  if [[ -n $qpid ]] && kill -0 "$qpid" 2>/dev/null; then
    kill -TERM "$qpid" 2>/dev/null || true
    for _ in {1..30}; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$qpid" 2>/dev/null || true
  fi
  if [[ -n $qpid ]]; then wait "$qpid" 2>/dev/null || true; fi
  local p
  for p in "${bg_pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ -n $build_tmp ]]; then rm -rf -- "$build_tmp"; fi
  if [[ -n $work ]]; then rm -rf -- "$work"; fi
  if ((out_is_temp)) && [[ -n $out ]]; then rm -rf -- "$out"; fi
}
trap cleanup EXIT
trap 'trap "" INT TERM; echo "$prog: interrupted" >&2; exit 130' INT
trap 'trap "" INT TERM; echo "$prog: terminated" >&2; exit 143' TERM

t_start=$(now)
work=$(mktemp -d "${TMPDIR:-/tmp}/rxe_guest.work.XXXXXX")

# --- 1. Packages ------------------------------------------------------------------------------
as_root=()
root_or_skip() {
  if ((EUID == 0)); then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    skip "$1 needs root (or passwordless sudo), and this is uid $EUID"
  fi
}
apt_updated=0
apt_update() {
  ((apt_updated)) && return 0
  apt_updated=1
  "${as_root[@]}" timeout 600 apt-get update -q >"$work/apt.log" 2>&1
}

packages=(qemu-system-x86 busybox-static kmod rdma-core ibverbs-utils ibverbs-providers perftest iproute2)
missing=()
installed=" $(dpkg-query -W -f='${db:Status-Status}:${Package} ' "${packages[@]}" 2>/dev/null || true) "
for p in "${packages[@]}"; do
  [[ $installed == *" installed:$p "* ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  root_or_skip "installing ${missing[*]}"
  note "installing ${missing[*]}"
  apt_update || skip "apt-get update failed: $(last_line "$work/apt.log")"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive timeout 900 \
    apt-get install -y -q --no-install-recommends "${missing[@]}" >"$work/apt.log" 2>&1 ||
    skip "apt-get install ${missing[*]} failed: $(last_line "$work/apt.log")"
fi
for c in qemu-system-x86_64 busybox depmod modprobe; do
  command -v "$c" >/dev/null || skip "$c not found after installing the packages"
done
t_packages=$(now)

# --- 2. Kernel and initramfs, cached per kernel version -----------------------------------------
resolve_kernel() {
  if [[ -n ${WEFT_QEMU_KERNEL_PKG:-} ]]; then
    echo "$WEFT_QEMU_KERNEL_PKG"
  else
    # The metapackage's dependency names today's ABI (the name changes with each kernel update).
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
  fi
}
# apt-cache takes over a second here (no pkgcache.bin), so its answer is kept for a day.
kpkg=""
if [[ -z ${WEFT_QEMU_KERNEL_PKG:-} && -n $(find "$cache/.kernel-pkg" -mmin -1440 2>/dev/null) ]]; then
  read -r kpkg <"$cache/.kernel-pkg" || kpkg=""
  [[ -f $cache/${kpkg#linux-image-}/.tree-complete ]] || kpkg=""
fi
fresh=0
if [[ -z $kpkg ]]; then kpkg=$(resolve_kernel || true); fresh=1; fi
if [[ -z $kpkg ]] && { ((EUID == 0)) || { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; }; then
  # No package lists yet: one update, since we may.
  root_or_skip "apt-get update"
  apt_update || true
  kpkg=$(resolve_kernel || true)
fi
if [[ -z $kpkg ]]; then
  # Offline: the newest kernel already in the cache will do.
  newest=$(find "$cache" -mindepth 2 -maxdepth 2 -name ".tree-complete" -printf '%h\n' 2>/dev/null |
    sort -V | tail -n 1)
  [[ -n $newest ]] || skip "cannot resolve Debian's kernel package (apt-cache depends linux-image-amd64 found none) and nothing is cached in $cache"
  kpkg=linux-image-$(basename "$newest")
  fresh=0
fi
kv=${kpkg#linux-image-}
[[ $kv =~ ^[A-Za-z0-9._+-]+$ ]] || skip "odd kernel package name '$kpkg'"
kdir=$cache/$kv
kroot=$kdir/root
initrd=$kdir/initrd-v$cache_format.img
vmlinuz=$kroot/boot/vmlinux-$kv

# Hardware drivers are most of the 400 MB tree and useless in this guest; what is kept covers
# rdma, networking, file systems, crypto and virtual devices.
prune_modules() {
  local k=$1 d
  rm -rf -- "$k/sound"
  for d in "$k"/drivers/*; do
    case "${d##*/}" in
      infiniband | net | virtio | block | char | md | nvdimm | dax | vhost | vdpa | crypto) ;;
      *) rm -rf -- "$d" ;;
    esac
  done
  rm -rf -- "$k"/drivers/net/{wireless,ethernet,usb,can,wwan,ieee802154,hamradio,arcnet,fddi,wan,plip,ppp,slip}
}

# QEMU boots an uncompressed vmlinux through its PVH entry; that skips decompressing the
# bzImage under TCG, which took about 4.5 s of a 12 s boot. Falls back to the bzImage.
extract_vmlinux() {
  local bz=$1 elf=$2 off magic tool
  for magic in xz zstd; do
    case $magic in
      xz) off=$(grep -abo $'\xfd7zXZ\x00' "$bz" | head -n 1 | cut -d: -f1) tool=(xz -dc --single-stream) ;;
      zstd) off=$(grep -abo $'\x28\xb5\x2f\xfd' "$bz" | head -n 1 | cut -d: -f1) tool=(zstd -qdc) ;;
    esac
    [[ -n $off ]] || continue
    if tail -c +$((off + 1)) "$bz" | "${tool[@]}" >"$elf" 2>/dev/null || [[ -s $elf ]]; then
      [[ $(head -c 4 "$elf" | od -An -c | tr -d ' ') == 177ELF ]] && return 0
    fi
  done
  rm -f -- "$elf"
  return 0
}

build_tree() {
  build_tmp=$(mktemp -d "$cache/.build.XXXXXX")
  note "downloading $kpkg"
  if ! (cd "$build_tmp" && timeout 900 apt-get download "$kpkg") >"$work/download.log" 2>&1; then
    # Stale package lists name a file the mirror no longer has: refresh them once and retry.
    if ((EUID == 0)) && ! ((apt_updated)); then
      apt_update || true
      (cd "$build_tmp" && timeout 900 apt-get download "$kpkg") >"$work/download.log" 2>&1 ||
        skip "apt-get download $kpkg failed: $(last_line "$work/download.log")"
    else
      skip "apt-get download $kpkg failed: $(last_line "$work/download.log")"
    fi
  fi
  local deb
  deb=$(find "$build_tmp" -maxdepth 1 -name "${kpkg}_*.deb" | head -n 1)
  [[ -n $deb ]] || skip "apt-get download $kpkg left no .deb"
  dpkg -x "$deb" "$build_tmp/root" || skip "dpkg -x $deb failed"
  rm -f -- "$deb"
  rm -rf -- "$build_tmp/root/usr/share"
  [[ -f $build_tmp/root/boot/vmlinuz-$kv && -d $build_tmp/root/lib/modules/$kv ]] ||
    skip "$kpkg has no boot/vmlinuz-$kv or lib/modules/$kv"
  prune_modules "$build_tmp/root/lib/modules/$kv/kernel"
  depmod -b "$build_tmp/root" "$kv" || skip "depmod -b for $kv failed"
  extract_vmlinux "$build_tmp/root/boot/vmlinuz-$kv" "$build_tmp/root/boot/vmlinux-$kv"
  rm -rf -- "$kdir"
  mkdir -p "$kdir"
  mv -- "$build_tmp/root" "$kroot"
  touch "$kdir/.tree-complete"
  rm -rf -- "$build_tmp"
  build_tmp=""
  # Older kernels would only pile up: Debian moves on, and so does this cache.
  local d
  for d in "$cache"/*/; do
    d=${d%/}
    [[ $d != "$kdir" && -f $d/.tree-complete ]] && rm -rf -- "$d"
  done
  return 0
}

# The initramfs only mounts the control share and runs the boot script the host put there, so it
# depends on nothing but the kernel: everything that may change per run stays in this file.
initrd_modules=(virtio_pci 9pnet_virtio 9p overlay crc32_generic rdma_rxe rdma_ucm dummy)
build_initrd() {
  build_tmp=$(mktemp -d "$cache/.build.XXXXXX")
  local ird=$build_tmp/initrd
  mkdir -p "$ird"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,ctl,host,lib/modules}
  cp -- "$(command -v busybox)" "$ird/bin/busybox"
  # busybox-static; a dynamic one would find no libc in the initramfs.
  if ldd "$ird/bin/busybox" >/dev/null 2>&1; then skip "busybox is not the static one (install busybox-static)"; fi
  # 9p for the shares, overlay for the guest's /tmp and rxe, in modprobe's dependency order:
  # insmod from memory is about a second faster than modprobe over 9p. crc32_generic comes before
  # rdma_rxe, which asks the crypto API for crc32 and fails without it (nothing autoloads here).
  local line path name list=()
  while read -r line; do
    [[ $line == insmod\ * ]] || continue
    path=$(awk '{ print $2 }' <<<"$line")
    name=$(basename "$path")
    name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
    [[ " ${list[*]} " == *" $name "* ]] && continue
    case "$path" in
      *.xz) xz -dc -- "$path" >"$ird/lib/modules/$name" ;;
      *.zst) zstd -qdc -- "$path" >"$ird/lib/modules/$name" ;;
      *.gz) gzip -dc -- "$path" >"$ird/lib/modules/$name" ;;
      *) cp -- "$path" "$ird/lib/modules/$name" ;;
    esac
    list+=("$name")
  done < <(modprobe -d "$kroot" -S "$kv" --show-depends -a "${initrd_modules[@]}" 2>"$work/modprobe.log")
  printf '%s\n' "${list[@]}" >"$ird/modules.list"
  for name in 9p rdma_rxe; do
    [[ " ${list[*]} " == *" $name.ko "* ]] || skip "no $name module in $kv: $(last_line "$work/modprobe.log")"
  done
  cat >"$ird/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
while read -r m; do
  insmod "/lib/modules/$m" || echo "rxe_guest(init): insmod $m failed"
done </modules.list
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 weftout /ctl; then
  if [ -f /ctl/rxe_guest.boot ]; then sh /ctl/rxe_guest.boot; else echo "rxe_guest(init): no /ctl/rxe_guest.boot"; fi
else
  echo "rxe_guest(init): cannot mount the control share"
fi
sync
poweroff -f
EOF
  chmod 755 "$ird/init"
  (cd "$ird" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$build_tmp/initrd.img" ||
    skip "packing the initramfs failed"
  rm -f -- "$kdir"/initrd-v*.img
  mv -- "$build_tmp/initrd.img" "$initrd"
  rm -rf -- "$build_tmp"
  build_tmp=""
}

if [[ ! -f $kdir/.tree-complete || ! -f $initrd ]]; then
  mkdir -p "$cache" || skip "cannot create the cache directory $cache"
  # One builder at a time; the others wait and then find the cache ready.
  exec {lockfd}>"$cache/.lock"
  flock -w 1800 "$lockfd" || skip "timed out waiting for the lock on $cache"
  [[ -f $kdir/.tree-complete ]] || build_tree
  [[ -f $initrd ]] || build_initrd
  exec {lockfd}>&-
fi
if ((fresh)) && [[ -z ${WEFT_QEMU_KERNEL_PKG:-} ]]; then echo "$kpkg" >"$cache/.kernel-pkg.$$" && mv -f -- "$cache/.kernel-pkg.$$" "$cache/.kernel-pkg"; fi
[[ -r $vmlinuz ]] || vmlinuz=$kroot/boot/vmlinuz-$kv
[[ -r $vmlinuz ]] || skip "$vmlinuz is not readable"
t_kernel=$(now)

# --- 3. The per-run share: boot script, command script, output files --------------------------
if [[ -n $out ]]; then
  mkdir -p -- "$out" || fail "cannot create --out $out"
  out=$(cd -- "$out" && pwd -P)
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/rxe_guest.out.XXXXXX")
  out_is_temp=1
  out=$(cd -- "$out" && pwd -P)
fi
[[ $out == /* && $out != / ]] || fail "bad out dir '$out'"
rm -f -- "$out"/rxe_guest.{boot,run,cmd,stdout,stderr,status,status.tmp,ready,skip,console,qemu.log,times}
: >"$out/rxe_guest.stdout"
: >"$out/rxe_guest.stderr"
cwd=$(pwd -P)

extra_modules=${WEFT_QEMU_MODULES:-}
[[ $extra_modules =~ ^[A-Za-z0-9_\ -]*$ ]] || die_usage "WEFT_QEMU_MODULES: module names only"

# Stage 1, busybox sh before the chroot: the mounts. The host root is cached loosely (it is
# read-only and a run is short); the out share is not, so the host sees each write at once.
# /tmp is an overlay on the host's /tmp, so a cwd or build tree under /tmp is still there.
{
  echo "H=/host OUT=$(sq "$out")"
  cat <<'EOF'
say() { read -r up _ </proc/uptime; echo "rxe_guest(boot) $up: $*"; }
skip() { say "$*"; echo "$*" >/ctl/rxe_guest.skip; exit 0; }
say "mounting"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot $H ||
  skip "cannot mount the host root over 9p"
mount -t proc proc $H/proc && mount -t sysfs sysfs $H/sys && mount -t devtmpfs devtmpfs $H/dev &&
  mkdir -p $H/dev/pts $H/dev/shm && mount -t devpts devpts $H/dev/pts &&
  mount -t tmpfs -o mode=1777 tmpfs $H/dev/shm && mount -t tmpfs -o mode=755 tmpfs $H/run ||
  skip "cannot mount proc, sys, dev or tmpfs in the guest"
mkdir -p /tmpfs && mount -t tmpfs tmpfs /tmpfs && mkdir /tmpfs/u /tmpfs/w && chmod 1777 /tmpfs/u
if ! mount -t overlay -o lowerdir=$H/tmp,upperdir=/tmpfs/u,workdir=/tmpfs/w overlay $H/tmp 2>/dev/null; then
  say "no overlay for /tmp, using a plain tmpfs"
  mount -t tmpfs -o mode=1777 tmpfs $H/tmp || skip "cannot mount /tmp"
fi
mkdir -p "$H$OUT" 2>/dev/null
mount --bind /ctl "$H$OUT" || skip "cannot mount the out share at $OUT"
chroot $H /bin/bash "$OUT/rxe_guest.run"
sync
EOF
} >"$out/rxe_guest.boot"

# Stage 2, bash in the chroot: bring rxe0 up, then run the command.
{
  printf 'out=%q kroot=%q kv=%q\n' "$out" "$kroot" "$kv"
  printf 'modules=(%s)\n' "$extra_modules"
  printf 'rxe_addr=%q\n' "${WEFT_QEMU_RXE_ADDR:-}"
  cat <<'EOF'
set -u
exec </dev/null
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() { local up _; read -r up _ </proc/uptime; printf 'rxe_guest(guest) %s: %s\n' "$up" "$*"; }
skip() { printf '%s\n' "$*" >"$out/rxe_guest.skip"; say "SKIP: $*"; exit 0; }
say "in the chroot"
ip link set lo up || skip "ip link set lo up failed"
# The initramfs loaded them; a failed insmod is on the console.
[[ -d /sys/module/rdma_rxe && -d /sys/module/rdma_ucm ]] ||
  skip "rdma_rxe or rdma_ucm did not load (see the guest console)"
if ((${#modules[@]})); then
  err=$(modprobe -d "$kroot" -S "$kv" -a "${modules[@]}" 2>&1) ||
    skip "modprobe ${modules[*]} failed: ${err##*$'\n'}"
  say "modules loaded"
fi
# The module makes a dummy0 of its own; one netdev under rxe0 is less to explain to the tests.
ip link del dummy0 2>/dev/null
err=$({ ip link add d0 type dummy && ip link set d0 up; } 2>&1) || skip "dummy netdev d0: $err"
# An IPv4 address gives rxe0 IPv4-mapped GIDs (and rdma_cm something to resolve).
if [[ -n $rxe_addr ]]; then
  err=$(ip addr add "$rxe_addr" dev d0 2>&1) || skip "ip addr add $rxe_addr dev d0 failed: $err"
fi
err=$(rdma link add rxe0 type rxe netdev d0 2>&1) || skip "rdma link add rxe0 failed: $err"
say "rxe0 added"
# sysfs first (no exec per poll), then libibverbs' own view, which is what the tests will see.
state=""
for _ in $(seq 200); do
  read -r state </sys/class/infiniband/rxe0/ports/1/state 2>/dev/null || state=""
  [[ $state == *ACTIVE* ]] && break
  sleep 0.1
done
active=0
for _ in $(seq 50); do
  if ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; then active=1; break; fi
  sleep 0.1
done
((active)) || skip "rxe0 is not PORT_ACTIVE (sysfs: ${state:-none}): $(ibv_devinfo -d rxe0 2>&1 | grep -m1 -E 'state|Failed|No')"
read -r up _ </proc/uptime
echo "$up" >"$out/rxe_guest.ready"
say "rxe0 active, running the command"
env -i /bin/bash --noprofile --norc "$out/rxe_guest.cmd" >"$out/rxe_guest.stdout" 2>"$out/rxe_guest.stderr"
rc=$?
read -r up2 _ </proc/uptime
echo "$rc $up $up2" >"$out/rxe_guest.status.tmp"
mv "$out/rxe_guest.status.tmp" "$out/rxe_guest.status"
EOF
} >"$out/rxe_guest.run"

# The command and its environment, quoted for bash: no kernel command line, no length limits.
{
  printf 'export PATH=%q HOME=%q WEFT_QEMU_OUT=%q WEFT_QEMU_GUEST=1\n' "${PATH:-/usr/bin:/bin}" "${HOME:-/root}" "$out"
  while read -r name; do
    [[ $name == WEFT_* && $name != WEFT_QEMU_OUT && $name != WEFT_QEMU_GUEST ]] || continue
    printf 'export %s=%q\n' "$name" "${!name}"
  done < <(compgen -e)
  printf 'cd -- %q || { echo "rxe_guest: cannot enter %q in the guest" >&2; exit 125; }\n' "$cwd" "$cwd"
  printf 'command -v -- %q >/dev/null || { echo "rxe_guest: %q: command not found in the guest" >&2; exit 127; }\n' "$1" "$1"
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} >"$out/rxe_guest.cmd"

# --- 4. Boot, stream the output, enforce the limits ---------------------------------------------
# tsc=reliable: TCG's TSC is one virtual clock for all vCPUs, but without it the kernel picks
# HPET, whose reads trap and bypass the vDSO (clock_gettime cost about 3 µs more per call).
# mitigations=off: no page-table switch per syscall, which TCG pays for in TLB flushes.
append="console=ttyS0 panic=-1 quiet loglevel=3 mitigations=off tsc=reliable ${WEFT_QEMU_APPEND:-}"
qemu_args=(
  -machine q35 -accel tcg -cpu "$cpu" -smp "$smp" -m "$mem"
  -nodefaults -no-user-config -display none -monitor none -no-reboot -nic none
  -chardev "file,id=con,path=${out//,/,,}/rxe_guest.console" -serial chardev:con
  -kernel "$vmlinuz" -initrd "$initrd" -append "$append"
  -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=${out//,/,,},mount_tag=weftout,security_model=none,multidevs=remap"
)
note "kernel $kv, qemu -smp $smp -m $mem -cpu $cpu, out $out"
t_boot=$(now)
# A parent-death signal covers the one case the traps cannot: this script being SIGKILLed.
launcher=()
if command -v setpriv >/dev/null; then launcher=(setpriv --pdeathsig KILL --); fi
"${launcher[@]}" qemu-system-x86_64 "${qemu_args[@]}" </dev/null >"$out/rxe_guest.qemu.log" 2>&1 &
qpid=$!
# tail --pid stops each follower shortly after qemu is gone, having printed what was left.
"${launcher[@]}" tail -n +1 -s 0.1 -f --pid="$qpid" "$out/rxe_guest.stdout" &
bg_pids+=($!)
"${launcher[@]}" tail -n +1 -s 0.1 -f --pid="$qpid" "$out/rxe_guest.stderr" >&2 &
bg_pids+=($!)
if [[ $verbose == 1 ]]; then
  : >>"$out/rxe_guest.console"
  "${launcher[@]}" tail -n +1 -s 0.2 -f --pid="$qpid" "$out/rxe_guest.console" | tr -d '\r' | sed 's/^/[guest] /' >&2 &
  bg_pids+=($!)
fi

# The loop polls without forking: the host has 2 cores and TCG wants both of them.
mkfifo "$work/tick"
exec {tick}<>"$work/tick"
outcome=""
t_ready=""
t0_us=${t_boot/./}
ready_us=""
done_us=""
while kill -0 "$qpid" 2>/dev/null; do
  t_us=${EPOCHREALTIME/[.,]/}
  if [[ -f $out/rxe_guest.status ]]; then
    [[ -n $done_us ]] || done_us=$t_us
    # Powering off takes a moment; a guest that will not is stopped.
    if ((t_us - done_us > 20000000)); then kill -TERM "$qpid" 2>/dev/null || true; fi
  elif [[ -z $ready_us && -f $out/rxe_guest.ready ]]; then
    ready_us=$t_us t_ready=$(now)
  elif [[ -z $ready_us ]] && ((t_us - t0_us > boot_timeout * 1000000)); then
    outcome=boot-timeout
    break
  elif [[ -n $ready_us ]] && ((t_us - ready_us > timeout_s * 1000000)); then
    outcome=timeout
    break
  fi
  read -r -t 0.1 -u "$tick" _ || true
done
exec {tick}>&-
if [[ -n $outcome ]]; then
  kill -TERM "$qpid" 2>/dev/null || true
  for _ in {1..30}; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$qpid" 2>/dev/null || true
fi
qrc=0
wait "$qpid" || qrc=$?
qpid=""
t_end=$(now)
for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
bg_pids=()
[[ -z $t_ready && -f $out/rxe_guest.ready ]] && t_ready=$t_end

guest_up=""
if [[ -f $out/rxe_guest.ready ]]; then read -r guest_up <"$out/rxe_guest.ready" || true; fi
g_start="" g_end=""
if [[ -f $out/rxe_guest.status ]]; then read -r _ g_start g_end <"$out/rxe_guest.status" || true; fi
# The command's own time comes from the guest's clock; the host only sees it to within a poll.
{
  echo "setup_packages_s $(secs "$t_start" "$t_packages")"
  echo "setup_kernel_s $(secs "$t_packages" "$t_kernel")"
  [[ -n $t_ready ]] && echo "boot_to_rxe_ready_s $(secs "$t_boot" "$t_ready") (guest uptime ${guest_up:-?})"
  [[ -n $g_end ]] && echo "command_s $(secs "$g_start" "$g_end")"
  echo "qemu_s $(secs "$t_boot" "$t_end")"
  echo "total_s $(secs "$t_start" "$t_end")"
} >"$out/rxe_guest.times"
if [[ $verbose == 1 ]]; then sed "s/^/$prog: /" "$out/rxe_guest.times" >&2; fi

why() {
  local l
  l=$(tr -d '\r' <"$out/rxe_guest.console" 2>/dev/null | grep -m 1 -o 'Kernel panic.*' || true)
  [[ -n $l ]] || l=$(last_line "$out/rxe_guest.console")
  [[ -n $l ]] || l=$(grep -v 'terminating on signal' "$out/rxe_guest.qemu.log" 2>/dev/null | tail -n 1 || true)
  echo "${l:-no console output}"
}
show_console() {
  echo "$prog: last lines of the guest console:" >&2
  tr -d '\r' <"$out/rxe_guest.console" 2>/dev/null | tail -n 15 | sed 's/^/  | /' >&2 || true
}

if [[ -f $out/rxe_guest.status ]]; then
  read -r rc _ <"$out/rxe_guest.status" || rc=125
  [[ $rc =~ ^[0-9]+$ ]] || fail "unreadable status file"
  exit "$rc"
fi
case "$outcome" in
  timeout)
    echo "$prog: TIMEOUT: the command did not finish within $timeout_s s; guest stopped" >&2
    [[ $verbose == 1 ]] || show_console
    exit 124
    ;;
  boot-timeout)
    skip "the guest did not bring rxe0 up within $boot_timeout s (last console line: $(why))"
    ;;
esac
if [[ -f $out/rxe_guest.skip ]]; then
  skip "$(head -n 1 "$out/rxe_guest.skip")"
fi
if [[ -n $t_ready ]]; then
  echo "$prog: the guest died while the command ran (qemu status $qrc): $(why)" >&2
  [[ $verbose == 1 ]] || show_console
  exit 125
fi
if ((qrc != 0)); then
  skip "qemu failed (status $qrc): $(last_line "$out/rxe_guest.qemu.log")"
fi
skip "the guest stopped before rxe0 was ready: $(why)"
