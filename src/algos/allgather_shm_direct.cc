// Shared-memory all-gather: every rank copies (a chunk of) its block into its window area, raises
// its flag, and once all are up copies every rank's chunk into place.
//
// A rank whose send buffer is from weftMemAlloc (algos/shared_buffers.h) copies nothing in: the
// others copy its block straight from its buffer, and all wait until everyone is done reading
// before they return.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shared_buffers.h"
#include "algos/shm_window.h"

namespace weft {

Status allgatherShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  const size_t blockBytes = ctx.blockBytes();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);

  shared_buffers::Reached peers;
  bool anyShared = false;
  uint64_t round = 0;
  size_t chunkElems = window::areaBytes(shared) / typeSize;
  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    const bool first = offset == 0;
    const bool sendShared =
        first ? shared_buffers::offer(ctx, window::arrived(round), in, blockBytes, nullptr, 0)
                    .send.shareable()
              : peers.send[me] != nullptr;
    size_t bytes = std::min(chunkElems, args.count - offset) * typeSize;
    if (!sendShared) std::memcpy(window::area(shared, me, round), in + offset * typeSize, bytes);
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
    if (first) {
      WEFT_TRY(
          shared_buffers::reach(ctx, window::arrived(round), in, blockBytes, nullptr, 0, &peers));
      anyShared = peers.anySend();
      // Nothing staged: every block whole, in this one round.
      if (peers.allSends) chunkElems = args.count, bytes = blockBytes;
    }
    for (int index = 0; index < size; ++index) {
      const char* from = peers.send[index] != nullptr ? peers.send[index] + offset * typeSize
                                                      : window::area(shared, index, round);
      char* to = out + index * blockBytes + offset * typeSize;
      if (to != from) std::memcpy(to, from, bytes);
    }
  }
  // The ranks whose own buffers were read wait for every reader.
  if (anyShared) WEFT_TRY(ctx.publishAndWait(window::kReleased, round));
  return Status::ok();
}

}  // namespace weft
