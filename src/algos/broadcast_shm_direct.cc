// Shared-memory broadcast: the root copies each chunk into its window area and raises its flag;
// every other rank copies the chunk out and raises its own flag to say it is done reading.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status broadcastShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int root = args.root;  // the whole communicator is local: local index == rank
  const bool isRoot = shared.localIndex() == root;
  const size_t chunkElems = window::areaBytes(shared) / typeSize;
  auto* out = static_cast<char*>(args.recv);
  if (isRoot) copyUnlessSame(out, args.send, ctx.blockBytes());

  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t bytes = std::min(chunkElems, args.count - offset) * typeSize;
    const uint64_t round = ctx.nextWindowRound();
    if (isRoot) {
      WEFT_TRY(window::claimArea(ctx, round));
      std::memcpy(window::area(shared, root, round), out + offset * typeSize, bytes);
      shared.publish(window::arrived(round), round);
    } else {
      WEFT_TRY(ctx.waitForFlags(window::arrived(round), round, root));
      std::memcpy(out + offset * typeSize, window::area(shared, root, round), bytes);
      shared.publish(window::arrived(round), round);
    }
  }
  return Status::ok();
}

}  // namespace weft
