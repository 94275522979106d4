// Where the ranks come from. Processes come from a launcher (weftrun, torchrun, Open MPI's mpirun,
// Slurm's srun) through weftCommInitFromEnv, or there is one lone process; each process then runs
// -t threads, one rank each: process p's thread t is rank p * nthreads + t, as in nccl-tests.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "report.h"
#include "weft/weft.h"

namespace weft::perf {

struct ProcessSetup {
  int proc = 0;
  int nprocs = 1;
  // The communicator of the launcher's processes, or nullptr without a launcher.
  weftComm_t launcherComm = nullptr;
  // With one thread per process the launcher's communicator is the rank communicator itself.
  bool reuseLauncherComm = false;
  // Otherwise the rank communicator's id: made by process 0, broadcast over launcherComm.
  weftUniqueId id{};
};

void setupProcess(const Options& options, const char* programName, ProcessSetup* setup);
// Collective over every thread of every process: the communicator of thread `thread`.
weftComm_t createRankComm(const ProcessSetup& setup, int nThreads, int thread,
                          const char* programName);
// Destroys what setupProcess created that the ranks did not take over.
void finishProcess(ProcessSetup* setup);

// Collective over comm: every rank's pid and host, in rank order.
std::vector<RankInfo> gatherRankInfo(weftComm_t comm, int rank, int nranks);

// The host name up to its first dot, as nccl-tests prints it.
std::string shortHostName();

// Prints "<host>: Test weft failure <file>:<line> '<error> / <last error>'" and exits with 1.
[[noreturn]] void failWeft(weftResult_t result, const char* call, const char* file, int line);

}  // namespace weft::perf

// Every weft call of the tools goes through this: any failure ends the process (peers then see
// the connection drop), which is what a benchmark wants and what nccl-tests does.
#define PERF_CHECK(call)                                              \
  do {                                                                \
    const weftResult_t perfResult_ = (call);                          \
    if (perfResult_ != weftSuccess)                                   \
      ::weft::perf::failWeft(perfResult_, #call, __FILE__, __LINE__); \
  } while (0)
