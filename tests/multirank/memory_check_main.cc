// The zero-copy buffer checks as a program: run it under weftrun to check weftMemAlloc,
// weftCommRegister and symmetric windows across real processes (where peers map each other's
// memory). Exits non-zero on any mismatch or error.
//
//   weft_memory_check                 the memory API's errors, many allocations at once, then
//                                     every collective with every buffer pattern
//                                     (memory_checks.h)
//   weft_memory_check --quick         every collective with three buffer patterns (all
//                                     weftMemAlloc, all windowed, mixed)
//   weft_memory_check --window-loop N N verified calls on buffers in a symmetric window (for
//                                     kill tests)
// WEFT_TEST_UNDUMPABLE=1 makes the process refuse to be read by its peers (PR_SET_DUMPABLE, and
// no CAP_SYS_PTRACE): neither process_vm_readv nor /proc/<pid>/fd reach it, so its peers cannot
// map its weftMemAlloc memory; every call must still complete correctly.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "multirank/memory_checks.h"
#include "multirank/unreadable_process.h"

int main(int argc, char** argv) {
  const char* undumpable = std::getenv("WEFT_TEST_UNDUMPABLE");
  const bool unreachable = undumpable && *undumpable == '1';
  if (unreachable) weft::test::refuseCrossMemoryReads();
  weftComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "init failed: %s\n", weftGetLastError(nullptr));
    return 2;
  }
  int rank = 0;
  weftCommUserRank(comm, &rank);
  const auto start = std::chrono::steady_clock::now();
  long long failures = 0;
  int calls = 0;
  // Ranks map each other's memory over shared memory only, and only where they may.
  const char* transport = std::getenv("WEFT_TRANSPORT");
  const bool sharedMemory = !unreachable && (transport == nullptr || *transport == '\0' ||
                                             std::strcmp(transport, "shm") == 0);
  if (argc > 1 && std::strcmp(argv[1], "--quick") == 0) {
    weft::test::MemoryCheckOptions options;
    options.expectZeroCopy = sharedMemory;
    options.patterns.clear();
    for (const weft::test::ModePattern& pattern : weft::test::allModePatterns()) {
      const std::string name = pattern.name;
      if (name == "all-memalloc" || name == "all-window" || name == "mixed") {
        options.patterns.push_back(pattern);
      }
    }
    weft::test::MemoryCheckResult result = weft::test::runMemoryChecks(comm, options);
    for (const auto& message : result.messages) std::fprintf(stderr, "%s\n", message.c_str());
    failures += result.failures;
    calls += result.calls;
  } else if (argc > 2 && std::strcmp(argv[1], "--window-loop") == 0) {
    weft::test::MemoryCheckResult result = weft::test::runWindowLoop(comm, std::atoi(argv[2]));
    for (const auto& message : result.messages) std::fprintf(stderr, "%s\n", message.c_str());
    failures += result.failures;
    calls += result.calls;
  } else {
    std::vector<std::string> errors = weft::test::runMemoryErrorChecks(comm);
    for (const auto& message : errors) std::fprintf(stderr, "%s\n", message.c_str());
    failures += static_cast<long long>(errors.size());
    std::vector<std::string> churn = weft::test::runAllocationChurn(comm, 300);
    for (const auto& message : churn) std::fprintf(stderr, "%s\n", message.c_str());
    failures += static_cast<long long>(churn.size());
    weft::test::MemoryCheckOptions all;
    all.expectZeroCopy = sharedMemory;
    weft::test::MemoryCheckResult result = weft::test::runMemoryChecks(comm, all);
    for (const auto& message : result.messages) std::fprintf(stderr, "%s\n", message.c_str());
    failures += result.failures;
    calls += result.calls;
    // A communicator split off in reverse rank order: its ranks' local indices, ranks and
    // processes no longer line up with the parent's.
    weftComm_t reversed = nullptr;
    if (weftCommSplit(comm, 0, -rank, &reversed, nullptr) != weftSuccess) {
      std::fprintf(stderr, "rank %d: weftCommSplit: %s\n", rank, weftGetLastError(comm));
      ++failures;
    } else {
      weft::test::MemoryCheckOptions options;
      options.counts = {7, 25003};
      options.expectZeroCopy = sharedMemory;
      weft::test::MemoryCheckResult split = weft::test::runMemoryChecks(reversed, options);
      for (const auto& message : split.messages) {
        std::fprintf(stderr, "reversed split: %s\n", message.c_str());
      }
      failures += split.failures;
      calls += split.calls;
      weftCommDestroy(reversed);
    }
  }
  // Every rank's verdict counts: sum the failures so each rank exits with the same status.
  long long total = 0;
  weftResult_t summed = weftAllReduce(&failures, &total, 1, weftInt64, weftSum, comm, nullptr);
  if (rank == 0) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (summed == weftSuccess) {
      std::printf("%d calls per rank in %.2f s, %lld failures over all ranks\n", calls, seconds,
                  total);
    } else {
      std::printf("%d calls per rank in %.2f s; the failures could not be summed: %s\n", calls,
                  seconds, weftGetLastError(comm));
    }
  }
  weftCommDestroy(comm);
  return summed == weftSuccess && total == 0 ? 0 : 1;
}
