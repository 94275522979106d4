// Pipelined-chain reduce for large messages: partial sums flow root+n-1 -> ... -> root+1 -> root,
// slice by slice, each rank adding its contribution as a slice passes. A rank reduces into the
// slot the slice arrived in and forwards it from there; a slot is reused only once its forward
// has left, and that wait always points to an earlier slice, so it cannot deadlock.
#include <algorithm>
#include <array>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {

Status reduceChain(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const size_t typeSize = ctx.typeSize();
  const int position = ring::mod(ctx.rank() - args.root, n);  // 0 is the root
  const auto* in = static_cast<const char*>(args.send);
  const size_t sliceElems = ring::sliceElements(ctx.plan().sliceBytes, typeSize);
  const ring::Range all{0, args.count};
  const size_t slices = ring::sliceCount(args.count, sliceElems);
  const int towardRoot = ring::mod(ctx.rank() - 1, n);
  const int fromTail = ring::mod(ctx.rank() + 1, n);

  if (n == 1) {
    copyUnlessSame(args.recv, in, args.count * typeSize);
    ctx.finish(args.recv, args.count);
    return Status::ok();
  }
  if (position == n - 1) {  // the chain's far end only sends its own data
    for (size_t j = 0; j < slices; ++j) {
      ring::Range piece = ring::sliceOf(all, sliceElems, j);
      ctx.send(towardRoot, in + piece.offset * typeSize, piece.count * typeSize);
    }
    return ctx.waitAll();
  }

  const size_t depth = static_cast<size_t>(std::clamp(ctx.plan().depth, 1, 16));
  auto* slots = static_cast<char*>(ctx.scratch(depth * sliceElems * typeSize));
  auto slot = [&](size_t j) { return slots + (j % depth) * sliceElems * typeSize; };
  std::array<Xfer*, 16> received{};
  std::array<Xfer*, 16> forwarded{};
  auto postRecv = [&](size_t j) {
    if (forwarded[j % depth] != nullptr) {
      Status sent = ctx.wait(forwarded[j % depth]);
      forwarded[j % depth] = nullptr;
      if (!sent.isOk()) return sent;
    }
    received[j % depth] = ctx.recv(fromTail, slot(j), ring::sliceOf(all, sliceElems, j).count * typeSize);
    return Status::ok();
  };
  for (size_t j = 0; j < slices && j < depth; ++j) WEFT_TRY(postRecv(j));
  for (size_t j = 0; j < slices; ++j) {
    WEFT_TRY(ctx.wait(received[j % depth]));
    ring::Range piece = ring::sliceOf(all, sliceElems, j);
    const char* mine = in + piece.offset * typeSize;
    if (position == 0) {
      char* result = static_cast<char*>(args.recv) + piece.offset * typeSize;
      ctx.reduce(result, mine, slot(j), piece.count);
      ctx.finish(result, piece.count);
    } else {
      ctx.reduce(slot(j), mine, slot(j), piece.count);
      forwarded[j % depth] = ctx.send(towardRoot, slot(j), piece.count * typeSize);
    }
    if (j + depth < slices) WEFT_TRY(postRecv(j + depth));
  }
  return ctx.waitAll();
}

}  // namespace weft
