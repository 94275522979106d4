// -I 1 / -K: nccl-tests' per-iteration timing. Each timed iteration (m calls) gets its own time,
// the times are combined over ranks as nccl-tests combines them (the largest, per iteration), and
// every row variant gains the summary columns i_min, i_max, i_p99 and i_cv%. nccl-tests takes the
// times from CUDA events on the stream; weft's calls are host calls, so the host's steady clock
// marks when each iteration ended (for -z 0, when its requests were seen complete).
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "weft/weft.h"

namespace weft::perf {

// Summary of the per-iteration times (seconds) of one variant, as nccl-tests computes it: the
// median is the upper one, p95 and p99 are nearest-rank percentiles (so p99 is the maximum below
// 100 samples), the standard deviation is the population one.
struct IterStats {
  double min = 0;
  double max = 0;
  double avg = 0;
  double p50 = 0;
  double p95 = 0;
  double p99 = 0;
  double stdev = 0;
  double cvPercent() const { return avg > 0 ? stdev / avg * 100 : 0; }
};

// `times` must not be empty.
IterStats computeIterStats(const std::vector<double>& times);

// When each iteration of one timed batch began and ended. By default an iteration begins where the
// previous one ended (the first where the batch began), as nccl-tests' shared events do; -z 3
// marks its begins to leave the barriers out, as nccl-tests' paired events do.
class IterationClock {
 public:
  using Clock = std::chrono::steady_clock;

  IterationClock(int iters, Clock::time_point start);

  void markBegin(int iter) { begins_[size_t(iter)] = Clock::now(); }
  void markEnd(int iter) { ends_[size_t(iter)] = Clock::now(); }

  // -z 0: calls complete in issue order, so iteration i ends when its requests (slotsPerIter
  // from requests + i * slotsPerIter; NULL ones were never filled or are already complete) are
  // all complete. poll() tests, without blocking, the iterations below `issued` not yet seen
  // complete; waitAll() waits for every remaining one of the `iters`.
  void poll(weftRequest_t* requests, size_t slotsPerIter, int issued);
  void waitAll(weftRequest_t* requests, size_t slotsPerIter, int iters);

  // Seconds per call of every iteration (an iteration holds callsPerIter calls, -m).
  std::vector<double> secondsPerCall(int callsPerIter) const;

 private:
  Clock::time_point start_;
  std::vector<Clock::time_point> begins_;  // default (epoch): the previous iteration's end
  std::vector<Clock::time_point> ends_;
  int nextIncomplete_ = 0;
};

// Every rank's per-iteration times, combined on every rank (a collective over comm).
struct IterTimes {
  std::vector<double> max;                      // per iteration, the largest over all ranks
  std::vector<std::vector<double>> perProcess;  // per process, the largest over its threads;
                                                // empty with one process (as nccl-tests)
};
IterTimes combineIterTimes(weftComm_t comm, int nranks, int ranksPerProcess,
                           const std::vector<double>& local);

// The four text columns after a variant's #wrong: "  i_min  i_max  i_p99  i_cv%" (microseconds,
// and percent for i_cv%).
void printIterStats(const IterStats& stats);

}  // namespace weft::perf
