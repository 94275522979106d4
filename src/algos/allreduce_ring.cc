// Ring all-reduce: a reduce-scatter then an all-gather around the ring, 2(n-1) steps, each rank
// sending 2(n-1)/n of the buffer (bandwidth-optimal). Each block is cut into slices that are
// pipelined: a slice is forwarded as soon as it has been received (and reduced), so the steps
// overlap instead of running one after another. Intermediate sums live in the receive buffer.
// Out of place, incoming slices land straight in the receive buffer too and are reduced there
// (each output element is then written where it was just received, which costs the memory
// system less than writing a third buffer); in place, the receive buffer still holds this rank's
// own contribution, so they are staged in a window of `depth` slices of scratch.
#include <array>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status allreduceRing(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t typeSize = ctx.typeSize();
  auto* out = static_cast<char*>(args.recv);
  const auto* in = static_cast<const char*>(args.send);
  if (n == 1) {
    copyUnlessSame(out, in, ctx.blockBytes());
    ctx.finish(out, args.count);
    return Status::ok();
  }
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  const size_t sliceElems = ring::sliceElements(ctx.plan().sliceBytes, typeSize);
  const int depth = std::clamp(ctx.plan().depth, 1, 16);
  const bool stage = in == out;
  auto* slots = stage ? static_cast<char*>(ctx.scratch(depth * sliceElems * typeSize)) : nullptr;
  auto slot = [&](size_t j) { return slots + (j % depth) * sliceElems * typeSize; };

  const ring::Range own = ring::blockOf(args.count, n, rank);
  for (size_t j = 0; j < ring::sliceCount(own.count, sliceElems); ++j) {
    ring::Range piece = ring::sliceOf(own, sliceElems, j);
    ctx.send(right, in + piece.offset * typeSize, piece.count * typeSize);
  }

  const int steps = 2 * (n - 1);
  std::array<Xfer*, 16> inflight{};
  for (int step = 0; step < steps; ++step) {
    const bool reducing = step < n - 1;
    const ring::Range block = ring::blockOf(args.count, n, ring::allreduceRecvBlock(rank, n, step));
    const size_t slices = ring::sliceCount(block.count, sliceElems);
    auto postRecv = [&](size_t j) {
      ring::Range piece = ring::sliceOf(block, sliceElems, j);
      void* target = reducing && stage ? slot(j) : out + piece.offset * typeSize;
      inflight[j % depth] = ctx.recv(left, target, piece.count * typeSize);
    };
    for (size_t j = 0; j < slices && j < static_cast<size_t>(depth); ++j) postRecv(j);
    for (size_t j = 0; j < slices; ++j) {
      WEFT_TRY(ctx.wait(inflight[j % depth]));
      ring::Range piece = ring::sliceOf(block, sliceElems, j);
      char* result = out + piece.offset * typeSize;
      if (reducing) {
        ctx.reduce(result, in + piece.offset * typeSize, stage ? slot(j) : result, piece.count);
        if (step == n - 2) ctx.finish(result, piece.count);
      }
      if (j + depth < slices) postRecv(j + depth);
      if (step + 1 < steps) ctx.send(right, result, piece.count * typeSize);
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
