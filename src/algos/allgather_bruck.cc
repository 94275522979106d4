// Bruck's all-gather: ceil(log2 n) rounds for any n, no fold. Rank r works in a scratch buffer
// rotated by r, whose slot i holds the block of rank (r + i) mod n: it starts with its own block
// in slot 0, and in the round of distance d = 1, 2, 4, ... it sends its first min(d, n - d)
// slots to rank r - d and receives as many from rank r + d into slots [d, 2d). After the last
// round all n slots are filled and one rotation (two copies) puts them in rank order.
//
// Cost: ceil(log2 n) alpha + (n-1)/n S beta, plus copying S locally. The rotated buffer is what
// keeps every round a single contiguous message each way, which matters where Bruck wins:
// small blocks, where latency dominates and the copies are cheap.
#include <algorithm>
#include <cstring>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {
namespace {

// Round of distance `distance`: slots [0, k) go to rank - distance, slots [distance,
// distance + k) come from rank + distance.
Status bruckRound(AlgoContext& ctx, char* rotated, size_t blockBytes, int distance) {
  const int n = ctx.nranks();
  const int k = std::min(distance, n - distance);
  const size_t first = ctx.postedCount();
  ctx.send(ring::mod(ctx.rank() - distance, n), rotated, k * blockBytes);
  ctx.recv(ring::mod(ctx.rank() + distance, n), rotated + distance * blockBytes, k * blockBytes);
  // The next round sends what this one received.
  return ctx.waitPosted(first, ctx.postedCount());
}

// Slot i of the rotated buffer belongs to rank (rank + i) mod n; slot 0 is already in place.
void unrotate(char* out, const char* rotated, int rank, int n, size_t blockBytes) {
  std::memcpy(out + (rank + 1) * blockBytes, rotated + blockBytes, (n - rank - 1) * blockBytes);
  std::memcpy(out, rotated + (n - rank) * blockBytes, rank * blockBytes);
}

}  // namespace

Status allgatherBruck(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t blockBytes = ctx.blockBytes();
  auto* out = static_cast<char*>(args.recv);
  copyUnlessSame(out + rank * blockBytes, args.send, blockBytes);
  // Every rank has the same count, so all agree to send nothing.
  if (n == 1 || blockBytes == 0) return Status::ok();

  auto* rotated = static_cast<char*>(ctx.scratch(n * blockBytes));
  std::memcpy(rotated, out + rank * blockBytes, blockBytes);
  for (int distance = 1; distance < n; distance *= 2) {
    WEFT_TRY(bruckRound(ctx, rotated, blockBytes, distance));
  }
  unrotate(out, rotated, rank, n, blockBytes);
  return Status::ok();
}

}  // namespace weft
