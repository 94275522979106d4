// Ring all-gather: n-1 steps; at each, a rank forwards to its right the block it received from
// its left at the previous step. Blocks are sliced and forwarded slice by slice, and every
// receive lands directly in the user's buffer.
#include <algorithm>
#include <array>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status allgatherRing(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t typeSize = ctx.typeSize();
  const size_t blockBytes = ctx.blockBytes();
  auto* out = static_cast<char*>(args.recv);
  copyUnlessSame(out + rank * blockBytes, args.send, blockBytes);
  if (n == 1) return Status::ok();

  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  const size_t sliceElems = ring::sliceElements(ctx.plan().sliceBytes, typeSize);
  const size_t slices = ring::sliceCount(args.count, sliceElems);
  const ring::Range block{0, args.count};
  const size_t depth = static_cast<size_t>(std::clamp(ctx.plan().depth, 1, 16));
  auto blockStart = [&](int index) { return out + index * blockBytes; };

  for (size_t j = 0; j < slices; ++j) {
    ring::Range piece = ring::sliceOf(block, sliceElems, j);
    ctx.send(right, blockStart(rank) + piece.offset * typeSize, piece.count * typeSize);
  }
  std::array<Xfer*, 16> inflight{};
  for (int step = 0; step < n - 1; ++step) {
    char* target = blockStart(ring::allgatherRecvBlock(rank, n, step));
    auto postRecv = [&](size_t j) {
      ring::Range piece = ring::sliceOf(block, sliceElems, j);
      inflight[j % depth] =
          ctx.recv(left, target + piece.offset * typeSize, piece.count * typeSize);
    };
    for (size_t j = 0; j < slices && j < depth; ++j) postRecv(j);
    for (size_t j = 0; j < slices; ++j) {
      WEFT_TRY(ctx.wait(inflight[j % depth]));
      if (j + depth < slices) postRecv(j + depth);
      if (step + 1 < n - 1) {
        ring::Range piece = ring::sliceOf(block, sliceElems, j);
        ctx.send(right, target + piece.offset * typeSize, piece.count * typeSize);
      }
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
