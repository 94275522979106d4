// Pipelined-chain reduce for large messages: partial sums flow root+n-1 -> ... -> root+1 -> root,
// slice by slice, each rank adding its contribution as a slice passes (reduced in the slot it
// arrived in and forwarded from there: ForwardingSlots).
#include "algos/algorithms.h"
#include "algos/forwarding_slots.h"
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
    copyUnlessSame(args.recv, in, ctx.blockBytes());
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

  ForwardingSlots slots(ctx, sliceElems * typeSize);
  auto sliceBytes = [&](size_t j) { return ring::sliceOf(all, sliceElems, j).count * typeSize; };
  for (size_t j = 0; j < slices && j < slots.depth(); ++j) {
    WEFT_TRY(slots.receive(j, fromTail, sliceBytes(j)));
  }
  for (size_t j = 0; j < slices; ++j) {
    WEFT_TRY(slots.waitReceived(j));
    ring::Range piece = ring::sliceOf(all, sliceElems, j);
    const char* mine = in + piece.offset * typeSize;
    if (position == 0) {
      char* result = static_cast<char*>(args.recv) + piece.offset * typeSize;
      ctx.reduce(result, mine, slots.slot(j), piece.count);
      ctx.finish(result, piece.count);
    } else {
      ctx.reduce(slots.slot(j), mine, slots.slot(j), piece.count);
      slots.forward(j, towardRoot, piece.count * typeSize);
    }
    if (j + slots.depth() < slices) {
      WEFT_TRY(slots.receive(j + slots.depth(), fromTail, sliceBytes(j + slots.depth())));
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
