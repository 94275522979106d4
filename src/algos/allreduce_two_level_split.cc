// Two-level split all-reduce: every node cuts the buffer into L parts (L = the fewest ranks any
// node has); local rank j reduces part j from its node-mates (a direct reduce-scatter over
// shared memory), the L ranks with local index j, one per node, all-reduce part j among nodes
// (L all-reduces of S/L in parallel, on L different pairs of connections), and each part is
// copied back to the node-mates (a direct all-gather). Against the leader variant it uses every
// rank's connections and CPU for the network stage; the node's link still carries the same
// bytes. Ranks with local index >= L on larger nodes only contribute and receive. Where a node's
// ranks share windows, its two stages run on them (split_on_windows.cc); the choice is per node.
#include <optional>

#include "algos/ring_math.h"
#include "algos/two_level.h"

namespace weft {
namespace {

struct Split {
  const std::vector<int>& node;  // this rank's node-mates, itself included
  int parts;                     // L
  int local;                     // this rank's index within its node
};

// Each local rank sends its contribution to part q to local rank q; rank j < L sums part j.
Status reduceScatterInNode(AlgoContext& ctx, const Split& split) {
  const CollArgs& args = ctx.args();
  const size_t typeSize = ctx.typeSize();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  const int size = static_cast<int>(split.node.size());
  for (int q = 0; q < split.parts; ++q) {
    if (q == split.local) continue;
    ring::Range part = ring::blockOf(args.count, split.parts, q);
    ctx.send(split.node[q], in + part.offset * typeSize, part.count * typeSize);
  }
  if (split.local < split.parts) {
    ring::Range part = ring::blockOf(args.count, split.parts, split.local);
    const size_t partBytes = part.count * typeSize;
    auto* incoming = static_cast<char*>(ctx.scratch(std::max<size_t>(1, (size - 1) * partBytes)));
    std::vector<Xfer*> received;
    for (int i = 0, slot = 0; i < size; ++i) {
      if (i != split.local)
        received.push_back(ctx.recv(split.node[i], incoming + slot++ * partBytes, partBytes));
    }
    char* result = out + part.offset * typeSize;
    copyUnlessSame(result, in + part.offset * typeSize, partBytes);
    for (size_t slot = 0; slot < received.size(); ++slot) {
      WEFT_TRY(ctx.wait(received[slot]));
      ctx.reduce(result, result, incoming + slot * partBytes, part.count);
    }
  }
  // In place, the parts sent above are overwritten by the all-gather: they must be gone first.
  return ctx.waitAll();
}

// Local rank j < L hands its finished part to every node-mate.
void allgatherInNode(AlgoContext& ctx, const Split& split) {
  const CollArgs& args = ctx.args();
  const size_t typeSize = ctx.typeSize();
  auto* out = static_cast<char*>(args.recv);
  const int size = static_cast<int>(split.node.size());
  if (split.local < split.parts) {
    ring::Range part = ring::blockOf(args.count, split.parts, split.local);
    for (int i = 0; i < size; ++i) {
      if (i != split.local)
        ctx.send(split.node[i], out + part.offset * typeSize, part.count * typeSize);
    }
  }
  for (int q = 0; q < split.parts; ++q) {
    if (q == split.local) continue;
    ring::Range part = ring::blockOf(args.count, split.parts, q);
    ctx.recv(split.node[q], out + part.offset * typeSize, part.count * typeSize);
  }
}

}  // namespace

Status allreduceTwoLevelSplit(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const topo::NodeLayout& nodes = ctx.nodes();
  const int me = ctx.rank();
  const Split split{nodes.nodeRanks[nodes.nodeOf[me]], nodes.minPerNode(), nodes.localIndexOf[me]};
  // Below kSplitWindowsFromBytes a message to each owner is quicker than the windows' flag
  // rounds, each of which waits for every node-mate.
  const bool onWindows = ctx.blockBytes() >= two_level::kSplitWindowsFromBytes &&
                         two_level::nodeShares(ctx, split.node);
  const CollArgs inNode{CollType::kAllReduce,          args.send, args.recv, args.count, args.type,
                        two_level::partialOp(args.op), 0};
  std::optional<AlgoContext> node;  // the node's ranks, with their windows
  if (onWindows) {
    node.emplace(ctx, split.node, inNode, ctx.plan());
    WEFT_TRY(two_level::splitReduceOnWindows(*node, split.parts));
  } else {
    WEFT_TRY(reduceScatterInNode(ctx, split));
  }
  if (split.local < split.parts) {
    ring::Range part = ring::blockOf(args.count, split.parts, split.local);
    char* mine = static_cast<char*>(args.recv) + part.offset * ctx.typeSize();
    CollArgs acrossNodes{CollType::kAllReduce,          mine, mine, part.count, args.type,
                         two_level::partialOp(args.op), 0};
    WEFT_TRY(two_level::runOn(ctx, nodes.localRankAcrossNodes(split.local), acrossNodes,
                              ctx.plan().inner));
    ctx.finish(mine, part.count);
  }
  if (onWindows) return two_level::splitGatherOnWindows(*node, split.parts);
  allgatherInNode(ctx, split);
  return ctx.waitAll();
}

}  // namespace weft
