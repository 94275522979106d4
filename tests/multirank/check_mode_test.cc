// Check mode: ranks that disagree on a collective get weftInvalidUsage naming both calls, on
// every rank, and the communicator keeps working.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "multirank/rank_threads.h"

namespace weft::test {
namespace {

struct Outcome {
  weftResult_t mismatched = weftSuccess;
  std::string message;
  weftResult_t after = weftInternalError;
  float afterValue = 0;
};

// Runs `disagree` (a call whose arguments depend on the rank) on 3 ranks in check mode, then a
// matching all-reduce.
std::vector<Outcome> runDisagreement(const std::function<weftResult_t(weftComm_t, int)>& disagree) {
  constexpr int n = 3;
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.checkMode = 1;
  config.timeoutMs = 20000;
  std::vector<Outcome> outcomes(n);
  std::string init = runAsThreads(
      n,
      [&](weftComm_t comm, int rank) {
        Outcome& out = outcomes[rank];
        out.mismatched = disagree(comm, rank);
        out.message = weftGetLastError(comm);
        float one = 1;
        out.after = weftAllReduce(&one, &out.afterValue, 1, weftFloat32, weftSum, comm, nullptr);
      },
      &config);
  REQUIRE(init.empty());
  return outcomes;
}

void requireCaughtEverywhere(const std::vector<Outcome>& outcomes, const std::string& fragment) {
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    INFO("rank " << rank << ": " << outcomes[rank].message);
    CHECK(outcomes[rank].mismatched == weftInvalidUsage);
    CHECK(outcomes[rank].message.find(fragment) != std::string::npos);
    CHECK(outcomes[rank].after == weftSuccess);
    CHECK(outcomes[rank].afterValue == 3.0f);
  }
  // Every rank words the same disagreement alike.
  for (const Outcome& out : outcomes) CHECK(out.message == outcomes[0].message);
}

}  // namespace

TEST_CASE("check mode catches a count that differs on one rank", "[check]") {
  auto outcomes = runDisagreement([&](weftComm_t comm, int rank) {
    std::vector<float> mine(64, 1.0f);
    return weftAllReduce(mine.data(), mine.data(), rank == 2 ? 60 : 64, weftFloat32, weftSum, comm,
                         nullptr);
  });
  requireCaughtEverywhere(outcomes,
                          "rank 0 called allreduce(count 64, float32, sum) as "
                          "collective #1, rank 2 called allreduce(count 60, float32, sum)");
}

TEST_CASE("check mode catches a different datatype, op or root", "[check]") {
  SECTION("datatype") {
    auto outcomes = runDisagreement([](weftComm_t comm, int rank) {
      double buf[4] = {};
      return weftAllReduce(buf, buf, 4, rank == 1 ? weftFloat64 : weftInt64, weftSum, comm,
                           nullptr);
    });
    requireCaughtEverywhere(outcomes, "rank 1 called allreduce(count 4, float64, sum)");
  }
  SECTION("op") {
    auto outcomes = runDisagreement([](weftComm_t comm, int rank) {
      int buf[4] = {};
      return weftReduce(buf, buf, 4, weftInt32, rank == 1 ? weftMax : weftSum, 0, comm, nullptr);
    });
    requireCaughtEverywhere(outcomes, "rank 1 called reduce(count 4, int32, max, root 0)");
  }
  SECTION("root") {
    auto outcomes = runDisagreement([](weftComm_t comm, int rank) {
      int buf[4] = {};
      return weftBroadcast(buf, buf, 4, weftInt32, rank == 2 ? 1 : 0, comm, nullptr);
    });
    requireCaughtEverywhere(outcomes, "rank 2 called broadcast(count 4, int32, root 1)");
  }
}

TEST_CASE("check mode catches different collectives and uneven groups", "[check]") {
  SECTION("collective") {
    auto outcomes = runDisagreement([](weftComm_t comm, int rank) {
      int buf[8] = {};
      if (rank == 0) return weftBarrier(comm, nullptr);
      return weftAllGather(buf, buf, 2, weftInt32, comm, nullptr);
    });
    requireCaughtEverywhere(outcomes,
                            "rank 0 called barrier() as collective #1, "
                            "rank 1 called allgather(count 2, int32)");
  }
  SECTION("group") {
    auto outcomes = runDisagreement([](weftComm_t comm, int rank) {
      int a[4] = {}, b[4] = {};
      weftGroupStart();
      weftAllReduce(a, a, 4, weftInt32, weftSum, comm, nullptr);
      if (rank != 1) weftAllReduce(b, b, 4, weftInt32, weftSum, comm, nullptr);
      return weftGroupEnd();
    });
    requireCaughtEverywhere(outcomes, "rank 0's holds 2 collectives, rank 1's holds 1");
  }
}

TEST_CASE("check mode lets matching calls through with their results", "[check]") {
  constexpr int n = 4;
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.checkMode = 1;
  std::vector<int> sums(n, -1), gathered(n * n, -1);
  std::string init = runAsThreads(
      n,
      [&](weftComm_t comm, int rank) {
        int value = rank + 1;
        weftAllReduce(&value, &sums[rank], 1, weftInt32, weftSum, comm, nullptr);
        weftAllGather(&value, gathered.data() + rank * n, 1, weftInt32, comm, nullptr);
      },
      &config);
  REQUIRE(init.empty());
  CHECK(sums == std::vector<int>(n, 10));
  for (int rank = 0; rank < n; ++rank) {
    for (int j = 0; j < n; ++j) CHECK(gathered[rank * n + j] == j + 1);
  }
}

}  // namespace weft::test
