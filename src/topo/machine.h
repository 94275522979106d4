// What one machine looks like to weft: cores, NUMA domains and network devices with their NUMA
// locality, read through hwloc when the build has it. Tests and studies describe machines that
// are not this one with an hwloc XML file or a synthetic description (WEFT_TOPO).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace weft::topo {

struct MachineInfo {
  int cores = 0;            // physical cores this process may run on
  int hardwareThreads = 0;  // processing units this process may run on
  int numaDomains = 1;
  int packages = 1;
  std::vector<std::string> nics;  // "eth0 (NUMA 0)"
  // The CPUs (kernel numbers) this process may run on, ordered for spreading processes: one
  // thread of every core before a second thread of any. For a described machine (WEFT_TOPO)
  // its numbers, which binding uses only where this kernel lets the process run on them.
  std::vector<int> cpusByCore;
  std::string source;  // "hwloc", "hwloc synthetic: ...", "hwloc XML: ...", "sysconf"
  std::string summary()
      const;  // "2 cores (4 threads), 1 package, 1 NUMA domain, NICs: eth0 (NUMA 0)"
};

// `description`: "" for this machine, a path to an hwloc XML export, or an hwloc synthetic
// description such as "pack:2 numa:2 core:4 pu:2". Without hwloc only "" works (from sysconf).
Status describeMachine(const std::string& description, MachineInfo* out);

// This machine, read once per process (WEFT_TOPO applies); falls back to sysconf on errors.
const MachineInfo& thisMachine();

}  // namespace weft::topo
