// A Plan is the tuner's decision for one call: which algorithm, and how it cuts the message.
// Algorithms only execute Plans; every rank derives the same Plan from the same inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace weft {

enum class AlgoId : uint8_t {
  kRing,
  kRecursiveDoubling,
  kBinomial,
  kChain,
  kPairwise,
  kDissemination,
  kDirect,
  kPointToPoint,
  kShmFlat,           // every rank reduces everything from shared windows (small messages)
  kShmDirect,         // each rank works on its share straight from shared windows
  kTree,              // double binary tree (all-reduce)
  kRabenseifner,      // recursive halving reduce-scatter + recursive doubling all-gather
  kBruck,             // Bruck all-gather: ceil(log2 n) rounds for any n
  kTwoLevelLeader,    // inside each node to a leader, among leaders, back inside
  kTwoLevelSplit,     // reduce-scatter inside, one inter-node all-reduce per local rank, all-gather
  kTwoLevelShm,       // as kTwoLevelLeader, the stages inside each node on its shared windows
  kRecursiveHalving,  // reduce-scatter in log2 steps, each exchanging half of the step before
  kTwoLevelReplicated,  // every rank gets its node's sum, every local rank all-reduces among nodes
};
constexpr int kNumAlgoIds = 18;

// Whether an algorithm works on shared windows (and so needs the whole communicator on one
// host with shared memory).
inline bool needsSharedWindows(AlgoId algo) {
  return algo == AlgoId::kShmFlat || algo == AlgoId::kShmDirect;
}

// Whether an algorithm composes a stage inside each node with one among nodes (Plan::inner).
inline bool isTwoLevel(AlgoId algo) {
  return algo == AlgoId::kTwoLevelLeader || algo == AlgoId::kTwoLevelSplit ||
         algo == AlgoId::kTwoLevelShm || algo == AlgoId::kTwoLevelReplicated;
}

// Whether an algorithm pipelines its messages in Plan::sliceBytes pieces (a two-level one through
// its stage among nodes, `inner`), so that a slice size is a variant of it ("ring@128K").
inline bool cutsIntoSlices(AlgoId algo, AlgoId inner) {
  const auto pipelines = [](AlgoId id) {
    return id == AlgoId::kRing || id == AlgoId::kChain || id == AlgoId::kTree;
  };
  return pipelines(algo) || (isTwoLevel(algo) && pipelines(inner));
}

const char* algoName(AlgoId algo);
// By name ("ring", "recursive_doubling", ...); false when unknown.
bool algoFromName(const char* name, AlgoId* out);

struct Plan;
// The algorithm's name, with the stage among nodes for a two-level one ("two_level_leader/ring")
// and the slice where a rule named one ("ring@128K").
std::string planName(const Plan& plan);
// "128K", "2M", "1G", or plain bytes where no binary suffix divides them: the form size ranges
// and slices take in WEFT_ALGO and tuning tables.
std::string sizeName(size_t bytes);

struct Plan {
  AlgoId algo = AlgoId::kRing;
  size_t sliceBytes = 512 * 1024;  // pipelining unit for large messages
  // The slice a tuning table's rule or WEFT_ALGO named with the algorithm ("ring@128K"); 0 when
  // sliceBytes is the communicator's (WEFT_SLICE_BYTES).
  size_t namedSliceBytes = 0;
  int depth = 4;  // slices in flight per connection
  // The two-level algorithms' stage among nodes (ring, recursive_doubling, rabenseifner or tree
  // for all-reduce; binomial or chain for broadcast).
  AlgoId inner = AlgoId::kRing;
  // Rabenseifner: the largest halving exchange with the nearest partner instead of the
  // farthest (for ranks numbered node by node, whose far partners are on other nodes).
  bool nearestFirst = false;
  double predictedMicros = 0;  // the cost model's estimate (0: not modelled)
  bool fromTable = false;      // a measured tuning table's rule chose it
  bool forced = false;         // WEFT_ALGO chose it
};

}  // namespace weft
