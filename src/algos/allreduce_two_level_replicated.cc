// Two-level replicated all-reduce, for small messages: every rank gets its node's sum (one flag
// round on the node's shared windows, or recursive doubling where node-mates share none), then
// the ranks with the same local index, one per node, all-reduce those sums among nodes with the
// Plan's inner algorithm, each group on the whole buffer. Every rank ends with the result
// itself, so the leader schedule's broadcast back inside the node is gone: 1 + log2 N dependent
// steps instead of 2 + log2 N, and on P ranks per node 1 + log2 N against flat recursive
// doubling's log2 P + log2 N. The network carries the buffer once per local rank instead of
// once per node, which is why it only suits messages whose time is their steps.
//
// Every node-mate reduces the same node sum bit for bit and every group reduces the same node
// sums in the same order, so all ranks end with identical results. Where nodes hold different
// numbers of ranks, a group needs one rank of every node: only local indices below the smallest
// node's count form groups, and the rest receive the result from the node-mate whose index is
// theirs modulo that count.
#include "algos/shm_window.h"
#include "algos/two_level.h"

namespace weft {
namespace {

AlgoId nodeSumAlgo(const AlgoContext& ctx, const std::vector<int>& node) {
  if (!two_level::nodeShares(ctx, node)) return AlgoId::kRecursiveDoubling;
  return ctx.blockBytes() <= std::min(kShmFlatAllreduceBytes, window::areaBytes(*ctx.windows()))
             ? AlgoId::kShmFlat
             : AlgoId::kShmDirect;
}

}  // namespace

Status allreduceTwoLevelReplicated(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const topo::NodeLayout& nodes = ctx.nodes();
  const int me = ctx.rank();
  const std::vector<int>& node = nodes.nodeRanks[nodes.nodeOf[me]];
  const int local = nodes.localIndexOf[me];
  const int groups = nodes.minPerNode();
  const weftRedOp_t op = two_level::partialOp(args.op);
  const size_t bytes = args.count * ctx.typeSize();

  if (node.size() > 1) {
    CollArgs inNode{CollType::kAllReduce, args.send, args.recv, args.count, args.type, op, 0};
    WEFT_TRY(two_level::runOn(ctx, node, inNode, nodeSumAlgo(ctx, node)));
  } else {
    copyUnlessSame(args.recv, args.send, bytes);
  }

  if (local < groups) {
    CollArgs acrossNodes{CollType::kAllReduce, args.recv, args.recv, args.count, args.type, op, 0};
    WEFT_TRY(
        two_level::runOn(ctx, nodes.localRankAcrossNodes(local), acrossNodes, ctx.plan().inner));
    ctx.finish(args.recv, args.count);
    const int size = static_cast<int>(node.size());
    for (int extra = local + groups; extra < size; extra += groups) {
      ctx.send(node[extra], args.recv, bytes);
    }
  } else {
    ctx.recv(node[local % groups], args.recv, bytes);
  }
  return ctx.waitAll();
}

}  // namespace weft
