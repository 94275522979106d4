// Shared-memory reduce-scatter: every rank copies (a chunk of) each of its n input blocks into
// its window area and raises its flag; then each rank reduces its own block straight from all
// areas into its output.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status reduceScatterShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  // A round carries the same chunk of all n blocks.
  const size_t chunkElems = std::max<size_t>(1, window::areaBytes(shared) / typeSize / size);
  const size_t blockBytes = ctx.blockBytes();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);

  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t count = std::min(chunkElems, args.count - offset);
    const size_t bytes = count * typeSize;
    const uint64_t round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    char* mine = window::area(shared, me, round);
    for (int block = 0; block < size; ++block) {
      std::memcpy(mine + block * bytes, in + block * blockBytes + offset * typeSize, bytes);
    }
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
    char* result = out + offset * typeSize;
    const size_t at = me * bytes;
    if (size == 1) {
      std::memcpy(result, mine + at, bytes);
    } else {
      ctx.reduce(result, window::area(shared, 0, round) + at, window::area(shared, 1, round) + at,
                 count);
      for (int index = 2; index < size; ++index) {
        ctx.reduce(result, result, window::area(shared, index, round) + at, count);
      }
    }
    ctx.finish(result, count);
  }
  return Status::ok();
}

}  // namespace weft
