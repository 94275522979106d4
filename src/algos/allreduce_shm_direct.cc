// Shared-memory all-reduce for larger messages, in rounds of one window area: every rank copies
// its chunk into its area; each rank then reduces its 1/P share of the chunk straight from all
// areas (in place, into its own area) and raises a second flag; finally every rank copies the
// reduced shares into its output. Each element is read from shared memory by exactly one
// reducer, and each rank moves about 3 chunks of memory per chunk, whatever P is.
//
// Where every rank's buffers come from weftMemAlloc (algos/shared_buffers.h) nothing is staged:
// each rank reduces its share of the whole message straight from the P send buffers and writes
// it into all P receive buffers, then all wait until every share is written. Each rank reads S
// and writes S bytes (S the message), the least any all-reduce moves. A rank whose send buffer
// alone is shareable skips its copy in.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/shared_buffers.h"
#include "algos/shm_window.h"

namespace weft {
namespace {

Status allreduceZeroCopy(AlgoContext& ctx, uint64_t round, const shared_buffers::Reached& peers) {
  const CollArgs& args = ctx.args();
  const size_t typeSize = ctx.typeSize();
  const int size = ctx.windows()->localSize();
  const ring::Range share = ring::blockOf(args.count, size, ctx.windows()->localIndex());
  const size_t at = share.offset * typeSize;
  std::vector<const char*> sources(size);
  std::vector<char*> outputs(size);
  for (int index = 0; index < size; ++index) {
    sources[index] = peers.send[index] + at;
    outputs[index] = peers.recv[index] + at;
  }
  shared_buffers::foldOwnFirstStreaming(ctx, outputs, sources, share.count);
  // Every share written everywhere: nobody reads or writes another rank's buffers any more.
  return ctx.publishAndWait(window::kReduced, round);
}

}  // namespace

Status allreduceShmDirect(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  const int me = shared.localIndex();
  const size_t chunkElems = window::areaBytes(shared) / typeSize;
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  const size_t bytes = ctx.blockBytes();

  shared_buffers::Reached peers;
  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t count = std::min(chunkElems, args.count - offset);
    const uint64_t round = ctx.nextWindowRound();
    WEFT_TRY(window::claimArea(ctx, round));
    const bool first = offset == 0;
    const bool sendShared =
        first ? shared_buffers::offer(ctx, window::arrived(round), in, bytes, out, bytes)
                    .send.shareable()
              : peers.send[me] != nullptr;
    if (!sendShared) {
      std::memcpy(window::area(shared, me, round), in + offset * typeSize, count * typeSize);
    }
    WEFT_TRY(ctx.publishAndWait(window::arrived(round), round));
    if (first) {
      WEFT_TRY(shared_buffers::reach(ctx, window::arrived(round), in, bytes, out, bytes, &peers));
      if (peers.all) return allreduceZeroCopy(ctx, round, peers);
    }

    shared_buffers::reduceShareOfChunk(ctx, peers, round, offset, count);
    WEFT_TRY(ctx.publishAndWait(window::kReduced, round));
    window::copySharesOut(ctx, round, count, out + offset * typeSize);
  }
  return Status::ok();
}

}  // namespace weft
