// Runs the correctness matrix on n thread ranks and fails the current test with the first
// messages on any mismatch. Shared by the threaded test files.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "multirank/coll_matrix.h"
#include "multirank/rank_threads.h"

namespace weft::test {

// Sanitizer builds run 5-20x slower; CI caps their rank counts with WEFT_TEST_MAX_RANKS.
inline bool skippedForRankCap(int n) {
  const char* cap = std::getenv("WEFT_TEST_MAX_RANKS");
  if (cap == nullptr || n <= std::atoi(cap)) return false;
  WARN("skipped: " << n << " ranks exceed WEFT_TEST_MAX_RANKS=" << cap);
  return true;
}

// hostOf(rank), when given, overrides each rank's host identity (to make several nodes).
inline void checkMatrix(int n, const MatrixOptions& options,
                        const std::function<const char*(int)>& hostOf = nullptr) {
  if (skippedForRankCap(n)) return;
  std::mutex mutex;
  MatrixResult total;
  std::vector<weftConfig_t> configs(n, weftConfig_t(WEFT_CONFIG_INITIALIZER));
  for (int rank = 0; hostOf && rank < n; ++rank) configs[rank].hostId = hostOf(rank);
  std::string initErrors = runAsThreadsWith(
      n,
      [&](weftComm_t comm, int) {
        MatrixResult result = runMatrix(comm, options);
        std::lock_guard<std::mutex> lock(mutex);
        total.calls += result.calls;
        total.failures += result.failures;
        total.messages.insert(total.messages.end(), result.messages.begin(), result.messages.end());
      },
      [&](int rank) { return &configs[rank]; });
  INFO(initErrors);
  REQUIRE(initErrors.empty());
  std::string messages;
  for (const auto& message : total.messages) messages += message + "\n";
  INFO(messages);
  CHECK(total.failures == 0);
  CHECK(total.calls > 0);
}

}  // namespace weft::test
