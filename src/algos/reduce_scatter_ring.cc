// Ring reduce-scatter: n-1 steps in which partial sums travel around the ring, arranged so that
// rank r finishes with block r. Partial sums that are only passing through are reduced in the
// slot their slice arrived in and forwarded from there (ForwardingSlots), since the receive
// buffer holds one block only.
#include "algos/algorithms.h"
#include "algos/forwarding_slots.h"
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
  auto blockStart = [&](int index) { return in + index * blockBytes; };

  const char* first = blockStart(ring::reduceScatterSendBlock(rank, n, 0));
  for (size_t j = 0; j < slices; ++j) {
    ring::Range piece = ring::sliceOf(block, sliceElems, j);
    ctx.send(right, first + piece.offset * typeSize, piece.count * typeSize);
  }

  // Slices are numbered across steps (g), as ForwardingSlots requires.
  ForwardingSlots slots(ctx, sliceElems * typeSize);
  const size_t total = slices * static_cast<size_t>(n - 1);
  auto sliceBytes = [&](size_t g) {
    return ring::sliceOf(block, sliceElems, g % slices).count * typeSize;
  };
  for (size_t g = 0; g < total && g < slots.depth(); ++g) {
    WEFT_TRY(slots.receive(g, left, sliceBytes(g)));
  }
  for (size_t g = 0; g < total; ++g) {
    const int step = static_cast<int>(g / slices);
    ring::Range piece = ring::sliceOf(block, sliceElems, g % slices);
    const char* mine = blockStart(ring::reduceScatterRecvBlock(rank, n, step)) +
                       piece.offset * typeSize;
    WEFT_TRY(slots.waitReceived(g));
    if (step == n - 2) {
      char* result = out + piece.offset * typeSize;
      ctx.reduce(result, mine, slots.slot(g), piece.count);
      ctx.finish(result, piece.count);
    } else {
      ctx.reduce(slots.slot(g), mine, slots.slot(g), piece.count);
      slots.forward(g, right, piece.count * typeSize);
    }
    if (g + slots.depth() < total) {
      WEFT_TRY(slots.receive(g + slots.depth(), left, sliceBytes(g + slots.depth())));
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
