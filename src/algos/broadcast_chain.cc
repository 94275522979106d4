// Pipelined-chain broadcast for large messages: root -> root+1 -> ... , the message cut into
// slices that each rank forwards as soon as it has them, so every link is busy at once and the
// time approaches one message transfer plus (n-2) slices.
#include <algorithm>
#include <array>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status broadcastChain(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const size_t typeSize = ctx.typeSize();
  const int position = ring::mod(ctx.rank() - args.root, n);
  const int next = position + 1 < n ? ring::mod(ctx.rank() + 1, n) : -1;
  const int prev = ring::mod(ctx.rank() - 1, n);
  auto* out = static_cast<char*>(args.recv);
  const size_t sliceElems = ring::sliceElements(ctx.plan().sliceBytes, typeSize);
  const ring::Range all{0, args.count};
  const size_t slices = ring::sliceCount(args.count, sliceElems);

  if (position == 0) {
    copyUnlessSame(out, args.send, ctx.blockBytes());
    for (size_t j = 0; next >= 0 && j < slices; ++j) {
      ring::Range piece = ring::sliceOf(all, sliceElems, j);
      ctx.send(next, out + piece.offset * typeSize, piece.count * typeSize);
    }
    return ctx.waitAll();
  }
  // Receives land directly in the user's buffer; a window of them stays posted ahead.
  const size_t depth = static_cast<size_t>(std::clamp(ctx.plan().depth, 1, 16));
  std::array<Xfer*, 16> inflight{};
  auto postRecv = [&](size_t j) {
    ring::Range piece = ring::sliceOf(all, sliceElems, j);
    inflight[j % depth] = ctx.recv(prev, out + piece.offset * typeSize, piece.count * typeSize);
  };
  for (size_t j = 0; j < slices && j < depth; ++j) postRecv(j);
  for (size_t j = 0; j < slices; ++j) {
    WEFT_TRY(ctx.wait(inflight[j % depth]));
    if (j + depth < slices) postRecv(j + depth);
    if (next >= 0) {
      ring::Range piece = ring::sliceOf(all, sliceElems, j);
      ctx.send(next, out + piece.offset * typeSize, piece.count * typeSize);
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
