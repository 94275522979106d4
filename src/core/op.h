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
};

}  // namespace weft
