// Binding a process to one CPU, as `mpirun --bind-to core` does. Where a machine's ranks
// outnumber its CPUs, ranks the kernel may move share cores unevenly from run to run, and a
// small collective's time follows that placement (docs/PERFORMANCE.md, "Binding ranks to
// cores"); ranks that stay put take turns the same way every run.
#pragma once

#include <vector>

#include "base/status.h"

namespace weft::topo {

// The CPUs of `preferred` (an order such as MachineInfo::cpusByCore) that are in `allowed`, in
// the preferred order; `allowed` in its own order when they have none in common.
std::vector<int> bindingCandidates(const std::vector<int>& preferred,
                                   const std::vector<int>& allowed);

// The CPUs this process may run on now (its affinity), in increasing order.
std::vector<int> allowedCpus();

// Moves every thread of this process to `cpu`; threads started later inherit it from theirs.
// Fails, naming the thread, if the kernel refuses.
Status bindProcessToCpu(int cpu);

}  // namespace weft::topo
