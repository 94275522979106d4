// Shared pieces of the two-level algorithms: the sub-groups a rank belongs to (its node, and the
// ranks that stand for each node) and sub-calls run over them with the existing algorithms.
#pragma once

#include <algorithm>
#include <utility>
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

// Whether this rank's node-mates `node` (a node of more than one rank) share the node's windows:
// the stages inside it can then run on them. The same on each rank of the node.
inline bool nodeShares(const AlgoContext& ctx, const std::vector<int>& node) {
  return node.size() > 1 && AlgoContext::windowsCover(ctx.windows(), node);
}

// A broadcast inside `node` (this rank's node-mates) of `bytes`, as the two-level broadcast and
// all-gather end: from kIntraWindowsFromBytes on the node's shared windows where its ranks share
// them, one flag round per window area instead of a chain's P - 1 hops per slice; else the tree
// or chain. The choice is per node and the same on each of its ranks. Below it the windows cost
// more: a loop of broadcasts on them measured 1.4-1.9x the trees' time up to 16 KiB, since a root
// may not refill its area before every node-mate has read the one before, where a tree's messages
// let it run ahead. (A reduce inside the node on windows measured 1.8-2x slower up to 4 KiB and
// no faster from 256 KiB than the chain, so the two-level reduce stays on trees and chains.)
constexpr size_t kIntraWindowsFromBytes = 64 * 1024;
inline AlgoId intraBroadcastAlgo(const AlgoContext& ctx, const std::vector<int>& node,
                                 size_t bytes) {
  return bytes >= kIntraWindowsFromBytes && nodeShares(ctx, node) ? AlgoId::kShmDirect
                                                                  : intraAlgo(bytes);
}

// The leader schedule of the two-level all-reduces: reduce inside each node to its lowest rank
// with `inNode`, all-reduce among those leaders with the Plan's inner algorithm, broadcast back
// inside each node with `inNode`.
Status allreduceViaLeaders(AlgoContext& ctx, AlgoId inNode);

// The split all-reduce's stages inside a node on its shared windows (split_on_windows.cc), for
// messages of at least kSplitWindowsFromBytes. `node` is a view of exactly the node's ranks (it has
// the windows) whose args are the whole call's with the partial op; part q of `parts` is
// ring::blockOf(count, parts, q), owned by local rank q. The first leaves each owner's part summed
// over the node in its receive buffer; the second copies every owner's part into every node-mate's
// receive buffer.
constexpr size_t kSplitWindowsFromBytes = 4096;
Status splitReduceOnWindows(AlgoContext& node, int parts);
Status splitGatherOnWindows(AlgoContext& node, int parts);

// Who does what in a rooted two-level collective (broadcast, reduce): one rank stands for each
// node, the root for its own node and the lowest rank for the others.
struct RootedRoles {
  int rootNode;                  // the root's node: the root among the stand-ins
  const std::vector<int>& node;  // this rank's node-mates, itself included
  std::vector<int> standIns;     // index: node
  int myStandIn;                 // the rank standing for this rank's node
  int standInInNode;             // its position in `node`: the root of the stage inside it
};

inline RootedRoles rootedRoles(const AlgoContext& ctx, int root) {
  const topo::NodeLayout& nodes = ctx.nodes();
  const std::vector<int>& node = nodes.nodeRanks[nodes.nodeOf[ctx.rank()]];
  std::vector<int> standIns;
  standIns.reserve(static_cast<size_t>(nodes.nodes()));
  for (int k = 0; k < nodes.nodes(); ++k) {
    standIns.push_back(k == nodes.nodeOf[root] ? root : nodes.leaderOf(k));
  }
  const int myStandIn = standIns[nodes.nodeOf[ctx.rank()]];
  const int position =
      static_cast<int>(std::find(node.begin(), node.end(), myStandIn) - node.begin());
  return {nodes.nodeOf[root], node, std::move(standIns), myStandIn, position};
}

}  // namespace weft::two_level
