// Shared-memory all-gather: every rank copies (a chunk of) its block into its window area, raises
// its flag, and once all are up copies every rank's chunk into place.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status allgatherShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  const size_t chunkElems = window::areaBytes(shared) / typeSize;
  const size_t blockBytes = ctx.blockBytes();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);

  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t bytes = std::min(chunkElems, args.count - offset) * typeSize;
    const uint64_t round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    std::memcpy(window::area(shared, me, round), in + offset * typeSize, bytes);
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
    for (int index = 0; index < size; ++index) {
      std::memcpy(out + index * blockBytes + offset * typeSize, window::area(shared, index, round),
                  bytes);
    }
  }
  return Status::ok();
}

}  // namespace weft
