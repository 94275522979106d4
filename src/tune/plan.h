// A Plan is the tuner's decision for one call: which algorithm, and how it cuts the message.
// Algorithms only execute Plans; every rank derives the same Plan from the same inputs.
#pragma once

#include <cstddef>
#include <cstdint>

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
};
constexpr int kNumAlgoIds = 8;

const char* algoName(AlgoId algo);
// By name ("ring", "recursive_doubling", ...); false when unknown.
bool algoFromName(const char* name, AlgoId* out);

struct Plan {
  AlgoId algo = AlgoId::kRing;
  size_t sliceBytes = 512 * 1024;  // pipelining unit for large messages
  int depth = 4;                   // slices in flight per connection
};

}  // namespace weft
