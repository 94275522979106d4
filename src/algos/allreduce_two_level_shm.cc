// Two-level all-reduce on shared windows: the leader schedule (reduce inside each node to its
// lowest rank, all-reduce among the leaders with the Plan's inner algorithm, broadcast back), but
// the two stages inside a node run the shared-memory direct algorithms on the node's windows
// instead of point-to-point trees and chains: every node-mate reduces its 1/P share of each
// chunk straight from the others' windows, and the broadcast is one copy in and one copy out per
// rank. That replaces log2 P dependent message steps per stage with one flag round per chunk,
// which is where the point-to-point stages spend their time when ranks wait on each other.
//
// A node whose ranks do not share windows (the network forced between node-mates, or windows
// that hold other ranks) runs the leader variant's trees and chains; the choice is per node and
// the same on every rank of it.
#include "algos/two_level.h"
#include "base/log.h"

namespace weft {

Status allreduceTwoLevelShm(AlgoContext& ctx) {
  const topo::NodeLayout& nodes = ctx.nodes();
  const std::vector<int>& node = nodes.nodeRanks[nodes.nodeOf[ctx.rank()]];
  const bool onWindows = two_level::nodeShares(ctx, node);
  if (!onWindows && node.size() > 1) {
    WEFT_TRACE("two_level_shm: this node's ranks share no windows; trees and chains inside it");
  }
  return two_level::allreduceViaLeaders(
      ctx, onWindows ? AlgoId::kShmDirect : two_level::intraAlgo(ctx.blockBytes()));
}

}  // namespace weft
