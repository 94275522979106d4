// A call as the core sees it once the API layer has checked it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/weft.h"

namespace weft {

enum class CollType : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kBarrier,
  kSend,
  kRecv,
};
constexpr int kNumCollTypes = 11;

const char* collName(CollType coll);  // "allreduce", "broadcast", ...
bool isPointToPoint(CollType coll);

struct CollArgs {
  CollType coll = CollType::kBarrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // the per-call count as the API defines it (e.g. sendcount for AllGather)
  weftDataType_t type = weftUint8;
  weftRedOp_t op = weftSum;
  int root = 0;  // root, or the peer of Send/Recv
  // Where the buffers live (set by the API layer, cuda/buffer_kind.h): device buffers run
  // through cuda/device_op.h, on GPU `device`.
  bool deviceBuffers = false;
  int device = -1;
  // The communicator holds a symmetric window (weftCommWindowRegister): on one host the direct
  // algorithms, which read peers' weftMemAlloc buffers in place, are chosen from the first byte.
  // Set by core at execution; the same on every rank, since windows are made collectively.
  bool symmetricWindows = false;
};

// A call's sizes in bytes; every layer takes them from here rather than multiplying again.
struct CallSizes {
  size_t block = 0;    // `count` elements of the call's type (the per-rank block of the
                       // gather, scatter and all-to-all family)
  size_t message = 0;  // what the tuner sizes the call by: the block, except for all-gather,
                       // reduce-scatter and all-to-all, whose message is the whole buffer of
                       // n blocks
};
CallSizes callSizes(const CollArgs& args, int nranks);

// What the tuner's choices depend on in a call (collective, datatype, count), as one key for the
// caches of those choices; the top bits are left free for a cache's own distinctions.
inline uint64_t callShapeKey(const CollArgs& args) {
  return (static_cast<uint64_t>(args.coll) << 56) ^ (static_cast<uint64_t>(args.type) << 48) ^
         (args.count & ((uint64_t{1} << 48) - 1));
}

// What a call reads from its send buffer and writes to its receive buffer on `rank`, in bytes
// (0 where the rank does not use that buffer: a broadcast's send buffer off the root, say).
struct CallExtents {
  size_t sendBytes = 0;
  size_t recvBytes = 0;
};
CallExtents callExtents(const CollArgs& args, int nranks, int rank);

}  // namespace weft
