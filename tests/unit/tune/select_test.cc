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

Layout net(int nranks) {
  Layout layout;
  layout.nranks = nranks;
  return layout;
}
Layout oneHost(int nranks) {
  Layout layout;
  layout.nranks = nranks;
  layout.oneHostShm = true;
  layout.windowAreaBytes = 4 << 20;
  return layout;
}

}  // namespace

TEST_CASE("a plan says whether WEFT_ALGO forced it", "[tune]") {
  AlgoOverrides forced;
  REQUIRE(parseAlgoOverrides("reducescatter=recursive_halving", &forced).isOk());
  const Plan halving = choosePlan(args(CollType::kReduceScatter, 16), oneHost(4), forced, 4096);
  CHECK(halving.algo == AlgoId::kRecursiveHalving);
  CHECK(halving.forced);
  CHECK_FALSE(choosePlan(args(CollType::kAllReduce, 16), oneHost(4), forced, 4096).forced);
  CHECK_FALSE(
      choosePlan(args(CollType::kReduceScatter, 16), oneHost(4), AlgoOverrides{}, 4096).forced);
}

TEST_CASE("on one host with shared memory the direct algorithms are chosen", "[tune]") {
  AlgoOverrides none;
  CHECK(choosePlan(args(CollType::kAllReduce, 2), oneHost(4), none, 4096).algo == AlgoId::kShmFlat);
  CHECK(choosePlan(args(CollType::kAllReduce, 1 << 20), oneHost(4), none, 4096).algo ==
        AlgoId::kShmDirect);
  CHECK(choosePlan(args(CollType::kAllReduce, 1 << 20), oneHost(2), none, 4096).algo ==
        AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kAllReduce, 16384), oneHost(2), none, 4096).algo ==
        AlgoId::kShmDirect);
  CHECK(choosePlan(args(CollType::kBroadcast, 16), oneHost(4), none, 4096).algo ==
        AlgoId::kShmDirect);
  CHECK(choosePlan(args(CollType::kAlltoAll, 16), oneHost(4), none, 4096).algo ==
        AlgoId::kPairwise);
  // A forced shm_flat too large for a window area runs direct instead.
  AlgoOverrides flat;
  REQUIRE(parseAlgoOverrides("allreduce=shm_flat", &flat).isOk());
  CHECK(choosePlan(args(CollType::kAllReduce, 4 << 20), oneHost(2), flat, 4096).algo ==
        AlgoId::kShmDirect);
}

TEST_CASE("forcing a shared-memory algorithm across hosts is refused at init", "[tune]") {
  AlgoOverrides overrides;
  REQUIRE(parseAlgoOverrides("broadcast=shm_direct", &overrides).isOk());
  CHECK(checkOverrides(overrides, oneHost(4)).isOk());
  Status status = checkOverrides(overrides, net(4));
  CHECK(status.code() == weftInvalidUsage);
  CHECK(status.message().find("shm_direct") != std::string::npos);
  CHECK(checkOverrides(overrides, net(1)).isOk());
}

TEST_CASE("small all-reduces use recursive doubling, large ones the ring", "[tune]") {
  AlgoOverrides none;
  CHECK(choosePlan(args(CollType::kAllReduce, 2), net(4), none, 4096).algo ==
        AlgoId::kRecursiveDoubling);
  CHECK(choosePlan(args(CollType::kAllReduce, 1 << 20), net(4), none, 4096).algo == AlgoId::kRing);
  // The crossover grows with the rank count: 64 KiB is a ring for 2 ranks, not for 4.
  CHECK(choosePlan(args(CollType::kAllReduce, 16384), net(2), none, 4096).algo == AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kAllReduce, 16384), net(4), none, 4096).algo ==
        AlgoId::kRecursiveDoubling);
  // Fewer elements than ranks leaves ring blocks empty: recursive doubling at any size.
  CHECK(choosePlan(args(CollType::kAllReduce, 3, weftFloat64), net(4), none, 4096).algo ==
        AlgoId::kRecursiveDoubling);
  CHECK(choosePlan(args(CollType::kBroadcast, 1 << 20), net(4), none, 4096).algo == AlgoId::kChain);
  CHECK(choosePlan(args(CollType::kBroadcast, 16), net(4), none, 4096).algo == AlgoId::kBinomial);
  // float32: 16 and 64 KiB.
  CHECK(choosePlan(args(CollType::kReduce, 4096), net(4), none, 4096).algo == AlgoId::kBinomial);
  CHECK(choosePlan(args(CollType::kReduce, 16384), net(4), none, 4096).algo == AlgoId::kChain);
  CHECK(choosePlan(args(CollType::kBarrier, 0), net(4), none, 4096).algo == AlgoId::kDissemination);
  CHECK(choosePlan(args(CollType::kAllReduce, 1 << 20), net(4), none, 4096).sliceBytes == 4096);
}

TEST_CASE("WEFT_ALGO forces algorithms globally or per collective", "[tune]") {
  AlgoOverrides overrides;
  REQUIRE(parseAlgoOverrides("ring", &overrides).isOk());
  CHECK(choosePlan(args(CollType::kAllReduce, 2), net(4), overrides, 4096).algo == AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kAllGather, 2), net(4), overrides, 4096).algo == AlgoId::kRing);
  CHECK(choosePlan(args(CollType::kBroadcast, 2), net(4), overrides, 4096).algo ==
        AlgoId::kBinomial);

  REQUIRE(parseAlgoOverrides("broadcast=chain,reduce=binomial", &overrides).isOk());
  CHECK(choosePlan(args(CollType::kBroadcast, 2), net(4), overrides, 4096).algo == AlgoId::kChain);
  CHECK(choosePlan(args(CollType::kReduce, 1 << 22), net(4), overrides, 4096).algo ==
        AlgoId::kBinomial);
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
