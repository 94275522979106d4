// What init costs a process, per rank: wall time of init plus one checked 8-byte all-reduce, and
// the file descriptors, threads and resident memory the process holds afterwards beyond what it
// held before. One line per process:
//
//   init_footprint -t N     N ranks as threads of this process (the rendezvous is in-process)
//   weftrun -n N init_footprint
//                           one rank per process, initialised from the launcher's environment
//
//   footprint ranks=N pid=P init_s=S fds=F threads=T rss_kb=R wrong=W
//
// F, T and R are the process's growth over the baseline taken before init; perf/init_scale.sh
// divides them by the ranks the process runs.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

struct Usage {
  long fds = 0;
  long threads = 0;
  long rssKb = 0;
};

Usage usageNow() {
  Usage usage;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* entry = readdir(dir)) usage.fds += entry->d_name[0] != '.';
    closedir(dir);
    --usage.fds;  // the directory's own descriptor
  }
  if (FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), status)) {
      std::sscanf(line, "Threads: %ld", &usage.threads);
      std::sscanf(line, "VmRSS: %ld", &usage.rssKb);
    }
    std::fclose(status);
  }
  return usage;
}

// One rank's part after init: an all-reduce whose result is known. Returns the wrong elements.
int checkedAllReduce(weftComm_t comm) {
  int rank = 0, nranks = 0;
  if (weftCommUserRank(comm, &rank) != weftSuccess || weftCommCount(comm, &nranks) != weftSuccess) {
    return 2;
  }
  int32_t values[2] = {rank, 1};
  if (weftAllReduce(values, values, 2, weftInt32, weftSum, comm, nullptr) != weftSuccess) return 2;
  const int32_t wantSum = static_cast<int32_t>(int64_t(nranks) * (nranks - 1) / 2);
  return (values[0] != wantSum) + (values[1] != nranks);
}

void report(int ranks, double seconds, const Usage& before, const Usage& after, int wrong) {
  std::printf("footprint ranks=%d pid=%d init_s=%.3f fds=%ld threads=%ld rss_kb=%ld wrong=%d\n",
              ranks, static_cast<int>(getpid()), seconds, after.fds - before.fds,
              after.threads - before.threads, after.rssKb - before.rssKb, wrong);
  std::fflush(stdout);
}

int runThreads(int nranks) {
  const Usage before = usageNow();
  const auto start = std::chrono::steady_clock::now();
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) return 1;
  std::vector<weftComm_t> comms(nranks, nullptr);
  std::vector<int> wrong(nranks, 0);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      if (weftCommInitRank(&comms[rank], nranks, id, rank) != weftSuccess) {
        std::fprintf(stderr, "init_footprint: rank %d: %s\n", rank, weftGetLastError(nullptr));
        wrong[rank] = 1;
        return;
      }
      wrong[rank] = checkedAllReduce(comms[rank]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int totalWrong = 0;
  for (int w : wrong) totalWrong += w;
  report(nranks, seconds, before, usageNow(), totalWrong);
  for (weftComm_t comm : comms) weftCommDestroy(comm);
  return totalWrong == 0 ? 0 : 1;
}

int runProcess() {
  const Usage before = usageNow();
  const auto start = std::chrono::steady_clock::now();
  weftComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "init_footprint: %s\n", weftGetLastError(nullptr));
    return 1;
  }
  const int wrong = checkedAllReduce(comm);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report(1, seconds, before, usageNow(), wrong);
  weftCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "-t") == 0) {
    const int nranks = std::atoi(argv[2]);
    if (nranks < 1) {
      std::fprintf(stderr, "init_footprint: -t needs a positive number of ranks\n");
      return 2;
    }
    return runThreads(nranks);
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: init_footprint [-t THREAD_RANKS]\n");
    return 2;
  }
  return runProcess();
}
