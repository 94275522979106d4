// The shared-memory reduce's small-message form (algos/reduce_shm_direct.cc): up to 16 KiB, the
// non-roots copy their input into the windows and return at once, and only the root waits and
// reduces. These check it back to back with the root moving every call, so that non-roots run
// ahead into the next call while the root still reads the last one, and with every input
// overwritten as soon as its call returns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "multirank/rank_threads.h"
#include "scoped_env.h"

namespace weft::test {
namespace {

// Flag line (up to 56 bytes), just past it, a window area up to the 16 KiB limit, and just past
// the limit (the general direct reduce), in int32 elements.
const std::vector<size_t> kCounts = {1, 14, 15, 1000, 4096, 4097};

int32_t valueOf(int rank, int call, size_t i) {
  return static_cast<int32_t>(rank * 7 + call + static_cast<int>(i % 13));
}

void reduceBackToBack(int nranks, int calls) {
  std::atomic<int> wrong{0};
  std::string first;
  std::string init = runAsThreads(nranks, [&](weftComm_t comm, int rank) {
    for (int call = 0; call < calls; ++call) {
      const size_t count = kCounts[static_cast<size_t>(call) % kCounts.size()];
      const int root = call % nranks;
      const bool inPlace = (call / nranks) % 2 == 1;
      std::vector<int32_t> send(count);
      for (size_t i = 0; i < count; ++i) send[i] = valueOf(rank, call, i);
      std::vector<int32_t> recv(count, -1);
      int32_t* out = inPlace ? send.data() : recv.data();
      const weftResult_t result =
          weftReduce(send.data(), out, count, weftInt32, weftSum, root, comm, nullptr);
      bool good = result == weftSuccess;
      if (rank == root) {
        for (size_t i = 0; good && i < count; ++i) {
          int32_t sum = 0;
          for (int r = 0; r < nranks; ++r) sum += valueOf(r, call, i);
          good = out[i] == sum;
        }
      }
      // The call has returned: its input is the caller's again.
      std::fill(send.begin(), send.end(), -1000);
      if (!good && wrong.fetch_add(1) == 0) {
        first = "rank " + std::to_string(rank) + " call " + std::to_string(call) + " count " +
                std::to_string(count) + " root " + std::to_string(root) +
                (inPlace ? " in place" : "") + ": result " + std::to_string(result) + " " +
                weftGetLastError(comm);
      }
    }
  });
  REQUIRE(init.empty());
  INFO(first);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("small shared-memory reduces run back to back with the root moving every call",
          "[shm_reduce]") {
  ScopedEnv forced("WEFT_ALGO", "reduce=shm_direct");
  SECTION("2 ranks") {
    reduceBackToBack(2, 300);
  }
  SECTION("3 ranks") {
    reduceBackToBack(3, 300);
  }
  SECTION("4 ranks") {
    reduceBackToBack(4, 200);
  }
}

TEST_CASE("a small shared-memory reduce averages at the root", "[shm_reduce]") {
  ScopedEnv forced("WEFT_ALGO", "reduce=shm_direct");
  constexpr int n = 3;
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    for (size_t count : kCounts) {
      std::vector<float> send(count, static_cast<float>(3 * rank));  // 0, 3, 6: mean 3
      std::vector<float> recv(count, 0.0f);
      if (weftReduce(send.data(), recv.data(), count, weftFloat32, weftAvg, 1, comm, nullptr) !=
          weftSuccess) {
        ++wrong;
        continue;
      }
      if (rank != 1) continue;
      for (float value : recv) wrong += value != 3.0f;
    }
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

}  // namespace weft::test
