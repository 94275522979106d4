// Plan selection: size rules and the WEFT_ALGO override grammar.
#include <catch2/catch.hpp>

#include "tune/select.h"

namespace weft {
namespace {

CollArgs args(CollType coll, size_t count, weftDataType_t type = weftFloat32) {
  CollArgs a;
  a.coll = coll;
  a.count = count;
  a.type = type;
  return a;
}

}  // namespace

TEST_CASE("small all-reduces use recursive doubling, large ones the ring", "[tune]") {
  AlgoOverrides none;
  CHECK(choosePlan(args(CollType::kAllReduce, 2), 4, none, 4096).algo == AlgoId::kRecursiveDoubling);
  CHECK(choosePlan(args(CollType::kAllReduce, 1 << 20), 4, none, 4096).algo == AlgoId::kRing);
  // The crossover grows with the rank count: 64 KiB is a ring for 2 ranks, not for 4.
  CHECK(choosePlan(args(CollType::kAllReduce, 16384), 2, none, 4096).algo == AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kAllReduce, 16384), 4, none, 4096).algo ==
        AlgoId::kRecursiveDoubling);
  // Fewer elements than ranks leaves ring blocks empty: recursive doubling at any size.
  CHECK(choosePlan(args(CollType::kAllReduce, 3, weftFloat64), 4, none, 4096).algo ==
        AlgoId::kRecursiveDoubling);
  CHECK(choosePlan(args(CollType::kBroadcast, 1 << 20), 4, none, 4096).algo == AlgoId::kChain);
  CHECK(choosePlan(args(CollType::kBroadcast, 16), 4, none, 4096).algo == AlgoId::kBinomial);
  CHECK(choosePlan(args(CollType::kBarrier, 0), 4, none, 4096).algo == AlgoId::kDissemination);
  CHECK(choosePlan(args(CollType::kAllReduce, 1 << 20), 4, none, 4096).sliceBytes == 4096);
}

TEST_CASE("WEFT_ALGO forces algorithms globally or per collective", "[tune]") {
  AlgoOverrides overrides;
  REQUIRE(parseAlgoOverrides("ring", &overrides).isOk());
  CHECK(choosePlan(args(CollType::kAllReduce, 2), 4, overrides, 4096).algo == AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kAllGather, 2), 4, overrides, 4096).algo == AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kBroadcast, 2), 4, overrides, 4096).algo == AlgoId::kBinomial);

  REQUIRE(parseAlgoOverrides("broadcast=chain,reduce=binomial", &overrides).isOk());
  CHECK(choosePlan(args(CollType::kBroadcast, 2), 4, overrides, 4096).algo == AlgoId::kChain);
  CHECK(choosePlan(args(CollType::kReduce, 1 << 22), 4, overrides, 4096).algo == AlgoId::kBinomial);
}

TEST_CASE("WEFT_ALGO errors name the bad token", "[tune]") {
  AlgoOverrides overrides;
  Status status = parseAlgoOverrides("allreduce=warp", &overrides);
  CHECK(status.code() == weftInvalidArgument);
  CHECK(status.message().find("warp") != std::string::npos);
  status = parseAlgoOverrides("gossip=ring", &overrides);
  CHECK(status.message().find("gossip") != std::string::npos);
  status = parseAlgoOverrides("barrier=ring", &overrides);
  CHECK(status.message().find("barrier has no algorithm") != std::string::npos);
}

}  // namespace weft
