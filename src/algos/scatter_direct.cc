// Direct scatter: the root sends each rank its block; every rank receives straight into place.
#include "algos/algorithms.h"

namespace weft {

Status scatterDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const size_t blockBytes = ctx.blockBytes();
  if (ctx.rank() != args.root) {
    ctx.recv(args.root, args.recv, blockBytes);
    return ctx.waitAll();
  }
  const auto* in = static_cast<const char*>(args.send);
  for (int peer = 0; peer < ctx.nranks(); ++peer) {
    if (peer == args.root) {
      copyUnlessSame(args.recv, in + peer * blockBytes, blockBytes);
    } else {
      ctx.send(peer, in + peer * blockBytes, blockBytes);
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
