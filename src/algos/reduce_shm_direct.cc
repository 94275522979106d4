// Shared-memory reduce: as the direct all-reduce (each rank reduces its 1/P share of every chunk
// straight from all window areas), but only the root copies the reduced shares out.
//
// A rank whose send buffer is from weftMemAlloc (algos/shared_buffers.h) copies nothing in: the
// others reduce its share straight from its buffer, and it returns only once every share of the
// last round is reduced (nobody reads its buffer any more).
//
// Small messages take one flag round in which only the root waits: the others copy their input
// in (into the flag's cache line up to 56 bytes) and return, and the root reduces all inputs
// itself. Below kRootReducesBytes a second round of flags, with every rank waiting for every
// other, costs more than the root's reducing P small inputs alone; the two-level algorithms'
// node stage (two_level_shm) is the case this serves, where the node-mates then only wait once,
// for the broadcast of the result.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shared_buffers.h"
#include "algos/shm_window.h"

namespace weft {
namespace {

constexpr size_t kRootReducesBytes = 16 * 1024;

Status reduceAtRoot(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const int me = shared.localIndex();
  const uint64_t round = ctx.nextWindowRound();
  const int flag = window::arrived(round);
  WEFT_TRY(window::claimArea(ctx, round));
  // The root's input goes in too: in place, the reduction overwrites it before its turn.
  std::memcpy(window::roundInput(shared, me, round, ctx.blockBytes()), args.send, ctx.blockBytes());
  if (me != args.root) {
    shared.publish(flag, round);
    return Status::ok();
  }
  WEFT_TRY(ctx.publishAndWait(flag, round));
  window::reduceRoundInputs(ctx, round, args.recv);
  return Status::ok();
}

}  // namespace

Status reduceShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int me = shared.localIndex();
  const bool isRoot = me == args.root;
  const size_t chunkElems = window::areaBytes(shared) / typeSize;
  const size_t bytes = ctx.blockBytes();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  if (bytes <= std::min(kRootReducesBytes, window::areaBytes(shared)) && shared.localSize() > 1) {
    return reduceAtRoot(ctx);
  }

  shared_buffers::Reached peers;
  bool anyShared = false;
  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t count = std::min(chunkElems, args.count - offset);
    const uint64_t round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    const bool first = offset == 0;
    const bool sendShared =
        first ? shared_buffers::offer(ctx, window::arrived(round), in, bytes, nullptr, 0)
                    .send.shareable()
              : peers.send[me] != nullptr;
    if (!sendShared) {
      std::memcpy(window::area(shared, me, round), in + offset * typeSize, count * typeSize);
    }
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
    if (first) {
      WEFT_TRY(shared_buffers::reach(ctx, window::arrived(round), in, bytes, nullptr, 0, &peers));
      anyShared = peers.anySend();
    }
    shared_buffers::reduceShareOfChunk(ctx, peers, round, offset, count);
    shared.publish(window::kReduced, round);
    const bool lastRound = offset + count >= args.count;
    if (!isRoot && !(anyShared && lastRound)) continue;
    WEFT_TRY(ctx.waitForFlags(window::kReduced, round));
    if (isRoot) window::copySharesOut(ctx, round, count, out + offset * typeSize);
  }
  return Status::ok();
}

}  // namespace weft
