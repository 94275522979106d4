// Binomial-tree reduce for small messages: ceil(log2 n) rounds; each rank folds in its children's
// partial results, then hands its own to its parent. Non-root ranks accumulate in scratch, since
// their receive buffer is not theirs to write.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status reduceBinomial(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int root = args.root;
  const size_t bytes = ctx.blockBytes();
  const int relative = ring::mod(ctx.rank() - root, n);
  auto* staging = static_cast<char*>(ctx.scratch(2 * bytes));
  char* incoming = staging + bytes;
  char* accumulator = relative == 0 ? static_cast<char*>(args.recv) : staging;
  copyUnlessSame(accumulator, args.send, bytes);

  for (int mask = 1; mask < n; mask <<= 1) {
    if (relative & mask) {
      WEFT_TRY(ctx.wait(ctx.send(ring::mod(relative - mask + root, n), accumulator, bytes)));
      return Status::ok();
    }
    if (relative + mask < n) {
      WEFT_TRY(ctx.wait(ctx.recv(ring::mod(relative + mask + root, n), incoming, bytes)));
      ctx.reduce(accumulator, accumulator, incoming, args.count);
    }
  }
  ctx.finish(accumulator, args.count);  // only the root gets here
  return ctx.waitAll();
}

}  // namespace weft
