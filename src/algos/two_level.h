// Shared pieces of the two-level algorithms: the sub-groups a rank belongs to (its node, and the
// ranks that stand for each node) and sub-calls run over them with the existing algorithms.
#pragma once

#include <vector>

#include "algos/algorithms.h"

namespace weft::two_level {

// Intra-node stages are latency-bound trees for small messages and pipelined chains above this.
constexpr size_t kIntraChainBytes = 64 * 1024;

// The sub-calls combine partial results with the call's op, except that an average is summed
// and divided once, by the whole communicator's size, at the end.
inline weftRedOp_t partialOp(weftRedOp_t op) {
  return op == weftAvg ? weftSum : op;
}

// Runs `algo` for `args` over `members` (communicator ranks; the caller must be one of them).
inline Status runOn(const AlgoContext& whole, const std::vector<int>& members, const CollArgs& args,
                    AlgoId algo) {
  Plan plan = whole.plan();
  plan.algo = algo;
  plan.nearestFirst = false;  // sub-groups span one rank per node: every partner is as far
  AlgoContext group(whole, members, args, plan);
  AlgoFn run = findAlgorithm(args.coll, algo);
  if (run == nullptr) {
    return internalError(std::string("two-level: no ") + algoName(algo) + " for " +
                         collName(args.coll));
  }
  WEFT_TRY(run(group));
  return group.waitAll();
}

// The intra-node tree or chain for a message of `bytes`.
inline AlgoId intraAlgo(size_t bytes) {
  return bytes > kIntraChainBytes ? AlgoId::kChain : AlgoId::kBinomial;
}

// The leader schedule of the two-level all-reduces: reduce inside each node to its lowest rank
// with `inNode`, all-reduce among those leaders with the Plan's inner algorithm, broadcast back
// inside each node with `inNode`.
Status allreduceViaLeaders(AlgoContext& ctx, AlgoId inNode);

// One rank per node for a rooted collective: the root for its own node, the lowest rank for
// the others (index: node).
inline std::vector<int> standIns(const topo::NodeLayout& nodes, int root) {
  std::vector<int> ranks;
  ranks.reserve(static_cast<size_t>(nodes.nodes()));
  for (int k = 0; k < nodes.nodes(); ++k) {
    ranks.push_back(k == nodes.nodeOf[root] ? root : nodes.leaderOf(k));
  }
  return ranks;
}

inline int positionOf(const std::vector<int>& members, int rank) {
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == rank) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace weft::two_level
