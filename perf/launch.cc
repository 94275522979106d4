#include "launch.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "watchdog.h"

namespace weft::perf {
namespace {

// The bytes each rank contributes to gatherRankInfo.
struct WireRankInfo {
  int32_t rank;
  int32_t pid;
  char host[56];
};
static_assert(sizeof(WireRankInfo) == 64);

weftConfig_t commConfig(const char* programName) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.commName = programName;  // argv-derived: outlives the communicators
  return config;
}

}  // namespace

void setupProcess(const Options& options, const char* programName, ProcessSetup* setup) {
  const weftConfig_t config = commConfig(programName);
  // The library reads the launcher's variables: it joins their ranks, makes a communicator of
  // one when there are none, and refuses variables that claim several ranks it cannot join.
  watchdog::Scope waiting;
  PERF_CHECK(weftCommInitFromEnv(&setup->launcherComm, &config));
  watchdog::addComm(setup->launcherComm);
  PERF_CHECK(weftCommUserRank(setup->launcherComm, &setup->proc));
  PERF_CHECK(weftCommCount(setup->launcherComm, &setup->nprocs));
  if (options.nThreads == 1) {
    setup->reuseLauncherComm = true;
    return;
  }
  // Threads need a communicator of their own size: process 0 makes its id and sends it out
  // over the launcher's communicator, as nccl-tests does over MPI.
  if (setup->proc == 0) PERF_CHECK(weftGetUniqueId(&setup->id));
  PERF_CHECK(weftBroadcast(&setup->id, &setup->id, sizeof(setup->id), weftUint8, 0,
                           setup->launcherComm, nullptr));
}

weftComm_t createRankComm(const ProcessSetup& setup, int nThreads, int thread,
                          const char* programName) {
  if (setup.reuseLauncherComm) return setup.launcherComm;
  const weftConfig_t config = commConfig(programName);
  weftComm_t comm = nullptr;
  watchdog::Scope waiting;
  PERF_CHECK(weftCommInitRankConfig(&comm, setup.nprocs * nThreads, setup.id,
                                    setup.proc * nThreads + thread, &config));
  watchdog::addComm(comm);
  return comm;
}

void finishProcess(ProcessSetup* setup) {
  if (setup->launcherComm == nullptr) return;
  watchdog::removeComm(setup->launcherComm);
  PERF_CHECK(weftCommDestroy(setup->launcherComm));
  setup->launcherComm = nullptr;
}

std::vector<RankInfo> gatherRankInfo(weftComm_t comm, int rank, int nranks) {
  WireRankInfo mine{};
  mine.rank = rank;
  mine.pid = int32_t(getpid());
  std::snprintf(mine.host, sizeof(mine.host), "%s", shortHostName().c_str());
  std::vector<WireRankInfo> all(static_cast<size_t>(nranks));
  {
    watchdog::Scope waiting;
    PERF_CHECK(weftAllGather(&mine, all.data(), sizeof(mine), weftUint8, comm, nullptr));
  }
  std::vector<RankInfo> infos;
  for (int r = 0; r < nranks; ++r) {
    RankInfo info;
    info.rank = all[r].rank;
    info.pid = all[r].pid;
    info.host.assign(all[r].host, strnlen(all[r].host, sizeof(all[r].host)));
    // The "device" of a CPU rank: its index among the ranks on the same host.
    for (int q = 0; q < r; ++q) info.device += infos[q].host == info.host;
    infos.push_back(info);
  }
  return infos;
}

std::string shortHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  std::string host(name);
  return host.substr(0, host.find('.'));
}

void failWeft(weftResult_t result, const char* call, const char* file, int line) {
  if (watchdog::fired()) {
    // The monitor aborted this call and is about to end the process; its message says why.
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const char* slash = std::strrchr(file, '/');
  std::printf("%s: Test weft failure %s:%d %s '%s / %s'\n", shortHostName().c_str(),
              slash ? slash + 1 : file, line, call, weftGetErrorString(result),
              weftGetLastError(nullptr));
  std::fflush(stdout);
  std::fflush(stderr);
  // Other rank threads of this process may be blocked in weft: leave without running destructors.
  _exit(1);
}

}  // namespace weft::perf
