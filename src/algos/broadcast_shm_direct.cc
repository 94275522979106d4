// Shared-memory broadcast: the root copies each chunk into its window area and raises its flag;
// every other rank copies the chunk out and raises its own flag to say it is done reading.
//
// A root whose send buffer is from weftMemAlloc (algos/shared_buffers.h) copies nothing in: the
// others copy the whole message straight from its buffer in one round, and the root returns
// once all have said they are done reading.
//
// Up to 56 bytes the message travels in the root's flag line (a reader's one cache miss on the
// flag brings the data too), and no rank looks for shared buffers: there is nothing to save.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shared_buffers.h"
#include "algos/shm_window.h"

namespace weft {

Status broadcastShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int root = args.root;  // the whole communicator is local: local index == rank
  const bool isRoot = shared.localIndex() == root;
  const size_t chunkElems = window::areaBytes(shared) / typeSize;
  const size_t bytes = ctx.blockBytes();
  auto* out = static_cast<char*>(args.recv);
  if (isRoot) copyUnlessSame(out, args.send, bytes);
  if (bytes <= SharedWindows::kFlagPayloadBytes) {
    const uint64_t round = ctx.nextWindowRound();
    const int flag = window::arrived(round);
    if (isRoot) {
      WEFT_TRY(window::claimArea(ctx, round));
      std::memcpy(shared.flagPayload(root, flag), out, bytes);
    } else {
      WEFT_TRY(ctx.waitForFlags(flag, round, root));
      std::memcpy(out, shared.flagPayload(root, flag), bytes);
    }
    shared.publish(flag, round);  // the root: data ready; the others: done reading
    return Status::ok();
  }
  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t chunkBytes = std::min(chunkElems, args.count - offset) * typeSize;
    const uint64_t round = ctx.nextWindowRound();
    const int flag = window::arrived(round);
    if (isRoot) {
      WEFT_TRY(window::claimArea(ctx, round));
      const bool whole =
          offset == 0 &&
          shared_buffers::offer(ctx, flag, args.send, bytes, nullptr, 0).send.shareable();
      if (!whole)
        std::memcpy(window::area(shared, root, round), out + offset * typeSize, chunkBytes);
      shared.publish(flag, round);
      if (whole) return ctx.waitForFlags(flag, round);
    } else {
      WEFT_TRY(ctx.waitForFlags(flag, round, root));
      const char* whole = nullptr;
      if (offset == 0) WEFT_TRY(shared_buffers::reachSend(ctx, flag, root, bytes, &whole));
      if (whole != nullptr) {
        std::memcpy(out, whole, bytes);
        shared.publish(flag, round);
        return Status::ok();
      }
      std::memcpy(out + offset * typeSize, window::area(shared, root, round), chunkBytes);
      shared.publish(flag, round);
    }
  }
  return Status::ok();
}

}  // namespace weft
