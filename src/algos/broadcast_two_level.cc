// Two-level broadcast: the root sends to one rank per node (itself standing for its own node,
// the lowest rank for the others) with the Plan's inner algorithm, and each of those broadcasts
// inside its node over shared memory, so the network carries the message N-1 times, not NP-1.
#include "algos/two_level.h"

namespace weft {

Status broadcastTwoLevel(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const topo::NodeLayout& nodes = ctx.nodes();
  const int rootNode = nodes.nodeOf[args.root];
  const std::vector<int>& node = nodes.nodeRanks[nodes.nodeOf[ctx.rank()]];
  const std::vector<int> standIns = two_level::standIns(nodes, args.root);
  const int myStandIn = standIns[nodes.nodeOf[ctx.rank()]];
  const size_t bytes = ctx.blockBytes();
  if (ctx.rank() == myStandIn) {
    CollArgs acrossNodes = args;
    acrossNodes.root = rootNode;
    WEFT_TRY(two_level::runOn(ctx, standIns, acrossNodes, ctx.plan().inner));
  }
  CollArgs inNode{CollType::kBroadcast,
                  args.recv,
                  args.recv,
                  args.count,
                  args.type,
                  args.op,
                  two_level::positionOf(node, myStandIn)};
  return two_level::runOn(ctx, node, inNode, two_level::intraAlgo(bytes));
}

}  // namespace weft
