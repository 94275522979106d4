// weft's barrier in a loop: the mean time per blocking weftBarrier, averaged over ranks, after a
// warm-up. Open MPI's side is perf/baselines/mpi_allreduce_bench with MAX_BYTES 0
// (perf/small_messages.sh, COLL=barrier).
//   barrier_latency [iterations] [warm-up]      defaults 20000, 1000
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "weft/weft.h"

namespace {

int count(const char* text, const char* name) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > 100000000) {
    std::fprintf(stderr, "barrier_latency: %s must be a count from 1 to 1e8, not '%s'\n", name,
                 text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

bool check(weftResult_t result, weftComm_t comm, const char* what) {
  if (result == weftSuccess) return true;
  std::fprintf(stderr, "barrier_latency: %s: %s\n", what, weftGetLastError(comm));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? count(argv[1], "iterations") : 20000;
  const int warmup = argc > 2 ? count(argv[2], "warm-up") : 1000;
  weftComm_t comm = nullptr;
  if (!check(weftCommInitFromEnv(&comm, nullptr), nullptr, "init")) return 1;
  int rank = 0, nranks = 0;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &nranks);
  for (int i = 0; i < warmup; ++i) {
    if (!check(weftBarrier(comm, nullptr), comm, "barrier")) return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (!check(weftBarrier(comm, nullptr), comm, "barrier")) return 1;
  }
  double micros =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      iterations;
  double sum = 0;
  if (!check(weftAllReduce(&micros, &sum, 1, weftFloat64, weftSum, comm, nullptr), comm,
             "averaging")) {
    return 1;
  }
  if (rank == 0) std::printf("# barrier_us\n%.3f\n", sum / nranks);
  weftCommDestroy(comm);
  return 0;
}
