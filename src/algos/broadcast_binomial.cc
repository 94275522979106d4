// Binomial-tree broadcast: ceil(log2 n) rounds, the whole message per hop. For small messages,
// where latency dominates.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status broadcastBinomial(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int root = args.root;
  const size_t bytes = ctx.blockBytes();
  const int relative = ring::mod(ctx.rank() - root, n);
  if (relative == 0) copyUnlessSame(args.recv, args.send, bytes);

  int mask = 1;
  while (mask < n) {
    if (relative & mask) {
      WEFT_TRY(ctx.wait(ctx.recv(ring::mod(relative - mask + root, n), args.recv, bytes)));
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < n) ctx.send(ring::mod(relative + mask + root, n), args.recv, bytes);
  }
  return ctx.waitAll();
}

}  // namespace weft
