// Choosing a Plan per call. Until the cost-model tuner lands this is a size rule per collective,
// plus the WEFT_ALGO override, which every rank parses identically.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "core/op.h"
#include "core/status.h"
#include "tune/plan.h"

namespace weft {

struct AlgoOverrides {
  std::array<std::optional<AlgoId>, kNumCollTypes> byColl;
};

// "ring" forces ring wherever a collective has one; "allreduce=ring,broadcast=chain" forces per
// collective. Unknown names and algorithms a collective lacks are errors naming the token.
Status parseAlgoOverrides(const std::string& text, AlgoOverrides* out);

// What the choice depends on besides the call; identical on every rank.
struct Layout {
  int nranks = 1;
  bool oneHostShm = false;     // every rank on this host, with shared windows
  size_t windowAreaBytes = 0;  // half a shared window: what one round of a direct algorithm holds
};

Plan choosePlan(const CollArgs& args, const Layout& layout, const AlgoOverrides& overrides,
                size_t sliceBytes);
// An init-time check that forced algorithms can run on this layout.
Status checkOverrides(const AlgoOverrides& overrides, const Layout& layout);

}  // namespace weft
