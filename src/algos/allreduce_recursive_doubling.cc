// Recursive-doubling all-reduce for small messages: log2(n) exchange rounds of the whole buffer,
// so latency is logarithmic. A non-power-of-two n is folded first: of the first 2*rem ranks
// (rem = n - largest power of two), each even rank hands its data to the odd rank after it and
// waits for the result, leaving a power of two of active ranks.
#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status allreduceRecursiveDoubling(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t bytes = ctx.blockBytes();
  auto* buf = static_cast<char*>(args.recv);
  copyUnlessSame(buf, args.send, bytes);
  if (n == 1) {
    ctx.finish(buf, args.count);
    return Status::ok();
  }
  void* incoming = ctx.scratch(bytes);
  const int power = ring::largestPowerOfTwoAtMost(n);
  const int rem = n - power;

  int virtualRank;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      WEFT_TRY(ctx.wait(ctx.send(rank + 1, buf, bytes)));
      virtualRank = -1;
    } else {
      WEFT_TRY(ctx.wait(ctx.recv(rank - 1, incoming, bytes)));
      ctx.reduce(buf, incoming, buf, args.count);
      virtualRank = rank / 2;
    }
  } else {
    virtualRank = rank - rem;
  }

  if (virtualRank >= 0) {
    for (int mask = 1; mask < power; mask <<= 1) {
      int partnerVirtual = virtualRank ^ mask;
      int partner = ring::foldedRank(partnerVirtual, rem);
      ctx.send(partner, buf, bytes);
      WEFT_TRY(ctx.wait(ctx.recv(partner, incoming, bytes)));
      WEFT_TRY(ctx.waitAll());
      // Both partners combine (lower, higher) in the same order, so every rank ends with
      // bit-identical results even where the operation is not bitwise commutative (-0/+0).
      if (virtualRank < partnerVirtual) {
        ctx.reduce(buf, buf, incoming, args.count);
      } else {
        ctx.reduce(buf, incoming, buf, args.count);
      }
    }
    ctx.finish(buf, args.count);
  }

  if (rank < 2 * rem) {
    if (rank % 2 == 1) {
      ctx.send(rank - 1, buf, bytes);
    } else {
      ctx.recv(rank + 1, buf, bytes);
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
