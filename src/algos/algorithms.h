// The algorithm table: one function per (collective, algorithm), each in its own file.
#pragma once

#include "algos/algo_context.h"

namespace weft {

using AlgoFn = Status (*)(AlgoContext& context);

// nullptr when the collective has no algorithm of that kind.
AlgoFn findAlgorithm(CollType coll, AlgoId algo);

// An all-reduce on shared windows of at most this many bytes (and one window area) runs shm_flat:
// every rank reduces every input itself, one round of flags. A larger one runs shm_direct, each
// rank reducing its share. On one host and in the replicated two-level all-reduce's node stage.
constexpr size_t kShmFlatAllreduceBytes = 16 * 1024;

Status allreduceRing(AlgoContext& context);
Status allreduceRecursiveDoubling(AlgoContext& context);
Status broadcastBinomial(AlgoContext& context);
Status broadcastChain(AlgoContext& context);
Status reduceBinomial(AlgoContext& context);
Status reduceChain(AlgoContext& context);
Status allgatherRing(AlgoContext& context);
Status reduceScatterRing(AlgoContext& context);
Status reduceScatterRecursiveHalving(AlgoContext& context);
Status alltoallPairwise(AlgoContext& context);
Status alltoallBruck(AlgoContext& context);
Status gatherDirect(AlgoContext& context);
Status scatterDirect(AlgoContext& context);
Status barrierDissemination(AlgoContext& context);
Status barrierShmFlat(AlgoContext& context);
Status allreduceShmFlat(AlgoContext& context);
Status allreduceShmDirect(AlgoContext& context);
Status broadcastShmDirect(AlgoContext& context);
Status reduceShmDirect(AlgoContext& context);
Status allgatherShmDirect(AlgoContext& context);
Status reduceScatterShmDirect(AlgoContext& context);
Status allreduceTree(AlgoContext& context);
Status allreduceRabenseifner(AlgoContext& context);
Status allgatherRecursiveDoubling(AlgoContext& context);
Status allgatherBruck(AlgoContext& context);
Status allreduceTwoLevelLeader(AlgoContext& context);
Status allreduceTwoLevelSplit(AlgoContext& context);
Status allreduceTwoLevelShm(AlgoContext& context);
Status allreduceTwoLevelReplicated(AlgoContext& context);
Status allgatherTwoLevel(AlgoContext& context);
Status broadcastTwoLevel(AlgoContext& context);
Status reduceTwoLevel(AlgoContext& context);

// Copies `bytes` unless source and destination are the same memory (in-place calls).
void copyUnlessSame(void* dst, const void* src, size_t bytes);

}  // namespace weft
