// Barriers: no rank leaves one before every rank has entered it, blocking (the small-call path
// on one host's windows) and non-blocking (the executor), with the shared-memory barrier and
// the dissemination barrier; and a rank that never enters makes the others fail, naming it,
// rather than wait forever.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "multirank/rank_threads.h"
#include "scoped_env.h"

namespace weft::test {
namespace {

constexpr int kRounds = 200;

// Each round one rank (a different one each time) is late; every rank counts itself in before
// the barrier and checks after it that all have.
void checkNobodyLeavesEarly(int nranks, bool nonBlocking) {
  std::vector<std::atomic<int>> entered(kRounds);
  std::atomic<int> early{0};
  std::atomic<int> failed{0};
  std::string init = runAsThreads(nranks, [&](weftComm_t comm, int rank) {
    for (int round = 0; round < kRounds; ++round) {
      if (round % nranks == rank && round % 4 == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      entered[round].fetch_add(1);
      weftResult_t result = weftSuccess;
      if (nonBlocking) {
        weftRequest_t request = nullptr;
        result = weftBarrier(comm, &request);
        if (result == weftSuccess) result = weftWait(&request, 30000);
      } else {
        result = weftBarrier(comm, nullptr);
      }
      if (result != weftSuccess) ++failed;
      if (entered[round].load() != nranks) ++early;
    }
  });
  REQUIRE(init.empty());
  CHECK(failed == 0);
  CHECK(early == 0);
}

void checkAllRankCounts(bool nonBlocking) {
  for (int nranks : {2, 3, 4}) {
    INFO(nranks << " ranks");
    checkNobodyLeavesEarly(nranks, nonBlocking);
  }
}

}  // namespace

TEST_CASE("no rank leaves a barrier before every rank has entered it", "[barrier]") {
  SECTION("shared-memory barrier, blocking") {
    checkAllRankCounts(false);
  }
  SECTION("shared-memory barrier, non-blocking") {
    checkAllRankCounts(true);
  }
  SECTION("dissemination barrier") {
    ScopedEnv forced("WEFT_ALGO", "barrier=dissemination");
    checkAllRankCounts(false);
  }
}

TEST_CASE("a rank that never enters a barrier makes the others fail, naming it",
          "[barrier][faults]") {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  std::vector<weftResult_t> results(3, weftSuccess);
  std::vector<std::string> messages(3);
  std::string init = runAsThreads(
      3,
      [&](weftComm_t comm, int rank) {
        if (rank == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          return;
        }
        results[rank] = weftBarrier(comm, nullptr);
        messages[rank] = weftGetLastError(comm);
      },
      &config);
  REQUIRE(init.empty());
  // The first to time out tells the other, which then fails naming the same culprit.
  int timedOut = 0;
  for (int rank : {0, 1}) {
    INFO("rank " << rank << ": " << messages[rank]);
    CHECK((results[rank] == weftTimeout || results[rank] == weftRemoteError));
    CHECK(messages[rank].find("rank 2") != std::string::npos);
    if (results[rank] == weftTimeout) {
      ++timedOut;
      CHECK(messages[rank].find("barrier") != std::string::npos);
    }
  }
  CHECK(timedOut >= 1);
}

}  // namespace weft::test
