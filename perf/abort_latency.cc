// How long weftCommAbort takes to release a call blocked on the communicator: two ranks as
// threads, rank 1 never joins the all-reduce, and another thread aborts rank 0's communicator
// 100 ms into the wait. Prints the release time (abort called -> all-reduce returned) over the
// trials. docs/RELIABILITY.md quotes it; the promise is 100 ms.
//   abort_latency [trials]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

using Clock = std::chrono::steady_clock;

// One trial: returns the release time in milliseconds, or -1 on an unexpected result.
double releaseMs() {
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) return -1;
  weftComm_t comms[2] = {nullptr, nullptr};
  std::thread second([&] { weftCommInitRank(&comms[1], 2, id, 1); });
  weftResult_t joined = weftCommInitRank(&comms[0], 2, id, 0);
  second.join();
  if (joined != weftSuccess || comms[1] == nullptr) return -1;
  Clock::time_point abortAt;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    abortAt = Clock::now();
    weftCommAbort(comms[0]);
  });
  float value = 1;
  weftResult_t result = weftAllReduce(&value, &value, 1, weftFloat32, weftSum, comms[0], nullptr);
  const Clock::time_point released = Clock::now();
  aborter.join();
  weftCommAbort(comms[1]);
  if (result != weftAborted) return -1;
  return std::chrono::duration<double, std::milli>(released - abortAt).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  std::vector<double> times;
  for (int i = 0; i < trials; ++i) {
    double ms = releaseMs();
    if (ms < 0) {
      std::fprintf(stderr, "trial %d: the blocked call did not return weftAborted\n", i);
      return 1;
    }
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "abort released a blocked all-reduce in %.3f ms (min), %.3f ms (median), "
      "%.3f ms (max) over %d trials\n",
      times.front(), times[times.size() / 2], times.back(), trials);
  return 0;
}
