// The correctness matrix as a program: run it under weftrun (or torchrun, mpirun) to check
// every collective across real processes. Exits non-zero on any mismatch or error.
//
//   weft_coll_check                 the whole matrix
//   weft_coll_check --random N [SEED] [MAX_COUNT]
//                                   N random calls (the same on every rank), each verified
//   weft_coll_check --soak N [SEED] [MAX_COUNT]
//                                   the same, and the resident memory at the end must be within
//                                   10 % of its value after the first tenth of the calls
// WEFT_TEST_UNDUMPABLE=1 makes the process refuse to be read by its peers (PR_SET_DUMPABLE),
// which forces the shm transport's fallback from single-copy reads to copies through shared
// memory.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "multirank/coll_matrix.h"
#include "multirank/unreadable_process.h"

namespace {

// VmRSS of this process in KiB, from /proc/self/status.
long residentKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* undumpable = std::getenv("WEFT_TEST_UNDUMPABLE");
      undumpable && *undumpable == '1') {
    weft::test::refuseCrossMemoryReads();
  }
  weftComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "init failed: %s\n", weftGetLastError(nullptr));
    return 2;
  }
  int rank = 0;
  weftCommUserRank(comm, &rank);
  weft::test::MatrixResult result;
  const bool soak = argc > 2 && std::strcmp(argv[1], "--soak") == 0;
  long warmKib = -1, endKib = -1;
  if (argc > 2 && (soak || std::strcmp(argv[1], "--random") == 0)) {
    int iterations = std::atoi(argv[2]);
    uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
    size_t maxCount = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 4096;
    weft::test::MatrixOptions options;
    if (soak) {
      options.afterCall = [&](int calls) {
        if (calls == std::max(1, iterations / 10)) warmKib = residentKib();
      };
    }
    result = weft::test::runRandomCalls(comm, options, seed, iterations, maxCount);
    endKib = residentKib();
  } else {
    result = weft::test::runMatrix(comm, weft::test::MatrixOptions{});
  }
  for (const auto& message : result.messages) std::fprintf(stderr, "%s\n", message.c_str());
  // Every rank's verdict counts: sum the failures so each rank exits with the same status.
  long long failures = result.failures;
  if (soak) {
    std::fprintf(stderr, "rank %d: resident memory %ld KiB after warm-up, %ld KiB at the end\n",
                 rank, warmKib, endKib);
    if (warmKib <= 0 || endKib > warmKib + warmKib / 10) {
      std::fprintf(stderr, "rank %d: resident memory grew by more than 10 %%\n", rank);
      ++failures;
    }
  }
  long long total = 0;
  weftResult_t summed = weftAllReduce(&failures, &total, 1, weftInt64, weftSum, comm, nullptr);
  if (rank == 0) {
    std::printf("%d calls per rank, %lld failures over all ranks\n", result.calls, total);
  }
  weftCommDestroy(comm);
  return summed == weftSuccess && total == 0 ? 0 : 1;
}
