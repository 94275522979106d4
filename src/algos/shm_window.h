// How the direct algorithms use the shared windows. Each rank's window is split in two halves
// ("areas") that alternate by round, so that a rank can fill its next area while slower peers
// still read the previous one. The "arrived" flag alternates the same way (flag arrived(r) is
// flag r % 2, so each of the two only grows), and its cache line can carry a message of up to
// kFlagPayloadBytes itself. It carries one invariant for every algorithm: a rank publishes
// arrived = r only after it has finished reading everything of rounds before r. So before a
// rank writes its area (or flag payload) for round r it waits until every local rank has
// published arrived >= r - 1 (they are done with round r - 2, the last user of the same half);
// in most algorithms that already holds by the time it gets there, and the wait is one pass
// over flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cstring>

#include "algos/algo_context.h"
#include "algos/ring_math.h"
#include "transports/shared_windows.h"

namespace weft::window {

// Data for round r is in the area (or flag payload); done reading older rounds.
inline int arrived(uint64_t round) {
  return static_cast<int>(round % 2);
}
constexpr int kReduced = 2;  // this rank's share of the round is reduced, in its area
// Done reading the other ranks' own buffers (the zero-copy paths, algos/shared_buffers.h): they
// may return and let their user reuse them.
constexpr int kReleased = 3;

inline size_t areaBytes(const SharedWindows& windows) {
  return windows.windowBytes() / 2;
}

inline char* area(SharedWindows& windows, int index, uint64_t round) {
  return windows.window(index) + (round % 2) * areaBytes(windows);
}

// Waits until this rank may overwrite its area for `round` (see above).
inline Status claimArea(AlgoContext& ctx, uint64_t round) {
  return round < 2 ? Status::ok() : ctx.waitForFlags(arrived(round - 1), round - 1);
}

// Where local rank `index` puts its input for a one-round algorithm: up to kFlagPayloadBytes in
// its flag's own cache line (a peer's one miss on the flag then brings the data too), else its
// area.
inline char* roundInput(SharedWindows& windows, int index, uint64_t round, size_t bytes) {
  return bytes <= SharedWindows::kFlagPayloadBytes ? windows.flagPayload(index, arrived(round))
                                                   : area(windows, index, round);
}

// Reduces every local rank's round input into `out`, in rank order: the same bits on whichever
// rank does it. This rank's own input is read from its send buffer, which holds the same bytes:
// its copy in the window was just read by the peers, and reading it back there costs a cache
// miss (0.57 -> 0.51 us for the 2-rank 8-byte all-reduce on an AMD EPYC). In place, a rank past
// the first two reads the window copy, since the reduction has overwritten its buffer by then.
inline void reduceRoundInputs(AlgoContext& ctx, uint64_t round, void* out) {
  SharedWindows& shared = *ctx.windows();
  const size_t bytes = ctx.blockBytes();
  const size_t count = ctx.args().count;
  if (shared.localSize() == 1) {
    std::memcpy(out, roundInput(shared, 0, round, bytes), bytes);
  } else {
    const int me = shared.localIndex();
    const void* mine = ctx.args().send;
    auto input = [&](int index) -> const void* {
      const bool untouched = index < 2 || mine != out;
      return index == me && untouched ? mine : roundInput(shared, index, round, bytes);
    };
    ctx.reduce(out, input(0), input(1), count);
    for (int index = 2; index < shared.localSize(); ++index) {
      ctx.reduce(out, out, input(index), count);
    }
  }
  ctx.finish(out, count);
}

// Copies every rank's reduced share of the round's chunk to `out` (once all are reduced).
inline void copySharesOut(AlgoContext& ctx, uint64_t round, size_t count, char* out) {
  SharedWindows& shared = *ctx.windows();
  const size_t typeSize = ctx.typeSize();
  for (int index = 0; index < shared.localSize(); ++index) {
    const ring::Range part = ring::blockOf(count, shared.localSize(), index);
    std::memcpy(out + part.offset * typeSize, area(shared, index, round) + part.offset * typeSize,
                part.count * typeSize);
  }
}

// Whether the direct algorithms apply: every rank of the communicator shares this host's
// windows.
inline bool available(const AlgoContext& ctx) {
  return ctx.windows() != nullptr && ctx.windows()->localSize() == ctx.nranks();
}

}  // namespace weft::window
