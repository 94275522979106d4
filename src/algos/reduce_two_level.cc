// Two-level reduce: the ranks of each node reduce to one of them (the root in its own node, the
// lowest rank in the others) over shared memory, and those ranks reduce to the root with the
// Plan's inner algorithm, so the network carries the message N-1 times instead of up to n-1
// (a chain through interleaved ranks crosses nodes at every hop). broadcast_two_level.cc run
// backwards.
#include "algos/two_level.h"

namespace weft {

Status reduceTwoLevel(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const two_level::RootedRoles roles = two_level::rootedRoles(ctx, args.root);
  const bool standIn = ctx.rank() == roles.myStandIn;
  const size_t bytes = ctx.blockBytes();
  const weftRedOp_t op = two_level::partialOp(args.op);
  // A stand-in other than the root keeps its node's partial result in staging of its own: its
  // receive buffer is not its to write, and the sub-calls use the scratch memory.
  void* partial = ctx.rank() == args.root ? args.recv
                  : standIn               ? ctx.heldScratch(std::max<size_t>(1, bytes))
                                          : nullptr;
  CollArgs inNode{CollType::kReduce,  args.send, partial, args.count, args.type, op,
                  roles.standInInNode};
  WEFT_TRY(two_level::runOn(ctx, roles.node, inNode, two_level::intraAlgo(bytes)));
  if (!standIn) return Status::ok();

  CollArgs acrossNodes{CollType::kReduce, partial, partial,       args.count,
                       args.type,         op,      roles.rootNode};
  WEFT_TRY(two_level::runOn(ctx, roles.standIns, acrossNodes, ctx.plan().inner));
  if (ctx.rank() == args.root) ctx.finish(args.recv, args.count);
  return Status::ok();
}

}  // namespace weft
