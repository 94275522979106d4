// Two-level broadcast: the root sends to one rank per node (itself standing for its own node,
// the lowest rank for the others) with the Plan's inner algorithm, and each of those broadcasts
// inside its node over shared memory (messages, or from two_level::kIntraWindowsFromBytes the
// node's shared windows), so the network carries the message N-1 times, not NP-1.
#include "algos/two_level.h"

namespace weft {

Status broadcastTwoLevel(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const two_level::RootedRoles roles = two_level::rootedRoles(ctx, args.root);
  if (ctx.rank() == roles.myStandIn) {
    CollArgs acrossNodes = args;
    acrossNodes.root = roles.rootNode;
    WEFT_TRY(two_level::runOn(ctx, roles.standIns, acrossNodes, ctx.plan().inner));
  }
  CollArgs inNode{CollType::kBroadcast, args.recv, args.recv, args.count, args.type, args.op,
                  roles.standInInNode};
  return two_level::runOn(ctx, roles.node, inNode,
                          two_level::intraBroadcastAlgo(ctx, roles.node, ctx.blockBytes()));
}

}  // namespace weft
