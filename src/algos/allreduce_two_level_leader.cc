// Two-level leader all-reduce (the seed ADR's schedule): reduce inside each node to its lowest
// rank, all-reduce among those leaders with the Plan's inner algorithm, broadcast back inside
// each node. The network carries 2(N-1)/N x S per leader with a ring among N nodes (or log2 N
// whole messages with a tree), and pays its latency 2(N-1) (or 2 log2 N) times instead of the
// flat ring's 2(NP-1); the intra-node stages cost about 2 log2 P shared-memory steps. It wins
// where network latency dominates: small and medium messages on several ranks per node.
#include "algos/two_level.h"

namespace weft {

Status two_level::allreduceViaLeaders(AlgoContext& ctx, AlgoId inNode) {
  const CollArgs& args = ctx.args();
  const topo::NodeLayout& nodes = ctx.nodes();
  const int me = ctx.rank();
  const std::vector<int>& node = nodes.nodeRanks[nodes.nodeOf[me]];
  const weftRedOp_t op = two_level::partialOp(args.op);

  CollArgs toLeader{CollType::kReduce, args.send, args.recv, args.count, args.type, op, 0};
  WEFT_TRY(two_level::runOn(ctx, node, toLeader, inNode));

  if (me == node.front()) {
    std::vector<int> leaders;
    for (int k = 0; k < nodes.nodes(); ++k) leaders.push_back(nodes.leaderOf(k));
    CollArgs amongLeaders{CollType::kAllReduce, args.recv, args.recv, args.count, args.type, op, 0};
    WEFT_TRY(two_level::runOn(ctx, leaders, amongLeaders, ctx.plan().inner));
    ctx.finish(args.recv, args.count);
  }

  CollArgs fromLeader{CollType::kBroadcast, args.recv, args.recv, args.count, args.type, op, 0};
  return two_level::runOn(ctx, node, fromLeader, inNode);
}

Status allreduceTwoLevelLeader(AlgoContext& ctx) {
  return two_level::allreduceViaLeaders(ctx, two_level::intraAlgo(ctx.blockBytes()));
}

}  // namespace weft
