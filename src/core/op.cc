#include "core/op.h"

namespace weft {

const char* collName(CollType coll) {
  switch (coll) {
    case CollType::kAllReduce:
      return "allreduce";
    case CollType::kBroadcast:
      return "broadcast";
    case CollType::kReduce:
      return "reduce";
    case CollType::kAllGather:
      return "allgather";
    case CollType::kReduceScatter:
      return "reducescatter";
    case CollType::kAlltoAll:
      return "alltoall";
    case CollType::kGather:
      return "gather";
    case CollType::kScatter:
      return "scatter";
    case CollType::kBarrier:
      return "barrier";
    case CollType::kSend:
      return "send";
    case CollType::kRecv:
      return "recv";
  }
  return "unknown";
}

bool isPointToPoint(CollType coll) {
  return coll == CollType::kSend || coll == CollType::kRecv;
}

}  // namespace weft
