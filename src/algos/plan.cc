#include "algos/plan.h"

#include <cstring>

namespace weft {
namespace {

constexpr const char* kNames[kNumAlgoIds] = {
    "ring",
    "recursive_doubling",
    "binomial",
    "chain",
    "pairwise",
    "dissemination",
    "direct",
    "p2p",
    "shm_flat",
    "shm_direct",
    "tree",
    "rabenseifner",
    "bruck",
    "two_level_leader",
    "two_level_split",
    "two_level_shm",
    "recursive_halving",
    "two_level_replicated",
};

}  // namespace

const char* algoName(AlgoId algo) {
  return kNames[static_cast<int>(algo)];
}

bool algoFromName(const char* name, AlgoId* out) {
  for (int i = 0; i < kNumAlgoIds; ++i) {
    if (std::strcmp(kNames[i], name) == 0) {
      *out = static_cast<AlgoId>(i);
      return true;
    }
  }
  return false;
}

std::string planName(const Plan& plan) {
  std::string name = algoName(plan.algo);
  if (isTwoLevel(plan.algo)) name.append("/").append(algoName(plan.inner));
  if (plan.namedSliceBytes != 0) name.append("@").append(sizeName(plan.namedSliceBytes));
  return name;
}

std::string sizeName(size_t bytes) {
  const char* suffixes = "KMG";
  int shift = 0;
  while (shift < 3 && bytes != 0 && bytes % (size_t{1024} << (10 * shift)) == 0) ++shift;
  if (shift == 0) return std::to_string(bytes);
  return std::to_string(bytes >> (10 * shift)) + suffixes[shift - 1];
}

}  // namespace weft
