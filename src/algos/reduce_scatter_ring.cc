// Ring reduce-scatter: n-1 steps in which partial sums travel around the ring, arranged so that
// rank r finishes with block r. Partial sums that are only passing through are staged: each step
// receives its whole block into one of two staging areas (alternating by step), reduces it there
// with this rank's contribution and forwards it from there. A staging area is reused two steps
// later, once its forwards have left; that wait always points to an earlier step, and no receive
// waits on a send, so the ring cannot deadlock however little buffering the transport has (a
// pipeline that reused a slot as soon as its own forward left could: forwards queue behind the
// first step's sends on the same connection). Large blocks are processed in rounds of at most
// kRoundBytes per block, which bounds the staging to 2 x kRoundBytes.
#include <algorithm>
#include <array>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {
namespace {

constexpr size_t kRoundBytes = 2 << 20;

}  // namespace

Status reduceScatterRing(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t typeSize = ctx.typeSize();
  const size_t blockBytes = ctx.blockBytes();
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
  const size_t roundElems = std::max(sliceElems, kRoundBytes / typeSize);
  auto* staging = static_cast<char*>(ctx.scratch(2 * roundElems * typeSize));
  std::array<char*, 2> stage = {staging, staging + roundElems * typeSize};
  auto blockStart = [&](int index) { return in + index * blockBytes; };

  size_t globalStep = 0;  // staging alternates across rounds too
  // The transfers posted while each staging area was last in use ([begin, end) in posting order).
  std::array<std::pair<size_t, size_t>, 2> lastUse{};
  for (size_t roundStart = 0; roundStart < args.count; roundStart += roundElems) {
    const ring::Range round{roundStart, std::min(roundElems, args.count - roundStart)};
    const size_t slices = ring::sliceCount(round.count, sliceElems);
    const char* first = blockStart(ring::reduceScatterSendBlock(rank, n, 0));
    for (size_t j = 0; j < slices; ++j) {
      ring::Range piece = ring::sliceOf(round, sliceElems, j);
      ctx.send(right, first + piece.offset * typeSize, piece.count * typeSize);
    }
    for (int step = 0; step < n - 1; ++step, ++globalStep) {
      char* area = stage[globalStep % 2];
      // The forwards sent from this area two steps ago must have left before it is reused.
      auto& [useBegin, useEnd] = lastUse[globalStep % 2];
      WEFT_TRY(ctx.waitPosted(useBegin, useEnd));
      const size_t firstRecv = ctx.postedCount();
      for (size_t j = 0; j < slices; ++j) {
        ring::Range piece = ring::sliceOf(round, sliceElems, j);
        ctx.recv(left, area + (piece.offset - round.offset) * typeSize, piece.count * typeSize);
      }
      const char* mine = blockStart(ring::reduceScatterRecvBlock(rank, n, step));
      for (size_t j = 0; j < slices; ++j) {
        WEFT_TRY(ctx.wait(ctx.posted(firstRecv + j)));
        ring::Range piece = ring::sliceOf(round, sliceElems, j);
        char* staged = area + (piece.offset - round.offset) * typeSize;
        const char* own = mine + piece.offset * typeSize;
        if (step == n - 2) {
          char* result = out + piece.offset * typeSize;
          ctx.reduce(result, own, staged, piece.count);
          ctx.finish(result, piece.count);
        } else {
          ctx.reduce(staged, own, staged, piece.count);
          ctx.send(right, staged, piece.count * typeSize);
        }
      }
      lastUse[globalStep % 2] = {firstRecv, ctx.postedCount()};
    }
  }
  return ctx.waitAll();
}

}  // namespace weft
