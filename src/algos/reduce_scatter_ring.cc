// Ring reduce-scatter: n-1 steps in which partial sums travel around the ring, arranged so that
// rank r finishes with block r. Partial sums that are only passing through are reduced into the
// slot their slice arrived in and forwarded from there (the receive buffer holds one block only);
// a slot is reused once its forward has left, which always waits on an earlier slice, so the
// pipeline cannot deadlock.
#include <algorithm>
#include <array>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status reduceScatterRing(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t typeSize = ctx.typeSize();
  const size_t blockBytes = args.count * typeSize;
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  if (n == 1) {
    copyUnlessSame(out, in, blockBytes);
    ctx.finish(out, args.count);
    return Status::ok();
  }
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  const size_t sliceElems = ring::sliceElements(ctx.plan().sliceBytes, typeSize);
  const size_t slices = ring::sliceCount(args.count, sliceElems);
  const ring::Range block{0, args.count};
  const size_t depth = static_cast<size_t>(std::clamp(ctx.plan().depth, 1, 16));
  auto* slots = static_cast<char*>(ctx.scratch(depth * sliceElems * typeSize));
  auto blockStart = [&](int index) { return in + index * blockBytes; };

  const char* first = blockStart(ring::reduceScatterSendBlock(rank, n, 0));
  for (size_t j = 0; j < slices; ++j) {
    ring::Range piece = ring::sliceOf(block, sliceElems, j);
    ctx.send(right, first + piece.offset * typeSize, piece.count * typeSize);
  }

  // Slot use is numbered across steps (global slice index g), so reuse always follows the
  // forward of an earlier slice.
  std::array<Xfer*, 16> received{};
  std::array<Xfer*, 16> forwarded{};
  auto slot = [&](size_t g) { return slots + (g % depth) * sliceElems * typeSize; };
  const size_t total = slices * static_cast<size_t>(n - 1);
  auto postRecv = [&](size_t g) -> Status {
    if (forwarded[g % depth] != nullptr) {
      Status sent = ctx.wait(forwarded[g % depth]);
      forwarded[g % depth] = nullptr;
      if (!sent.isOk()) return sent;
    }
    ring::Range piece = ring::sliceOf(block, sliceElems, g % slices);
    received[g % depth] = ctx.recv(left, slot(g), piece.count * typeSize);
    return Status::ok();
  };
  for (size_t g = 0; g < total && g < depth; ++g) WEFT_TRY(postRecv(g));
  for (size_t g = 0; g < total; ++g) {
    const int step = static_cast<int>(g / slices);
    ring::Range piece = ring::sliceOf(block, sliceElems, g % slices);
    const char* mine = blockStart(ring::reduceScatterRecvBlock(rank, n, step)) +
                       piece.offset * typeSize;
    WEFT_TRY(ctx.wait(received[g % depth]));
    if (step == n - 2) {
      char* result = out + piece.offset * typeSize;
      ctx.reduce(result, mine, slot(g), piece.count);
      ctx.finish(result, piece.count);
    } else {
      ctx.reduce(slot(g), mine, slot(g), piece.count);
      forwarded[g % depth] = ctx.send(right, slot(g), piece.count * typeSize);
    }
    if (g + depth < total) WEFT_TRY(postRecv(g + depth));
  }
  return ctx.waitAll();
}

}  // namespace weft
