#include "api/arg_check.h"

#include <cstdint>
#include <string>

#include "cuda/buffer_kind.h"
#include "mem/host_memory.h"
#include "reduce/reduce.h"

namespace weft::api {
namespace {

bool hasReduction(CollType coll) {
  return coll == CollType::kAllReduce || coll == CollType::kReduce ||
         coll == CollType::kReduceScatter;
}
bool hasRoot(CollType coll) {
  return coll == CollType::kBroadcast || coll == CollType::kReduce || coll == CollType::kGather ||
         coll == CollType::kScatter;
}
}  // namespace

// Messages are built only on failure: this runs on every call.
Status checkCall(const char* fn, const weftComm& comm, const RawCall& call, CollArgs* out) {
  const auto name = [fn] { return std::string(fn); };
  if (!isValidType(call.type)) {
    return invalidArgument(name() + ": datatype " + std::to_string(call.type) +
                           " is not a weftDataType_t");
  }
  if (hasReduction(call.coll) && !isValidOp(call.op)) {
    return invalidArgument(name() + ": op " + std::to_string(call.op) + " is not a weftRedOp_t");
  }
  CollArgs args;
  args.coll = call.coll;
  args.send = call.send;
  args.recv = call.recv;
  args.count = call.count;
  args.type = static_cast<weftDataType_t>(call.type);
  args.op = hasReduction(call.coll) ? static_cast<weftRedOp_t>(call.op) : weftSum;
  args.root = call.root;
  const bool rooted = hasRoot(args.coll);
  if ((rooted || isPointToPoint(args.coll)) && (args.root < 0 || args.root >= comm.nranks)) {
    return invalidArgument(name() + ": " + (rooted ? "root " : "peer ") +
                           std::to_string(args.root) + " is out of range [0, " +
                           std::to_string(comm.nranks) + ")");
  }
  const size_t elementBytes = weft::typeSize(args.type);
  const size_t ranks = static_cast<size_t>(comm.nranks);
  // Checked against count * nranks elements, the largest buffer any collective implies.
  size_t largest = 0;
  if (__builtin_mul_overflow(args.count, elementBytes, &largest) ||
      __builtin_mul_overflow(largest, ranks, &largest)) {
    return invalidArgument(name() + ": count " + std::to_string(args.count) +
                           " overflows the addressable size");
  }
  if (args.count == 0 || args.coll == CollType::kBarrier) {
    *out = args;
    return Status::ok();
  }

  const CallExtents extents = callExtents(args, comm.nranks, comm.rank);
  const bool needSend = extents.sendBytes > 0;
  const bool needRecv = extents.recvBytes > 0;
  auto missing = [&](const char* buffer) {
    return invalidArgument(std::string(fn) + ": " + buffer + " is NULL but count is " +
                           std::to_string(args.count));
  };
  if (needSend && args.send == nullptr) return missing("sendbuff");
  if (needRecv && args.recv == nullptr) return missing("recvbuff");
  auto released = [&](const char* buffer) {
    return invalidArgument(std::string(fn) + ": " + buffer +
                           " points into memory freed by weftMemFree");
  };
  if (needSend && mem::wasReleased(args.send)) return released("sendbuff");
  if (needRecv && mem::wasReleased(args.recv)) return released("recvbuff");
  *out = args;
  return Status::ok();
}

Status checkAndClassify(const char* fn, weftComm* comm, const RawCall& call, CollArgs* args) {
  WEFT_TRY(checkCall(fn, *comm, call, args));
  return device::classifyBuffers(fn, comm, args);
}

}  // namespace weft::api
