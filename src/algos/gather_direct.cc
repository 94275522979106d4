// Direct gather: every rank sends its block straight to the root, which posts all receives at
// once into their final places.
#include "algos/algorithms.h"

namespace weft {

Status gatherDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const size_t blockBytes = ctx.blockBytes();
  if (ctx.rank() != args.root) {
    ctx.send(args.root, args.send, blockBytes);
    return ctx.waitAll();
  }
  auto* out = static_cast<char*>(args.recv);
  for (int peer = 0; peer < ctx.nranks(); ++peer) {
    if (peer == args.root) {
      copyUnlessSame(out + peer * blockBytes, args.send, blockBytes);
    } else {
      ctx.recv(peer, out + peer * blockBytes, blockBytes);
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
