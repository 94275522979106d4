// The zero-copy side of the direct algorithms: where every rank of the host passes buffers from
// weftMemAlloc (mem/host_memory.h), ranks read (and reduce) each other's buffers in place
// instead of staging them through the shared windows; an all-reduce also writes its reduced share
// straight into every rank's receive buffer.
//
// A rank offers its buffers in the payload of its first round's "arrived" flag (two extents,
// send and recv) before it publishes that flag; once every flag is up, each rank reaches the
// others' buffers through the communicator's mappings. Every rank reads the same payloads, so
// all take the same path: the zero-copy one when every buffer that path needs is shareable,
// else the staged one (a rank whose send buffer is shareable still skips its copy in). A rank
// writes into another's memory only inside the receive buffer that rank offered for the call.
#pragma once

#include <cstddef>
#include <vector>

#include "algos/algo_context.h"
#include "mem/host_memory.h"

namespace weft::shared_buffers {

struct Offer {
  mem::SharedExtent send;
  mem::SharedExtent recv;
};

// Describes this rank's buffers and writes them into the payload of flag `flag`, which the
// caller publishes next. Costs one atomic load when no weftMemAlloc memory exists.
Offer offer(AlgoContext& ctx, int flag, const void* send, size_t sendBytes, const void* recv,
            size_t recvBytes);

// Every local rank's buffers as this rank can read them; a null entry where that rank's buffer
// is not shareable. This rank's own entries are its own pointers.
struct Reached {
  std::vector<const char*> send;
  std::vector<char*> recv;
  bool allSends = false;  // every rank's send buffer is reachable
  bool all = false;       // every send and every recv buffer is reachable

  // Some rank's send buffer is read in place: its owner must not return before the readers.
  bool anySend() const {
    for (const char* buffer : send) {
      if (buffer != nullptr) return true;
    }
    return false;
  }
};

// Reads the offers of flag `flag` (all published) and maps what they name.
Status reach(AlgoContext& ctx, int flag, const void* send, size_t sendBytes, void* recv,
             size_t recvBytes, Reached* out);

// Local rank `index`'s send buffer alone, from its offer of flag `flag` (which it published):
// null where it is not shareable.
Status reachSend(AlgoContext& ctx, int flag, int index, size_t sendBytes, const char** out);

// The staged direct all-reduce and reduce: reduces this rank's share of a round's chunk
// (elements [offset, offset + count) of the message) into its own window area, reading each
// rank's chunk from its area, or from its own send buffer where that is shareable.
void reduceShareOfChunk(AlgoContext& ctx, const Reached& peers, uint64_t round, size_t offset,
                        size_t count);

// dst = the reduction of `count` elements at each of `sources` (one per local rank), folded
// with this rank's own first, then the others by local index. dst may be this rank's own source
// (an in-place call): each element of it is read before it is written.
void foldOwnFirst(AlgoContext& ctx, char* dst, const std::vector<const char*>& sources,
                  size_t count);
// For outputs far larger than the caches: folds piece by piece into cache-resident scratch
// memory and streams each piece to the destinations with non-temporal stores, which write their
// lines without first reading them. The stores are fenced before it returns, so a flag
// published next covers them. A destination may be one of the sources (an in-place call): each
// piece is read whole before it is written.
// The same into several destinations at once (every rank's receive buffer): each piece is folded
// once, then streamed to each of `dsts`.
void foldOwnFirstStreaming(AlgoContext& ctx, const std::vector<char*>& dsts,
                           const std::vector<const char*>& sources, size_t count);

}  // namespace weft::shared_buffers
