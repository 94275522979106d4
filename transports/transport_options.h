// Every transport's settings, from the communicator's config and the environment. The wiring
// (wiring.h) hands each transport its part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {

struct TransportOptions {
  std::string forced;  // WEFT_TRANSPORT or config.transport: "" (automatic), tcp, shm or rdma
  // tcp
  int socketsPerPeer = 1;      // WEFT_NSOCKS; a pair uses the smaller of its two ends' values
  bool connectAtInit = false;  // WEFT_RUNTIME_CONNECT=0
  // shm
  size_t shmWindowBytes = 8 << 20;           // WEFT_SHM_WINDOW_BYTES: per rank
  size_t shmCrossMemoryMinBytes = 64 << 10;  // WEFT_SHM_CMA_MIN_BYTES; 0 turns single-copy off
  // rdma
  std::string ibHca;  // WEFT_IB_HCA
  int ibGidIndex = -1;
  uint32_t rdmaSlots = 16;
  uint32_t rdmaSlotBytes = 64 << 10;
  size_t rdmaZeroCopyMinBytes = 64 << 10;
  size_t rdmaRegistrationCacheBytes = size_t{1} << 30;
};

// Checks a forced transport's name against what this build has; errors name `what` (the
// variable or config field it came from).
Status checkTransportName(const std::string& name, const char* what);
// The transports' environment variables on top of *options (which holds the config's
// values); errors name the variable.
Status applyTransportEnvironment(TransportOptions* options);

}  // namespace weft
