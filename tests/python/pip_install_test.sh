#!/bin/sh
# pip install . into a fresh venv, from a copy of the repository's files, then use it.
#
#   pip_install_test.sh SOURCE_DIR
#
# Copies the files git knows (tracked, and new ones not ignored) to a temporary directory, so the
# source tree stays clean; makes a venv with Debian's python that sees the system's numpy and
# torch (--system-site-packages); runs `pip install --no-build-isolation --no-index .` (PEP 517
# through setuptools, which builds libweft, and weft_torch where torch imports, with CMake); then,
# from outside the copy: imports weft and checks that it loaded the libweft inside the venv,
# imports weft_torch and checks that its extension resolves libweft there (readelf, ldd), and
# runs tests/python/collectives_test.py at 2 ranks with the venv's python. Exit 77 (skip) where
# venv, setuptools, pip or numpy is missing. Everything it made is removed on exit.
set -eu

src=${1:?usage: pip_install_test.sh SOURCE_DIR}
python=/usr/bin/python3
say() { echo "pip_install_test: $*"; }
skip() { say "SKIP: $*"; exit 77; }

for module in venv:python3-venv ensurepip:python3-venv setuptools:python3-setuptools \
              numpy:python3-numpy; do
  "$python" -c "import ${module%%:*}" 2>/dev/null ||
    skip "$python cannot import ${module%%:*} (apt-get install ${module#*:})"
done
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || skip "$src is not a git checkout"

tmp=$(mktemp -d /tmp/weft_pip_test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
unset PYTHONPATH WEFT_LIBRARY

say "copying the repository's files to $tmp/src"
mkdir "$tmp/src"
# Files deleted but not yet committed are listed too: keep the ones that exist.
# shellcheck disable=SC2016  # $f is the inner shell's
git -C "$src" ls-files -z --cached --others --exclude-standard |
  (cd "$src" && xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh) |
  (cd "$src" && xargs -0 cp --parents -t "$tmp/src")

say "creating the venv"
"$python" -m venv --system-site-packages "$tmp/v"
venv_python="$tmp/v/bin/python"

started=$(date +%s)
say "pip install --no-build-isolation --no-index . (builds libweft with CMake)"
(cd "$tmp/src" && "$venv_python" -m pip install --no-build-isolation --no-index .)
say "installed in $(( $(date +%s) - started )) s"

# Outside the copy, so that nothing imports from the source tree.
cd "$tmp"
site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
loaded=$("$venv_python" -c 'import weft; print(weft.library_path(), weft.version())')
say "weft loads $loaded"
case $loaded in
  "$site"/weft/libweft.so.*) ;;
  *) say "FAIL: weft did not load the libweft inside the venv ($site/weft)"; exit 1 ;;
esac

if "$python" -c 'import torch' 2>/dev/null; then
  ext=$(ls "$site"/weft_torch/_C*.so 2>/dev/null || true)
  if [ -z "$ext" ]; then
    say "FAIL: torch imports, but weft_torch was not installed"
    exit 1
  fi
  runpath=$(readelf -d "$ext" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
  say "weft_torch/_C RUNPATH: $runpath"
  resolved=$(ldd "$ext" | awk '/libweft\.so/ {print $3}')
  say "weft_torch/_C resolves libweft to $resolved"
  case $resolved in
    "$site"/weft_torch/../weft/libweft.so.*|"$site"/weft/libweft.so.*) ;;
    *) say "FAIL: weft_torch's extension does not find the venv's libweft"; exit 1 ;;
  esac
  "$venv_python" -c 'import weft, weft_torch
print("weft_torch", weft_torch.version(), "registers the backend", weft_torch.BACKEND)'
else
  say "torch does not import with $python: weft_torch not expected"
fi

say "a 2-rank job with the venv's python"
WEFT_SOCKET_IFNAME=${WEFT_SOCKET_IFNAME:-lo} \
  "$venv_python" "$tmp/src/tests/python/collectives_test.py" --nranks 2 --timeout 90
say "PASS"
