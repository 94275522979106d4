// Shared-memory all-reduce for small messages: every rank copies its input into its window and
// raises a flag; once all flags are up, every rank reduces all inputs itself, in the same rank
// order, so all get bit-identical results. One round of flags and no system call while the
// peers are running. Up to 56 bytes travel in the flag's own cache line, so that a rank's one
// cache miss on a peer's flag also brings the peer's data.
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shm_window.h"

namespace weft {

Status allreduceShmFlat(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t bytes = ctx.blockBytes();
  const int me = shared.localIndex();
  if (bytes > window::areaBytes(shared)) {
    return internalError("shm_flat all-reduce of " + std::to_string(bytes) +
                         " bytes exceeds the window area");
  }
  const uint64_t round = ctx.nextWindowRound();
  WEFT_TRY(window::claimArea(ctx, round));
  std::memcpy(window::roundInput(shared, me, round, bytes), args.send, bytes);
  WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
  window::reduceRoundInputs(ctx, round, args.recv);
  return Status::ok();
}

}  // namespace weft
