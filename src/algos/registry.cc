#include <cstring>

#include "algos/algorithms.h"

namespace weft {
namespace {

struct Entry {
  CollType coll;
  AlgoId algo;
  AlgoFn run;
};

constexpr Entry kAlgorithms[] = {
    {CollType::kAllReduce, AlgoId::kRing, allreduceRing},
    {CollType::kAllReduce, AlgoId::kRecursiveDoubling, allreduceRecursiveDoubling},
    {CollType::kBroadcast, AlgoId::kBinomial, broadcastBinomial},
    {CollType::kBroadcast, AlgoId::kChain, broadcastChain},
    {CollType::kReduce, AlgoId::kBinomial, reduceBinomial},
    {CollType::kReduce, AlgoId::kChain, reduceChain},
    {CollType::kAllGather, AlgoId::kRing, allgatherRing},
    {CollType::kReduceScatter, AlgoId::kRing, reduceScatterRing},
    {CollType::kReduceScatter, AlgoId::kRecursiveHalving, reduceScatterRecursiveHalving},
    {CollType::kAlltoAll, AlgoId::kPairwise, alltoallPairwise},
    {CollType::kAlltoAll, AlgoId::kBruck, alltoallBruck},
    {CollType::kGather, AlgoId::kDirect, gatherDirect},
    {CollType::kScatter, AlgoId::kDirect, scatterDirect},
    {CollType::kBarrier, AlgoId::kDissemination, barrierDissemination},
    {CollType::kAllReduce, AlgoId::kShmFlat, allreduceShmFlat},
    {CollType::kBarrier, AlgoId::kShmFlat, barrierShmFlat},
    {CollType::kAllReduce, AlgoId::kShmDirect, allreduceShmDirect},
    {CollType::kBroadcast, AlgoId::kShmDirect, broadcastShmDirect},
    {CollType::kReduce, AlgoId::kShmDirect, reduceShmDirect},
    {CollType::kAllGather, AlgoId::kShmDirect, allgatherShmDirect},
    {CollType::kReduceScatter, AlgoId::kShmDirect, reduceScatterShmDirect},
    {CollType::kAllReduce, AlgoId::kTree, allreduceTree},
    {CollType::kAllReduce, AlgoId::kRabenseifner, allreduceRabenseifner},
    {CollType::kAllGather, AlgoId::kRecursiveDoubling, allgatherRecursiveDoubling},
    {CollType::kAllGather, AlgoId::kBruck, allgatherBruck},
    {CollType::kAllReduce, AlgoId::kTwoLevelLeader, allreduceTwoLevelLeader},
    {CollType::kAllReduce, AlgoId::kTwoLevelSplit, allreduceTwoLevelSplit},
    {CollType::kAllReduce, AlgoId::kTwoLevelShm, allreduceTwoLevelShm},
    {CollType::kAllReduce, AlgoId::kTwoLevelReplicated, allreduceTwoLevelReplicated},
    {CollType::kAllGather, AlgoId::kTwoLevelLeader, allgatherTwoLevel},
    {CollType::kBroadcast, AlgoId::kTwoLevelLeader, broadcastTwoLevel},
    {CollType::kReduce, AlgoId::kTwoLevelLeader, reduceTwoLevel},
};

}  // namespace

AlgoFn findAlgorithm(CollType coll, AlgoId algo) {
  for (const Entry& entry : kAlgorithms) {
    if (entry.coll == coll && entry.algo == algo) return entry.run;
  }
  return nullptr;
}

void copyUnlessSame(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
}

}  // namespace weft
