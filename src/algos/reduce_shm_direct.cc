// Shared-memory reduce: as the direct all-reduce (each rank reduces its 1/P share of every chunk
// straight from all window areas), but only the root copies the reduced shares out.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status reduceShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int me = shared.localIndex();
  const bool isRoot = me == args.root;
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
    shared.publish(window::kReduced, round);
    if (!isRoot) continue;
    WEFT_TRY(ctx.waitForFlags(window::kReduced, round));
    window::copySharesOut(ctx, round, count, out + offset * typeSize);
  }
  return Status::ok();
}

}  // namespace weft
