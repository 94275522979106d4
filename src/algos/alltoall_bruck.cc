// Bruck's all-to-all: ceil(log2 n) rounds for any n, where pairwise exchange takes n-1. Rank r
// works in a scratch buffer rotated by r, whose slot i starts with the block bound for rank
// (r + i) mod n. In the round of distance d = 1, 2, 4, ... every slot whose index has bit d set
// moves d ranks on, to the same slot of rank r + d; after the last round slot i of rank r holds
// the block that rank r - i sent to r, and one pass puts the slots in rank order.
//
// Cost: ceil(log2 n) alpha + about n/2 blocks per round, so log2(n)/2 times the bytes that
// pairwise exchange moves, plus packing each round's slots into one message. It wins where
// latency dominates: small blocks, many ranks.
#include <cstring>

#include "algos/algorithms.h"
#include "algos/ring_math.h"

namespace weft {
namespace {

// Slots whose index has bit `distance` set.
int slotsMoving(int n, int distance) {
  int moving = 0;
  for (int slot = distance; slot < n; ++slot) moving += (slot & distance) != 0;
  return moving;
}

}  // namespace

Status alltoallBruck(AlgoContext& ctx) {
  const CollArgs& args = ctx.args();
  const int n = ctx.nranks();
  const int rank = ctx.rank();
  const size_t blockBytes = ctx.blockBytes();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  if (n == 1 || blockBytes == 0) {
    copyUnlessSame(out, in, blockBytes * static_cast<size_t>(n));
    return Status::ok();
  }

  const size_t movingMost = static_cast<size_t>(n / 2 + 1) * blockBytes;
  auto* rotated = static_cast<char*>(ctx.scratch(n * blockBytes + 2 * movingMost));
  char* outgoing = rotated + n * blockBytes;
  char* incoming = outgoing + movingMost;
  // Slot i <- the block for rank + i: the input from `rank` on, then its start.
  std::memcpy(rotated, in + rank * blockBytes, (n - rank) * blockBytes);
  std::memcpy(rotated + (n - rank) * blockBytes, in, rank * blockBytes);

  for (int distance = 1; distance < n; distance *= 2) {
    char* packed = outgoing;
    for (int slot = distance; slot < n; ++slot) {
      if ((slot & distance) == 0) continue;
      std::memcpy(packed, rotated + slot * blockBytes, blockBytes);
      packed += blockBytes;
    }
    const size_t bytes = static_cast<size_t>(slotsMoving(n, distance)) * blockBytes;
    const size_t first = ctx.postedCount();
    ctx.send(ring::mod(rank + distance, n), outgoing, bytes);
    ctx.recv(ring::mod(rank - distance, n), incoming, bytes);
    WEFT_TRY(ctx.waitPosted(first, ctx.postedCount()));
    const char* unpacked = incoming;
    for (int slot = distance; slot < n; ++slot) {
      if ((slot & distance) == 0) continue;
      std::memcpy(rotated + slot * blockBytes, unpacked, blockBytes);
      unpacked += blockBytes;
    }
  }
  // Slot i came from rank - i.
  for (int slot = 0; slot < n; ++slot) {
    std::memcpy(out + ring::mod(rank - slot, n) * blockBytes, rotated + slot * blockBytes,
                blockBytes);
  }
  return Status::ok();
}

}  // namespace weft
