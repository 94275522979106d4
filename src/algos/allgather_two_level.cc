// Two-level all-gather: node-mates hand their blocks to the node's leader (through the node's
// shared windows where its ranks share them), the leaders pass whole nodes' blocks around a
// ring of leaders (N-1 steps over the network instead of NP-1), and each leader broadcasts the
// gathered buffer inside its node (on the node's shared windows from
// two_level::kIntraWindowsFromBytes). A node's ranks need not be numbered consecutively, so its
// blocks travel as one message per run of consecutive ranks.
#include <algorithm>
#include <cstring>

#include "algos/ring_math.h"
#include "algos/shm_window.h"
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

// The same on the node's shared windows (`node` is a view of exactly its ranks, with the call's
// args): each node-mate copies its block, an area at a time, into its area (into its flag's line
// when it fits) and raises its flag without waiting, and the leader copies every node-mate's
// piece into place. One flag round per area instead of a message from each node-mate.
Status gatherToLeaderOnWindows(AlgoContext& node, size_t blockBytes) {
  SharedWindows& shared = *node.windows();
  const auto* in = static_cast<const char*>(node.args().send);
  auto* out = static_cast<char*>(node.args().recv);
  const int me = shared.localIndex();  // the view's rank: the windows cover it in order
  if (me == 0) copyUnlessSame(out + node.commRank(me) * blockBytes, in, blockBytes);
  const size_t areaBytes = window::areaBytes(shared);
  size_t offset = 0;
  do {
    const size_t bytes = std::min(areaBytes, blockBytes - offset);
    const uint64_t round = node.nextWindowRound();
    const int flag = window::arrived(round);
    WEFT_TRY(window::claimArea(node, round));
    if (me != 0) {
      std::memcpy(window::roundInput(shared, me, round, blockBytes), in + offset, bytes);
      shared.publish(flag, round);
      offset += bytes;
      continue;
    }
    WEFT_TRY(node.publishAndWait(flag, round));
    for (int index = 1; index < shared.localSize(); ++index) {
      std::memcpy(out + node.commRank(index) * blockBytes + offset,
                  window::roundInput(shared, index, round, blockBytes), bytes);
    }
    offset += bytes;
  } while (offset < blockBytes);
  return Status::ok();
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
  if (two_level::nodeShares(ctx, node)) {
    AlgoContext nodeView(ctx, node, args, ctx.plan());
    WEFT_TRY(gatherToLeaderOnWindows(nodeView, blockBytes));
  } else {
    WEFT_TRY(gatherToLeader(ctx, node, blockBytes));
  }
  if (ctx.rank() == node.front()) WEFT_TRY(ringAmongLeaders(ctx, blockBytes));
  const size_t total = blockBytes * ctx.nranks();
  CollArgs fromLeader{CollType::kBroadcast, args.recv, args.recv, total, weftUint8, weftSum, 0};
  return two_level::runOn(ctx, node, fromLeader, two_level::intraBroadcastAlgo(ctx, node, total));
}

}  // namespace weft
