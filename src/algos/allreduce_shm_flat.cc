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
  const int size = shared.localSize();
  const int me = shared.localIndex();
  if (bytes > window::areaBytes(shared)) {
    return internalError("shm_flat all-reduce of " + std::to_string(bytes) +
                         " bytes exceeds the window area");
  }
  const uint64_t round = ctx.nextWindowRound();
  const int flag = window::arrived(round);
  const bool inFlagLine = bytes <= SharedWindows::kFlagPayloadBytes;
  auto input = [&](int index) {
    return inFlagLine ? shared.flagPayload(index, flag) : window::area(shared, index, round);
  };
  WEFT_TRY(window::claimArea(ctx, round));
  std::memcpy(input(me), args.send, bytes);
  WEFT_TRY(ctx.publishAndWait(flag, round));

  auto* out = static_cast<char*>(args.recv);
  if (size == 1) {
    std::memcpy(out, input(0), bytes);
  } else {
    ctx.reduce(out, input(0), input(1), args.count);
    for (int index = 2; index < size; ++index) ctx.reduce(out, out, input(index), args.count);
  }
  ctx.finish(out, args.count);
  return Status::ok();
}

}  // namespace weft
