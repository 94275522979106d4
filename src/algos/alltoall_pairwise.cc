// Pairwise-exchange all-to-all. At step s rank r trades blocks with p = (s - r) mod n, a
// symmetric pairing valid for any n. Out of place, every exchange is posted at once (each pair
// trades exactly one message each way, so order does not matter); in place, the exchanges run
// one at a time through a one-block staging area, because a block may be overwritten only after
// it has been sent.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status alltoallPairwise(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t blockBytes = ctx.blockBytes();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  const bool inPlace = args.send == args.recv;
  char* staging = inPlace && n > 1 ? static_cast<char*>(ctx.scratch(blockBytes)) : nullptr;

  for (int step = 0; step < n; ++step) {
    const int peer = ring::mod(step - rank, n);
    if (peer == rank) {
      copyUnlessSame(out + peer * blockBytes, in + peer * blockBytes, blockBytes);
      continue;
    }
    ctx.send(peer, in + peer * blockBytes, blockBytes);
    if (!inPlace) {
      ctx.recv(peer, out + peer * blockBytes, blockBytes);
      continue;
    }
    ctx.recv(peer, staging, blockBytes);
    WEFT_TRY(ctx.waitAll());
    copyUnlessSame(out + peer * blockBytes, staging, blockBytes);
  }
  return ctx.waitAll();
}

}  // namespace weft
