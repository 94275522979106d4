// Choosing a Plan per call. Until the cost-model tuner lands this is a size rule per collective,
// plus the WEFT_ALGO override, which every rank parses identically.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algos/plan.h"
#include "base/call.h"
#include "base/status.h"
#include "topo/node_layout.h"
#include "tune/cost_model.h"
#include "tune/tuning_table.h"

namespace weft {

struct SizeRule {
  size_t minBytes = 0;
  size_t maxBytes = SIZE_MAX;  // exclusive
  tune::AlgoChoice choice;
};

struct AlgoOverrides {
  std::array<std::optional<tune::AlgoChoice>, kNumCollTypes> byColl;
  std::array<std::vector<SizeRule>, kNumCollTypes> bySize;  // checked first, in order
};

// "ring" forces ring wherever a collective has one; "allreduce=ring,broadcast=chain" forces per
// collective; "allreduce:0-16K=tree,allreduce:16K-=ring" forces per size range (bytes of the
// call's count, lower bound inclusive, upper exclusive, K/M/G binary suffixes; sizes no range
// covers are left to the tuner); "allreduce=two_level_leader/ring" also forces a two-level
// algorithm's stage among nodes. Unknown names and algorithms a collective lacks are errors
// naming the token.
Status parseAlgoOverrides(const std::string& text, AlgoOverrides* out);

// What the choice depends on besides the call; identical on every rank.
struct Layout {
  int nranks = 1;
  bool oneHostShm = false;     // every rank on this host, with shared windows
  size_t windowAreaBytes = 0;  // half a shared window: what one round of a direct algorithm holds
  topo::NodeLayout nodes;      // which ranks share a node
  tune::CostLayout cost;       // the model's view of `nodes`
  tune::CostParams params;     // link costs (defaults, WEFT_TUNE_NET / WEFT_TUNE_SHM)
  // A measured tuning table for this layout (tune/table_search.h): its rules come after the
  // overrides and before the model.
  std::shared_ptr<const tune::TuningTable> table;
};

// What the model predicts for each candidate, for logs and weft_tune.
struct Candidate {
  AlgoId algo;
  AlgoId inner;
  double micros;
};
// The modelled candidates for this call on this layout (empty where the collective is not
// modelled or the layout is a single node, which keeps the measured one-host rules). Each
// two-level algorithm appears once, with its best inner algorithm.
std::vector<Candidate> rankCandidates(CollType coll, size_t bytes, const Layout& layout,
                                      size_t sliceBytes);

Plan choosePlan(const CollArgs& args, const Layout& layout, const AlgoOverrides& overrides,
                size_t sliceBytes);
// Every algorithm (and stage among nodes) that can run `coll` of `callBytes` on this layout:
// what weft_tune measure times and a tuning table may choose from.
std::vector<tune::AlgoChoice> runnableChoices(CollType coll, size_t callBytes,
                                              const Layout& layout);

// `choice` with each of `slices` that would cut a call of `messageBytes` (callSizes' message)
// differently from `defaultSlice`: where the largest piece the algorithm pipelines is larger
// than the smaller of the two slices (for the tree, where its chunk differs). What weft_tune
// measure times besides the choice itself; empty for an algorithm that cuts no slices.
std::vector<tune::AlgoChoice> sliceVariants(const tune::AlgoChoice& choice, size_t messageBytes,
                                            const Layout& layout, size_t defaultSlice,
                                            const std::vector<size_t>& slices);

// An init-time check that forced algorithms can run on this layout.
Status checkOverrides(const AlgoOverrides& overrides, const Layout& layout);
// The same for a tuning table's rules (a table edited by hand may name any algorithm).
Status checkTable(const tune::TuningTable& table, const Layout& layout);

}  // namespace weft
