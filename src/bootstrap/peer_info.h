// What each rank tells the others at init (through the bootstrap's allgather).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {

struct PeerInfo {
  int rank = 0;
  uint64_t hostId = 0;
  uint64_t machineId = 0;  // the running kernel (boot id): ranks that share CPUs, whatever
                           // their host names (containers, emulated nodes, WEFT_HOSTID)
  int32_t pid = 0;
  uint64_t startTicks = 0;  // the process's start time (topo/process_state.h): with pid and
                            // machineId, which process on that machine this rank is
  int32_t cores = 1;        // hardware threads this rank may run on (the tuner's CPU sharing)
  std::string hostName;
  std::string tcpAddress;  // what the tcp transport's listen() published ("" if none)
  std::string shmAddress;  // what the shm transport's listen() published ("" if none)

  std::string describe() const;  // "rank 3 (host:pid 1234)"
};

std::string encodePeerInfo(const PeerInfo& info);
// Rejects truncated or oversized input with weftInvalidUsage.
Status decodePeerInfo(const std::string& bytes, PeerInfo* out);

}  // namespace weft
