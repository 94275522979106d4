// The split all-reduce's two stages inside a node, on the node's shared windows: the same parts
// and owners as the point-to-point stages (allreduce_two_level_split.cc), but each stage is one
// flag round per window area instead of a message from every node-mate to every part's owner.
// Each rank copies its input but its own part into its area, and each owner folds its part of
// the round's chunk straight from all areas (its own from its send buffer) into its receive
// buffer; after the stage among nodes each owner copies its finished part into its area and
// everyone copies every part out.
//
// The rounds depend only on the message and the number of parts, never on the windows of other
// nodes, so nodes on windows and nodes on messages run the same stage among nodes.
#include <algorithm>
#include <cstring>

#include "algos/shared_buffers.h"
#include "algos/shm_window.h"
#include "algos/two_level.h"

namespace weft {

Status two_level::splitReduceOnWindows(AlgoContext& node, int parts) {
  const CollArgs& args = node.args();
  SharedWindows& shared = *node.windows();
  const size_t typeSize = node.typeSize();
  const int me = shared.localIndex();
  const auto* in = static_cast<const char*>(args.send);
  auto* out = static_cast<char*>(args.recv);
  const ring::Range mine = me < parts ? ring::blockOf(args.count, parts, me) : ring::Range{};
  const size_t chunkElems = std::max<size_t>(1, window::areaBytes(shared) / typeSize);
  std::vector<const char*> sources(shared.localSize());
  for (size_t offset = 0; offset < args.count; offset += chunkElems) {
    const size_t count = std::min(chunkElems, args.count - offset);
    const uint64_t round = node.nextWindowRound();
    WEFT_TRY(window::claimArea(node, round));
    // This rank's own part of the chunk, [from, to), is read from its send buffer: only the
    // rest goes into its area, at the same offsets.
    const size_t from = std::clamp(mine.offset, offset, offset + count);
    const size_t to = std::clamp(mine.offset + mine.count, from, offset + count);
    char* staged = window::area(shared, me, round);
    std::memcpy(staged, in + offset * typeSize, (from - offset) * typeSize);
    std::memcpy(staged + (to - offset) * typeSize, in + to * typeSize,
                (offset + count - to) * typeSize);
    WEFT_TRY(node.publishAndWait(window::arrived(round), round));
    if (from == to) continue;
    for (int index = 0; index < shared.localSize(); ++index) {
      sources[index] = window::area(shared, index, round) + (from - offset) * typeSize;
    }
    sources[me] = in + from * typeSize;  // in place, each element is read before it is written
    shared_buffers::foldOwnFirst(node, out + from * typeSize, sources, to - from);
  }
  return Status::ok();
}

Status two_level::splitGatherOnWindows(AlgoContext& node, int parts) {
  const CollArgs& args = node.args();
  SharedWindows& shared = *node.windows();
  const size_t typeSize = node.typeSize();
  const int me = shared.localIndex();
  auto* out = static_cast<char*>(args.recv);
  const size_t sliceElems = std::max<size_t>(1, window::areaBytes(shared) / typeSize);
  const size_t longest = ring::blockOf(args.count, parts, 0).count;  // the first are the longest
  auto sliceOfPart = [&](int q, size_t offset) {
    const ring::Range part = ring::blockOf(args.count, parts, q);
    const size_t begin = std::min(offset, part.count);
    return ring::Range{part.offset + begin, std::min(sliceElems, part.count - begin)};
  };
  for (size_t offset = 0; offset < longest; offset += sliceElems) {
    const uint64_t round = node.nextWindowRound();
    WEFT_TRY(window::claimArea(node, round));
    if (me < parts) {
      const ring::Range slice = sliceOfPart(me, offset);
      std::memcpy(window::area(shared, me, round), out + slice.offset * typeSize,
                  slice.count * typeSize);
    }
    WEFT_TRY(node.publishAndWait(window::arrived(round), round));
    for (int q = 0; q < parts; ++q) {
      if (q == me) continue;
      const ring::Range slice = sliceOfPart(q, offset);
      std::memcpy(out + slice.offset * typeSize, window::area(shared, q, round),
                  slice.count * typeSize);
    }
  }
  return Status::ok();
}

}  // namespace weft
