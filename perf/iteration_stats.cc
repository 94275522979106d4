#include "iteration_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "launch.h"
#include "report.h"
#include "watchdog.h"

namespace weft::perf {
namespace {

// nccl-tests' nearest-rank percentile: the ceil(n * percent / 100)-th smallest sample.
size_t percentileIndex(size_t n, size_t percent) {
  const size_t rank = (n * percent + 99) / 100;
  return std::min(n - 1, rank == 0 ? 0 : rank - 1);
}

}  // namespace

IterStats computeIterStats(const std::vector<double>& times) {
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  IterStats s;
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = sorted[n / 2];
  s.p95 = sorted[percentileIndex(n, 95)];
  s.p99 = sorted[percentileIndex(n, 99)];
  s.avg = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(n);
  double squares = 0;
  for (double t : sorted) squares += (t - s.avg) * (t - s.avg);
  s.stdev = std::sqrt(squares / double(n));
  return s;
}

IterationClock::IterationClock(int iters, Clock::time_point start)
    : start_(start), begins_(size_t(iters)), ends_(size_t(iters)) {}

void IterationClock::poll(weftRequest_t* requests, size_t slotsPerIter, int issued) {
  for (; nextIncomplete_ < issued; ++nextIncomplete_) {
    weftRequest_t* slots = requests + size_t(nextIncomplete_) * slotsPerIter;
    for (size_t s = 0; s < slotsPerIter; ++s) {
      int done = 1;
      if (slots[s] != nullptr) PERF_CHECK(weftTest(&slots[s], &done));
      if (!done) return;
    }
    markEnd(nextIncomplete_);
  }
}

void IterationClock::waitAll(weftRequest_t* requests, size_t slotsPerIter, int iters) {
  for (; nextIncomplete_ < iters; ++nextIncomplete_) {
    weftRequest_t* slots = requests + size_t(nextIncomplete_) * slotsPerIter;
    for (size_t s = 0; s < slotsPerIter; ++s) {
      if (slots[s] != nullptr) PERF_CHECK(weftWait(&slots[s], -1));
    }
    markEnd(nextIncomplete_);
  }
}

std::vector<double> IterationClock::secondsPerCall(int callsPerIter) const {
  std::vector<double> seconds(ends_.size());
  for (size_t i = 0; i < ends_.size(); ++i) {
    Clock::time_point begin = begins_[i];
    if (begin == Clock::time_point{}) begin = i == 0 ? start_ : ends_[i - 1];
    seconds[i] = std::chrono::duration<double>(ends_[i] - begin).count() / callsPerIter;
  }
  return seconds;
}

IterTimes combineIterTimes(weftComm_t comm, int nranks, int ranksPerProcess,
                           const std::vector<double>& local) {
  const size_t iters = local.size();
  std::vector<double> all(iters * size_t(nranks));
  {
    watchdog::Scope waiting;
    PERF_CHECK(weftAllGather(local.data(), all.data(), iters, weftFloat64, comm, nullptr));
  }
  // Rank r is thread r % ranksPerProcess of process r / ranksPerProcess (launch.h).
  const int processes = nranks / ranksPerProcess;
  std::vector<std::vector<double>> perProcess(size_t(processes), std::vector<double>(iters, 0));
  for (int r = 0; r < nranks; ++r) {
    std::vector<double>& row = perProcess[size_t(r / ranksPerProcess)];
    for (size_t i = 0; i < iters; ++i) row[i] = std::max(row[i], all[size_t(r) * iters + i]);
  }
  IterTimes combined;
  combined.max.assign(iters, 0);
  for (const std::vector<double>& row : perProcess) {
    for (size_t i = 0; i < iters; ++i) combined.max[i] = std::max(combined.max[i], row[i]);
  }
  if (processes > 1) combined.perProcess = std::move(perProcess);
  return combined;
}

void printIterStats(const IterStats& stats) {
  const std::string min = formatValue(stats.min * 1e6, 7);
  const std::string max = formatValue(stats.max * 1e6, 7);
  const std::string p99 = formatValue(stats.p99 * 1e6, 7);
  const std::string cv = formatValue(stats.cvPercent(), 7);
  std::printf("  %7s  %7s  %7s  %7s", min.c_str(), max.c_str(), p99.c_str(), cv.c_str());
  std::fflush(stdout);
}

}  // namespace weft::perf
