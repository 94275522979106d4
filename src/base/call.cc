#include "base/call.h"

#include "base/datatype.h"

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

CallSizes callSizes(const CollArgs& args, int nranks) {
  const size_t block = args.count * typeSize(args.type);
  const bool wholeBuffer = args.coll == CollType::kAllGather ||
                           args.coll == CollType::kReduceScatter ||
                           args.coll == CollType::kAlltoAll;
  const size_t message = wholeBuffer ? block * static_cast<size_t>(nranks) : block;
  return {block, message};
}

CallExtents callExtents(const CollArgs& args, int nranks, int rank) {
  const size_t one = callSizes(args, nranks).block;
  const size_t all = one * static_cast<size_t>(nranks);
  const bool root = rank == args.root;
  switch (args.coll) {
    case CollType::kAllReduce:
      return {one, one};
    case CollType::kBroadcast:
      return {root ? one : 0, one};
    case CollType::kReduce:
      return {one, root ? one : 0};
    case CollType::kAllGather:
      return {one, all};
    case CollType::kReduceScatter:
      return {all, one};
    case CollType::kAlltoAll:
      return {all, all};
    case CollType::kGather:
      return {one, root ? all : 0};
    case CollType::kScatter:
      return {root ? all : 0, one};
    case CollType::kSend:
      return {one, 0};
    case CollType::kRecv:
      return {0, one};
    case CollType::kBarrier:
      break;
  }
  return {};
}

}  // namespace weft
