// Two-level all-gather: node-mates hand their blocks to the node's leader, the leaders pass
// whole nodes' blocks around a ring of leaders (N-1 steps over the network instead of NP-1),
// and each leader broadcasts the gathered buffer inside its node (on the node's shared windows
// from two_level::kIntraWindowsFromBytes). A node's ranks need not be numbered consecutively, so
// its blocks travel as one message per run of consecutive ranks.
#include "algos/ring_math.h"
#include "algos/two_level.h"

namespace weft {
namespace {

// Consecutive runs in an ascending list of ranks, as (first rank, length).
std::vector<std::pair<int, int>> runsOf(const std::vector<int>& ranks) {
  std::vector<std::pair<int, int>> runs;
  for (int rank : ranks) {
    if (!runs.empty() && runs.back().first + runs.back().second == rank) {
      ++runs.back().second;
    } else {
      runs.emplace_back(rank, 1);
    }
  }
  return runs;
}

Status gatherToLeader(AlgoContext& ctx, const std::vector<int>& node, size_t blockBytes) {
  const CollArgs& args = ctx.args();
  auto* out = static_cast<char*>(args.recv);
  const int me = ctx.rank();
  copyUnlessSame(out + me * blockBytes, args.send, blockBytes);
  if (me != node.front()) {
    ctx.send(node.front(), args.send, blockBytes);
    return ctx.waitAll();
  }
  for (size_t i = 1; i < node.size(); ++i)
    ctx.recv(node[i], out + node[i] * blockBytes, blockBytes);
  return ctx.waitAll();
}

Status ringAmongLeaders(AlgoContext& ctx, size_t blockBytes) {
  const topo::NodeLayout& nodes = ctx.nodes();
  auto* out = static_cast<char*>(ctx.args().recv);
  const int count = nodes.nodes();
  const int self = nodes.nodeOf[ctx.rank()];
  const int next = nodes.leaderOf((self + 1) % count);
  const int prev = nodes.leaderOf((self + count - 1) % count);
  for (int step = 0; step < count - 1; ++step) {
    const size_t before = ctx.postedCount();
    for (auto [first, length] : runsOf(nodes.nodeRanks[ring::mod(self - step, count)])) {
      ctx.send(next, out + first * blockBytes, length * blockBytes);
    }
    for (auto [first, length] : runsOf(nodes.nodeRanks[ring::mod(self - step - 1, count)])) {
      ctx.recv(prev, out + first * blockBytes, length * blockBytes);
    }
    WEFT_TRY(ctx.waitPosted(before, ctx.postedCount()));
  }
  return Status::ok();
}

}  // namespace

Status allgatherTwoLevel(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const topo::NodeLayout& nodes = ctx.nodes();
  const std::vector<int>& node = nodes.nodeRanks[nodes.nodeOf[ctx.rank()]];
  const size_t blockBytes = ctx.blockBytes();
  WEFT_TRY(gatherToLeader(ctx, node, blockBytes));
  if (ctx.rank() == node.front()) WEFT_TRY(ringAmongLeaders(ctx, blockBytes));
  const size_t total = blockBytes * ctx.nranks();
  CollArgs fromLeader{CollType::kBroadcast, args.recv, args.recv, total, weftUint8, weftSum, 0};
  return two_level::runOn(ctx, node, fromLeader, two_level::intraBroadcastAlgo(ctx, node, total));
}

}  // namespace weft
