// A call's sizes and extents: the one place every layer takes a call's bytes from.
#include <catch2/catch.hpp>

#include "base/call.h"

using namespace weft;

namespace {

CollArgs callOf(CollType coll, size_t count, weftDataType_t type, int root = 0) {
  CollArgs args;
  args.coll = coll;
  args.count = count;
  args.type = type;
  args.root = root;
  return args;
}

}  // namespace

TEST_CASE("a call's block is its count in bytes, its message n blocks for the gathering family",
          "[call]") {
  const CallSizes allReduce = callSizes(callOf(CollType::kAllReduce, 10, weftFloat64), 4);
  CHECK(allReduce.block == 80);
  CHECK(allReduce.message == 80);
  const CallSizes allGather = callSizes(callOf(CollType::kAllGather, 3, weftBfloat16), 5);
  CHECK(allGather.block == 6);
  CHECK(allGather.message == 30);
  const CallSizes reduceScatter = callSizes(callOf(CollType::kReduceScatter, 7, weftInt8), 3);
  CHECK(reduceScatter.block == 7);
  CHECK(reduceScatter.message == 21);
  const CallSizes alltoall = callSizes(callOf(CollType::kAlltoAll, 2, weftInt32), 4);
  CHECK(alltoall.block == 8);
  CHECK(alltoall.message == 32);
}

TEST_CASE("extents follow each collective's buffers on and off the root", "[call]") {
  const int nranks = 4;
  auto extents = [&](CollType coll, int rank) {
    return callExtents(callOf(coll, 5, weftInt32, 2), nranks, rank);
  };
  CHECK(extents(CollType::kBroadcast, 2).sendBytes == 20);
  CHECK(extents(CollType::kBroadcast, 1).sendBytes == 0);
  CHECK(extents(CollType::kReduce, 1).recvBytes == 0);
  CHECK(extents(CollType::kReduce, 2).recvBytes == 20);
  CHECK(extents(CollType::kAllGather, 0).recvBytes == 80);
  CHECK(extents(CollType::kReduceScatter, 0).sendBytes == 80);
  CHECK(extents(CollType::kGather, 2).recvBytes == 80);
  CHECK(extents(CollType::kGather, 0).recvBytes == 0);
  CHECK(extents(CollType::kScatter, 2).sendBytes == 80);
  CHECK(extents(CollType::kAlltoAll, 3).sendBytes == 80);
  CHECK(extents(CollType::kSend, 0).recvBytes == 0);
  CHECK(extents(CollType::kRecv, 0).recvBytes == 20);
  CHECK(extents(CollType::kBarrier, 0).sendBytes == 0);
}
