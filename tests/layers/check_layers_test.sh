#!/usr/bin/env bash
# The layer check itself: on a small tree with its own ARCHITECTURE.md it passes when every
# include points down, and fails, naming the line, on an include that climbs, one that
# bypasses the public API, one into a private folder, an unused exception and a file in no
# layer.
set -euo pipefail
check="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

make_tree() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree/docs" "$work/tree/src/base" "$work/tree/src/core" "$work/tree/include/weft" \
    "$work/tree/transports/tcp" "$work/tree/tools"
  cat >"$work/tree/docs/ARCHITECTURE.md" <<'DOC'
<!-- layers: -->
| layer | where | owns |
|---|---|---|
| programs | `tools/` | x |
| public API | `include/` | x |
| core | `src/core/` | x |
| transports | `transports/` | x |
| base | `src/base/` | x |

<!-- exceptions: -->
| from | may include | why |
|---|---|---|
| `src/base/` | `include/weft/weft.h` | the public types |

<!-- private: -->
| folder | may be included from | why |
|---|---|---|
| `transports/tcp/` | `transports/wiring.cc` | the wiring chooses |
DOC
  echo '// public' >"$work/tree/include/weft/weft.h"
  printf '#include "weft/weft.h"\n' >"$work/tree/src/base/status.h"
  printf '#include "base/status.h"\n#include "transports/wiring.h"\n' >"$work/tree/src/core/comm.cc"
  printf '#include "base/status.h"\n' >"$work/tree/transports/wiring.h"
  printf '#include "transports/tcp/tcp.h"\n' >"$work/tree/transports/wiring.cc"
  printf '#include "base/status.h"\n' >"$work/tree/transports/tcp/tcp.h"
  printf '#include <weft/weft.h>\n' >"$work/tree/tools/run.cc"
}

expect_pass() {
  if ! python3 "$check" --root "$work/tree" >"$work/out" 2>&1; then
    echo "FAIL: expected the clean tree to pass:"; cat "$work/out"; exit 1
  fi
}
expect_fail() {  # $1: text the report must hold
  if python3 "$check" --root "$work/tree" >"$work/out" 2>&1; then
    echo "FAIL: expected a violation ($1), the check passed:"; cat "$work/out"; exit 1
  fi
  if ! grep -qF -- "$1" "$work/out"; then
    echo "FAIL: the report does not say '$1':"; cat "$work/out"; exit 1
  fi
}

make_tree; expect_pass
make_tree; printf '#include "core/comm.h"\n' >>"$work/tree/src/base/status.h"
touch "$work/tree/src/core/comm.h"
expect_fail "src/base/status.h:2: includes src/core/comm.h: base may not include core"
make_tree; printf '#include "src/core/comm.cc"\n#include "base/status.h"\n' >"$work/tree/tools/run.cc"
expect_fail "tools/run.cc:2: includes src/base/status.h: programs may use only the public API"
make_tree; printf '#include "transports/tcp/tcp.h"\n' >>"$work/tree/src/core/comm.cc"
expect_fail "src/core/comm.cc:3: includes transports/tcp/tcp.h: transports/tcp/ is private"
make_tree; printf '// no include\n' >"$work/tree/src/base/status.h"
expect_fail "is not used; drop its row"
make_tree; mkdir -p "$work/tree/src/stray"; echo '// x' >"$work/tree/src/stray/x.h"
expect_fail "src/stray/x.h: in no layer"
echo "check_layers: 6 cases passed"
