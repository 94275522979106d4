#include "topo/cpu_binding.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace weft::topo {

std::vector<int> bindingCandidates(const std::vector<int>& preferred,
                                   const std::vector<int>& allowed) {
  std::vector<int> candidates;
  for (int cpu : preferred) {
    if (std::find(allowed.begin(), allowed.end(), cpu) != allowed.end()) {
      candidates.push_back(cpu);
    }
  }
  return candidates.empty() ? allowed : candidates;
}

std::vector<int> allowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

Status bindProcessToCpu(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return invalidArgument("cpu " + std::to_string(cpu) + " is outside the kernel's CPU set");
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // sched_setaffinity binds one thread; a library initialised after its host program started
  // threads (torch's pools, the program's own) must move them too, or they keep the old mask.
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      return systemError("sched_setaffinity(cpu " + std::to_string(cpu) + ")", errno);
    }
    return Status::ok();
  }
  Status status = Status::ok();
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the directory stream is this call's own.
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    auto tid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    // A thread that ended since the listing is no longer there to bind.
    if (sched_setaffinity(tid, sizeof(set), &set) != 0 && errno != ESRCH && status.isOk()) {
      status = systemError(
          "sched_setaffinity(thread " + std::to_string(tid) + ", cpu " + std::to_string(cpu) + ")",
          errno);
    }
  }
  closedir(tasks);
  return status;
}

}  // namespace weft::topo
