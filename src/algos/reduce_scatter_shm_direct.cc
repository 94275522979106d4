// Shared-memory reduce-scatter: every rank copies (a chunk of) each of its n input blocks into
// its window area and raises its flag; then each rank reduces its own block straight from all
// areas into its output.
//
// A rank whose send buffer is from weftMemAlloc (algos/shared_buffers.h) copies nothing in: the
// others reduce its blocks straight from its buffer, and all wait until everyone is done reading
// before they return.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shared_buffers.h"
#include "algos/shm_window.h"

namespace weft {

Status reduceScatterShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  const size_t blockBytes = ctx.blockBytes();
  const size_t sendBytes = blockBytes * size;
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);

  shared_buffers::Reached peers;
  std::vector<const char*> sources(size);
  bool anyShared = false;
  uint64_t round = 0;
  // A round carries the same chunk of all n blocks.
  size_t chunkElems = std::max<size_t>(1, window::areaBytes(shared) / typeSize / size);
  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    const bool first = offset == 0;
    const bool sendShared =
        first ? shared_buffers::offer(ctx, window::arrived(round), in, sendBytes, nullptr, 0)
                    .send.shareable()
              : peers.send[me] != nullptr;
    size_t count = std::min(chunkElems, args.count - offset);
    char* mine = window::area(shared, me, round);
    if (!sendShared) {
      for (int block = 0; block < size; ++block) {
        std::memcpy(mine + block * count * typeSize, in + block * blockBytes + offset * typeSize,
                    count * typeSize);
      }
    }
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
    if (first) {
      WEFT_TRY(
          shared_buffers::reach(ctx, window::arrived(round), in, sendBytes, nullptr, 0, &peers));
      anyShared = peers.anySend();
      if (peers.allSends) chunkElems = count = args.count;  // nothing staged: one round
    }
    for (int index = 0; index < size; ++index) {
      sources[index] = peers.send[index] != nullptr
                           ? peers.send[index] + me * blockBytes + offset * typeSize
                           : window::area(shared, index, round) + me * count * typeSize;
    }
    shared_buffers::foldOwnFirst(ctx, out + offset * typeSize, sources, count);
  }
  // The ranks whose own buffers were read wait for every reader.
  if (anyShared) WEFT_TRY(ctx.publishAndWait(window::kReleased, round));
  return Status::ok();
}

}  // namespace weft
