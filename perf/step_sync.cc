// A training step's gradient sync from C, without torch: each rank computes (a busy loop of CPU
// time, uneven across ranks and steps, as backward passes are), then calls a blocking in-place
// all-reduce of the gradient's bytes. Reports, over the steps after the warm-up, the time from
// the last rank's call (all have joined) to the first rank's return and to the last rank's
// return, on the machine's wall clock (ranks of one machine, emulated nodes included, share it).
// It separates what the all-reduce costs from what ranks that finished and went back to
// computing cost the ones still in it, where ranks outnumber cores (docs/PERFORMANCE.md, "DDP").
// Also the step period: the wall time per step from the last return of the warm-up's last step
// to the last return of the last one. With bytes 0 there is no all-reduce (a barrier ends each
// step instead), so the difference between the two periods is what the all-reduce adds to a
// step.
//   step_sync [compute_ms] [steps] [bytes]      defaults 2, 60, 562824 (the seed's gradient)
// Started like any weft job (weftrun, tests/cluster/cluster.sh, mpirun, srun, torchrun).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kWarmupSteps = 10;

double wallSeconds() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double cpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// CPU time, not wall time: ranks sharing cores each compute their own share, as backward does.
void compute(double seconds) {
  const double start = cpuSeconds();
  double sink = 0;
  while (cpuSeconds() - start < seconds) {
    for (int i = 0; i < 1000; ++i) sink += i;
    asm volatile("" : "+m"(sink));
  }
}

double parse(const char* text, const char* name, double low) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || value < low) {
    std::fprintf(stderr, "step_sync: %s must be a number >= %g, not '%s'\n", name, low, text);
    std::exit(2);
  }
  return value;
}

bool check(weftResult_t result, weftComm_t comm, const char* what) {
  if (result == weftSuccess) return true;
  std::fprintf(stderr, "step_sync: %s: %s\n", what, weftGetLastError(comm));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const double computeMs = argc > 1 ? parse(argv[1], "compute_ms", 0) : 2;
  const int steps = argc > 2 ? static_cast<int>(parse(argv[2], "steps", kWarmupSteps + 1)) : 60;
  const size_t bytes = argc > 3 ? static_cast<size_t>(parse(argv[3], "bytes", 0)) : 562824;
  weftComm_t comm = nullptr;
  if (!check(weftCommInitFromEnv(&comm, nullptr), nullptr, "init")) return 1;
  int rank = 0, nranks = 0;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &nranks);

  std::vector<float> gradient(bytes / sizeof(float), 1.0f);
  std::vector<double> mine(2 * static_cast<size_t>(steps));  // (call, return) per step
  for (int step = 0; step < steps; ++step) {
    // Up to 1.4x the base, in a pattern that moves the slowest rank from step to step.
    compute(computeMs * 1e-3 * (1 + 0.1 * ((rank * 7 + step) % 5)));
    mine[2 * step] = wallSeconds();
    const weftResult_t result =
        bytes == 0 ? weftBarrier(comm, nullptr)
                   : weftAllReduce(gradient.data(), gradient.data(), gradient.size(), weftFloat32,
                                   weftSum, comm, nullptr);
    if (!check(result, comm, bytes == 0 ? "barrier" : "all-reduce")) return 1;
    mine[2 * step + 1] = wallSeconds();
    std::fill(gradient.begin(), gradient.end(), 1.0f);
  }
  std::vector<double> all(mine.size() * static_cast<size_t>(nranks));
  if (!check(weftAllGather(mine.data(), all.data(), mine.size(), weftFloat64, comm, nullptr), comm,
             "gathering the timestamps")) {
    return 1;
  }
  if (rank == 0) {
    double toFirst = 0, toLast = 0, warmupEnd = 0, end = 0;
    for (int step = kWarmupSteps - 1; step < steps; ++step) {
      double joined = 0, first = 1e300, last = 0;
      for (int r = 0; r < nranks; ++r) {
        const double* times = &all[static_cast<size_t>(r) * mine.size() + 2 * step];
        joined = std::max(joined, times[0]);
        first = std::min(first, times[1]);
        last = std::max(last, times[1]);
      }
      if (step == kWarmupSteps - 1) {
        warmupEnd = last;
        continue;
      }
      toFirst += first - joined;
      toLast += last - joined;
      end = last;
    }
    const int measured = steps - kWarmupSteps;
    std::printf(
        "step_sync: %d ranks, %zu bytes, compute %.2f ms per step (x1.0-1.4): from the "
        "last call to the first return %.3f ms, to the last return %.3f ms; step period "
        "%.3f ms (means of %d steps)\n",
        nranks, bytes, computeMs, toFirst / measured * 1e3, toLast / measured * 1e3,
        (end - warmupEnd) / measured * 1e3, measured);
  }
  weftCommDestroy(comm);
  return 0;
}
