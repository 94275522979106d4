// Zero-copy buffers on thread ranks: every collective with plain, weftMemAlloc, registered and
// windowed buffers, alike and mixed across ranks (memory_checks.h), and the memory API's errors.
// Thread ranks share one process, so a peer maps this process's own memfds; the same checks run
// across processes under weftrun (processes.memory.*).
#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "multirank/check_matrix.h"
#include "multirank/memory_checks.h"
#include "multirank/rank_threads.h"
#include "scoped_env.h"

namespace weft::test {

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Runs the checks on n thread ranks; fails the current test with the first messages.
void checkOnThreads(int n, const MemoryCheckOptions& options) {
  std::mutex mutex;
  MemoryCheckResult total;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int) {
    MemoryCheckResult result = runMemoryChecks(comm, options);
    std::lock_guard<std::mutex> lock(mutex);
    total.calls += result.calls;
    total.failures += result.failures;
    total.messages.insert(total.messages.end(), result.messages.begin(), result.messages.end());
  });
  REQUIRE(init.empty());
  std::string messages;
  for (const auto& message : total.messages) messages += message + "\n";
  INFO(messages);
  CHECK(total.failures == 0);
  CHECK(total.calls > 0);
}

}  // namespace

TEST_CASE("every collective on plain and weftMemAlloc and registered and windowed buffers",
          "[memory]") {
  int n = GENERATE(1, 2, 3, 4);
  CAPTURE(n);
  if (skippedForRankCap(n)) return;
  // 1 MiB windows: the large count (1.25 MiB) spans several 512 KiB rounds of the direct
  // algorithms. (The process tests run 2.5 MiB over 2 MiB windows.) Under the sanitizers, which
  // run every byte 5-20x slower, 256 KiB windows give as many rounds with a quarter the bytes.
  ScopedEnv window("WEFT_SHM_WINDOW_BYTES", kSanitized ? "262144" : "1048576");
  checkOnThreads(n, MemoryCheckOptions{});
}

TEST_CASE("forced direct algorithms and non-blocking calls on every kind of buffer", "[memory]") {
  // The direct algorithms for every count, 1 and 7 included (some ranks' shares are empty), so
  // the zero-copy path runs wherever every buffer is shareable, whatever the tuner would choose.
  int n = GENERATE(2, 3, 4);
  bool nonBlocking = GENERATE(false, true);
  CAPTURE(n, nonBlocking);
  if (skippedForRankCap(n)) return;
  ScopedEnv window("WEFT_SHM_WINDOW_BYTES", "2097152");
  ScopedEnv forced("WEFT_ALGO",
                   "allreduce=shm_direct,broadcast=shm_direct,reduce=shm_direct,"
                   "allgather=shm_direct,reducescatter=shm_direct");
  MemoryCheckOptions options;
  options.counts = {1, 7, 25003};
  options.nonBlocking = nonBlocking;
  checkOnThreads(n, options);
}

TEST_CASE("the memory API's errors name the argument and leave the communicator usable",
          "[memory]") {
  int n = GENERATE(1, 2, 3);
  CAPTURE(n);
  std::mutex mutex;
  std::vector<std::string> failures;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int) {
    std::vector<std::string> mine = runMemoryErrorChecks(comm);
    std::lock_guard<std::mutex> lock(mutex);
    failures.insert(failures.end(), mine.begin(), mine.end());
  });
  REQUIRE(init.empty());
  std::string all;
  for (const auto& failure : failures) all += failure + "\n";
  INFO(all);
  CHECK(failures.empty());
}

TEST_CASE("more weftMemAlloc buffers than the peer mappings hold and grouped calls on them",
          "[memory]") {
  int n = GENERATE(2, 3);
  CAPTURE(n);
  std::mutex mutex;
  std::vector<std::string> failures;
  std::string init = runAsThreads(n, [&](weftComm_t comm, int) {
    std::vector<std::string> mine = runAllocationChurn(comm, 300);
    std::lock_guard<std::mutex> lock(mutex);
    failures.insert(failures.end(), mine.begin(), mine.end());
  });
  REQUIRE(init.empty());
  std::string all;
  for (const auto& failure : failures) all += failure + "\n";
  INFO(all);
  CHECK(failures.empty());
}

TEST_CASE("a communicator destroyed with registrations and windows releases them", "[memory]") {
  // Registrations and windows still held at weftCommDestroy go with the communicator; the
  // memory stays the caller's, usable and freeable. (No assertions on the rank threads: Catch2
  // is not thread-safe.)
  std::vector<void*> memory(2, nullptr);
  std::vector<std::string> results(2);
  std::string init = runAsThreads(2, [&](weftComm_t comm, int rank) {
    if (weftMemAlloc(&memory[rank], 1 << 16) != weftSuccess) {
      results[rank] = std::string("weftMemAlloc: ") + weftGetLastError(nullptr);
      return;
    }
    void* handle = nullptr;
    weftWindow_t window = nullptr;
    if (weftCommRegister(comm, memory[rank], 1 << 16, &handle) != weftSuccess ||
        weftCommWindowRegister(comm, memory[rank], 1 << 16, &window, WEFT_WIN_COLL_SYMMETRIC) !=
            weftSuccess) {
      results[rank] = weftGetLastError(comm);
    }
  });
  REQUIRE(init.empty());
  for (int rank = 0; rank < 2; ++rank) {
    CAPTURE(rank);
    CHECK(results[rank].empty());
    if (memory[rank] == nullptr) continue;
    static_cast<char*>(memory[rank])[100] = 1;
    CHECK(weftMemFree(memory[rank]) == weftSuccess);
  }
}

}  // namespace weft::test
