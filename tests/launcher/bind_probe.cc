// Prints where init left this process: the CPUs of the main thread and of a thread started
// before init (binding must move threads the program already had), as
//   "rank R: main CPUS; earlier thread CPUS"  with CPUS a comma-separated list.
// bind_test.sh reads these lines.
#include <pthread.h>
#include <sched.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "weft/weft.h"

namespace {

std::string cpusOf(pthread_t thread) {
  cpu_set_t set;
  if (pthread_getaffinity_np(thread, sizeof(set), &set) != 0) return "?";
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (!text.empty()) text += ",";
    text += std::to_string(cpu);
  }
  return text;
}

}  // namespace

int main() {
  std::mutex mutex;
  std::condition_variable released;
  bool done = false;
  std::thread earlier([&] {
    std::unique_lock<std::mutex> lock(mutex);
    released.wait(lock, [&] { return done; });
  });
  weftComm_t comm = nullptr;
  weftResult_t result = weftCommInitFromEnv(&comm, nullptr);
  int rank = -1;
  if (result == weftSuccess) result = weftCommUserRank(comm, &rank);
  if (result == weftSuccess) {
    std::printf("rank %d: main %s; earlier thread %s\n", rank, cpusOf(pthread_self()).c_str(),
                cpusOf(earlier.native_handle()).c_str());
    std::fflush(stdout);
    // Every rank has printed before any leaves.
    result = weftBarrier(comm, nullptr);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  released.notify_one();
  earlier.join();
  if (comm != nullptr) weftCommDestroy(comm);
  if (result != weftSuccess) {
    std::fprintf(stderr, "bind_probe: %s (%s)\n", weftGetErrorString(result),
                 weftGetLastError(nullptr));
    return 1;
  }
  return 0;
}
