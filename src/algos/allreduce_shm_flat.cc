// Shared-memory all-reduce for small messages: every rank copies its input into its window and
// raises a flag; once all flags are up, every rank reduces all inputs itself, in the same rank
// order, so all get bit-identical results. One round of flags and no system call while the
// peers are running: the latency is a few cache-line transfers.
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status allreduceShmFlat(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t bytes = args.count * ctx.typeSize();
  const int size = shared.localSize();
  const int me = shared.localIndex();
  if (bytes > window::areaBytes(shared)) {
    return internalError("shm_flat all-reduce of " + std::to_string(bytes) +
                         " bytes exceeds the window area");
  }
  const uint64_t round = ctx.nextWindowRound();
  WEFT_TRY(window::claimArea(ctx, round));
  std::memcpy(window::area(shared, me, round), args.send, bytes);
  WEFT_TRY(ctx.publishAndWait(window::kArrived, round));

  auto* out = static_cast<char*>(args.recv);
  if (size == 1) {
    std::memcpy(out, window::area(shared, 0, round), bytes);
  } else {
    ctx.reduce(out, window::area(shared, 0, round), window::area(shared, 1, round), args.count);
    for (int index = 2; index < size; ++index) {
      ctx.reduce(out, out, window::area(shared, index, round), args.count);
    }
  }
  ctx.finish(out, args.count);
  return Status::ok();
}

}  // namespace weft
