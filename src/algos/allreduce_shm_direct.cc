// Shared-memory all-reduce for larger messages, in rounds of one window area: every rank copies
// its chunk into its area; each rank then reduces its 1/P share of the chunk straight from all
// areas (in place, into its own area) and raises a second flag; finally every rank copies the
// reduced shares into its output. Each element is read from shared memory by exactly one
// reducer, and each rank moves about 3 chunks of memory per chunk, whatever P is.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status allreduceShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int me = shared.localIndex();
  const size_t chunkElems = window::areaBytes(shared) / typeSize;
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);

  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t count = std::min(chunkElems, args.count - offset);
    const uint64_t round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    std::memcpy(window::area(shared, me, round), in + offset * typeSize, count * typeSize);
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));

    window::reduceOwnShare(ctx, round, count);
    WEFT_TRY(ctx.publishAndWait(window::kReduced, round));
    window::copySharesOut(ctx, round, count, out + offset * typeSize);
  }
  return Status::ok();
}

}  // namespace weft
