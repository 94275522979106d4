// The small-call path (core/small_call.h): blocking all-reduces and broadcasts of at most 56 bytes
// among ranks on one host's windows run without the executor's operation. These check that it gives
// the general path's results at and around its size limit, keeps the order of calls queued before
// it, and stands aside where another algorithm or a check mode applies. Its errors (a timeout
// naming the silent peer, an abort from another thread) are checked in comm_test.cc, whose 4-byte
// calls take this path, and a killed peer in tests/faults (faults.survivors.small).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "multirank/rank_threads.h"
#include "scoped_env.h"

namespace weft::test {
namespace {

// Element i of rank r is r + 1 + i % 16: small integers, exact in every type used here (int8
// sums included).
int offsetOf(size_t i) {
  return static_cast<int>(i % 16);
}

template <typename T>
std::vector<T> inputOf(int rank, size_t count) {
  std::vector<T> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<T>(rank + 1 + offsetOf(i));
  return values;
}

template <typename T>
T expected(weftRedOp_t op, int nranks, size_t i) {
  const int first = 1 + offsetOf(i);
  const int last = nranks + offsetOf(i);
  switch (op) {
    case weftSum:
      return static_cast<T>((first + last) * nranks / 2);
    case weftMax:
      return static_cast<T>(last);
    case weftMin:
      return static_cast<T>(first);
    default:
      return T{};
  }
}

// Counts of T around the 56-byte limit: below, at and just past it.
template <typename T>
std::vector<size_t> countsAroundLimit() {
  const size_t limit = 56 / sizeof(T);
  return {1, limit - 1, limit, limit + 1, 4 * limit};
}

template <typename T>
void checkAllOps(weftComm_t comm, int rank, int nranks, weftDataType_t type,
                 std::atomic<int>* wrong, std::string* first) {
  for (weftRedOp_t op : {weftSum, weftMax, weftMin}) {
    for (size_t count : countsAroundLimit<T>()) {
      for (bool inPlace : {false, true}) {
        std::vector<T> send = inputOf<T>(rank, count);
        std::vector<T> recv(count, T{});
        T* out = inPlace ? send.data() : recv.data();
        const weftResult_t result = weftAllReduce(send.data(), out, count, type, op, comm, nullptr);
        bool good = result == weftSuccess;
        for (size_t i = 0; good && i < count; ++i) good = out[i] == expected<T>(op, nranks, i);
        if (!good && wrong->fetch_add(1) == 0) {
          *first = "type " + std::to_string(type) + " op " + std::to_string(op) + " count " +
                   std::to_string(count) + (inPlace ? " in place" : "") + ": result " +
                   std::to_string(result) + " " + weftGetLastError(comm);
        }
      }
    }
  }
}

void checkSizesAndOps(int nranks) {
  std::atomic<int> wrong{0};
  std::string first;
  std::string init = runAsThreads(nranks, [&](weftComm_t comm, int rank) {
    checkAllOps<int32_t>(comm, rank, nranks, weftInt32, &wrong, &first);
    checkAllOps<float>(comm, rank, nranks, weftFloat32, &wrong, &first);
    checkAllOps<double>(comm, rank, nranks, weftFloat64, &wrong, &first);
    checkAllOps<int8_t>(comm, rank, nranks, weftInt8, &wrong, &first);
  });
  REQUIRE(init.empty());
  INFO(first);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("small blocking all-reduces are exact at, below and past the 56-byte limit",
          "[small_call]") {
  SECTION("2 ranks") {
    checkSizesAndOps(2);
  }
  SECTION("3 ranks") {
    checkSizesAndOps(3);
  }
}

// Float sums whose result depends on the order of the additions: 1e8 + 1 rounds the 1 away, so
// (1e8 + 1) - 1e8 is 0 where (1e8 - 1e8) + 1 is 1. Rotating the three values over the ranks per
// element puts the large pair at every pair of positions.
float orderSensitiveInput(int rank, size_t i) {
  constexpr float kValues[] = {1e8f, 1.0f, -1e8f};
  return kValues[(static_cast<size_t>(rank) + i) % 3];
}

TEST_CASE("a small all-reduce adds in rank order on every rank, in place or not", "[small_call]") {
  constexpr int n = 3;
  std::atomic<int> wrong{0};
  std::string first;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    for (size_t count : countsAroundLimit<float>()) {
      for (bool inPlace : {false, true}) {
        std::vector<float> send(count), recv(count, -1.0f);
        for (size_t i = 0; i < count; ++i) send[i] = orderSensitiveInput(rank, i);
        float* out = inPlace ? send.data() : recv.data();
        const weftResult_t result =
            weftAllReduce(send.data(), out, count, weftFloat32, weftSum, comm, nullptr);
        bool good = result == weftSuccess;
        for (size_t i = 0; good && i < count; ++i) {
          float inOrder = orderSensitiveInput(0, i);
          for (int other = 1; other < n; ++other) inOrder += orderSensitiveInput(other, i);
          good = out[i] == inOrder;
        }
        if (!good && wrong.fetch_add(1) == 0) {
          first = "rank " + std::to_string(rank) + " count " + std::to_string(count) +
                  (inPlace ? " in place" : "") + ": result " + std::to_string(result) + " " +
                  weftGetLastError(comm);
        }
      }
    }
  });
  REQUIRE(init.empty());
  INFO(first);
  CHECK(wrong == 0);
}

TEST_CASE("small blocking broadcasts are exact from every root, at, below and past the limit",
          "[small_call]") {
  for (int nranks : {2, 3}) {
    std::atomic<int> wrong{0};
    std::string first;
    std::string init = runAsThreads(nranks, [&](weftComm_t comm, int rank) {
      for (int root = 0; root < nranks; ++root) {
        for (size_t count : countsAroundLimit<double>()) {
          for (bool inPlace : {false, true}) {
            // The root's values, and something else everywhere else.
            std::vector<double> send(count), recv(count, -1.0);
            for (size_t i = 0; i < count; ++i) send[i] = rank == root ? 100.0 * root + i : -2.0;
            double* out = inPlace ? send.data() : recv.data();
            const weftResult_t result =
                weftBroadcast(send.data(), out, count, weftFloat64, root, comm, nullptr);
            bool good = result == weftSuccess;
            for (size_t i = 0; good && i < count; ++i) good = out[i] == 100.0 * root + i;
            if (!good && wrong.fetch_add(1) == 0) {
              first = std::to_string(nranks) + " ranks, rank " + std::to_string(rank) + " root " +
                      std::to_string(root) + " count " + std::to_string(count) +
                      (inPlace ? " in place" : "") + ": result " + std::to_string(result) + " " +
                      weftGetLastError(comm);
            }
          }
        }
      }
    });
    REQUIRE(init.empty());
    INFO(first);
    CHECK(wrong == 0);
  }
}

TEST_CASE("a small blocking all-reduce runs after the non-blocking calls issued before it",
          "[small_call]") {
  constexpr int n = 3;
  constexpr size_t kLarge = 200000;
  std::atomic<int> wrong{0};
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    for (int round = 0; round < 20; ++round) {
      // The large call is still queued or running when the small one is issued, so the small
      // one must wait its turn; it then reads what the large one wrote.
      std::vector<int32_t> large(kLarge, rank + round);
      weftRequest_t request = nullptr;
      if (weftAllReduce(large.data(), large.data(), kLarge, weftInt32, weftSum, comm, &request) !=
          weftSuccess) {
        ++wrong;
        return;
      }
      int32_t small[2] = {rank, 1};
      if (weftAllReduce(small, small, 2, weftInt32, weftSum, comm, nullptr) != weftSuccess) ++wrong;
      if (weftWait(&request, 30000) != weftSuccess) ++wrong;
      if (large[kLarge - 1] != 0 + 1 + 2 + n * round) ++wrong;
      if (small[0] != 0 + 1 + 2 || small[1] != n) ++wrong;
    }
  });
  REQUIRE(init.empty());
  CHECK(wrong == 0);
}

// With no polling every wait goes straight to sleep, so flags are raised while peers fall asleep
// over and over. A lost wake-up leaves the sleeper to its once-a-second re-check, so a call that
// took most of a second is one. (The narrow window that shm publish()'s late fence closes is
// argued there; this many calls do not reliably hit it.) The ranks sum their counts of such
// calls in each round's all-reduce, and stop together at the first.
TEST_CASE("small calls wake peers that fall asleep as the flags go up", "[small_call]") {
  ScopedEnv noPolling("WEFT_SPIN_US", "0");
  constexpr int n = 3;
  constexpr int kRounds = 1500;
  constexpr auto kLostWakeUp = std::chrono::milliseconds(900);
  std::atomic<int> wrong{0};
  std::atomic<int> slowCalls{0};
  std::string first;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int rank) {
    int slow = 0;
    auto timed = [&](auto&& call) {
      const auto start = std::chrono::steady_clock::now();
      const weftResult_t result = call();
      if (std::chrono::steady_clock::now() - start >= kLostWakeUp) ++slow;
      return result == weftSuccess;
    };
    for (int round = 0; round < kRounds; ++round) {
      // One rank arrives late in turn, so that the others are asleep or falling asleep.
      if (rank == round % n) {
        volatile int spin = 0;
        for (int i = 0; i < (round % 7) * 500; ++i) spin = spin + 1;
      }
      int32_t sums[3] = {rank, round, slow};
      double value = rank == round % n ? round : -1.0;
      const bool good =
          timed([&] { return weftBarrier(comm, nullptr); }) &&
          timed([&] { return weftAllReduce(sums, sums, 3, weftInt32, weftSum, comm, nullptr); }) &&
          timed([&] {
            return weftBroadcast(&value, &value, 1, weftFloat64, round % n, comm, nullptr);
          });
      if ((!good || sums[0] != 0 + 1 + 2 || sums[1] != n * round || value != round) &&
          wrong.fetch_add(1) == 0) {
        first = "rank " + std::to_string(rank) + " round " + std::to_string(round) + ": " +
                weftGetLastError(comm);
      }
      if (!good || sums[2] > 0) {
        if (rank == 0) slowCalls = sums[2];
        break;
      }
    }
  });
  REQUIRE(init.empty());
  INFO(first);
  CHECK(wrong == 0);
  CHECK(slowCalls == 0);
}

TEST_CASE("small all-reduces stay exact where a forced algorithm or check mode applies",
          "[small_call]") {
  SECTION("WEFT_ALGO forces ring") {
    ScopedEnv forced("WEFT_ALGO", "allreduce=ring");
    checkSizesAndOps(3);
  }
  SECTION("WEFT_CHECK compares every call first") {
    ScopedEnv checking("WEFT_CHECK", "1");
    checkSizesAndOps(2);
  }
}

}  // namespace weft::test
