// The correctness matrix as a program: run it under weftrun (or torchrun, mpirun) to check
// every collective across real processes. Exits non-zero on any mismatch or error.
#include <cstdio>

#include "multirank/coll_matrix.h"

int main() {
  weftComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "init failed: %s\n", weftGetLastError(nullptr));
    return 2;
  }
  int rank = 0;
  weftCommUserRank(comm, &rank);
  weft::test::MatrixResult result = weft::test::runMatrix(comm, weft::test::MatrixOptions{});
  for (const auto& message : result.messages) std::fprintf(stderr, "%s\n", message.c_str());
  // Every rank's verdict counts: sum the failures so each rank exits with the same status.
  long long failures = result.failures;
  long long total = 0;
  weftResult_t summed = weftAllReduce(&failures, &total, 1, weftInt64, weftSum, comm, nullptr);
  if (rank == 0) {
    std::printf("%d calls per rank, %lld failures over all ranks\n", result.calls, total);
  }
  weftCommDestroy(comm);
  return summed == weftSuccess && total == 0 ? 0 : 1;
}
