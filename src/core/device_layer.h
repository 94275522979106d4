// The hook through which the GPU layer (src/cuda, above core) runs the operations that touch a
// GPU: calls on device buffers and stream-ordered calls. Core never includes the GPU layer. The
// first call with device buffers or a stream makes the communicator's DeviceLayer (the GPU
// layer's GpuState); core hands it those operations together with its own host path, which the
// layer runs on staged copies or around its device-direct collectives.
#pragma once

#include <functional>

#include "base/status.h"
#include "core/executor.h"

struct weftComm;

namespace weft {

class DeviceLayer {
 public:
  using HostRunner = std::function<Status(const Op&)>;
  virtual ~DeviceLayer() = default;
  virtual Status run(weftComm* comm, const Op& op, const HostRunner& runHost) = 0;
};

// True when op goes through the DeviceLayer: a call on device buffers or a stream to order
// against.
inline bool needsDevice(const Op& op) {
  if (op.streamOrder) return true;
  for (const CollArgs& call : op.calls()) {
    if (call.deviceBuffers) return true;
  }
  return false;
}

}  // namespace weft
