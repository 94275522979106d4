// The GPU side of one operation (device_op.h): the communicator's GPU made current on the
// executing thread, its stream and events, bounded waits on them, and the thread's own GPU
// restored afterwards (an operation may run on a caller's thread that is helping the executor).
#pragma once

#include <string>

#include "base/deadline.h"
#include "core/comm.h"
#include "cuda/gpu_state.h"

namespace weft::device {

// Polls until the event's work is done, within the deadline; ends early when the communicator
// fails or is aborted. `what` starts the error messages.
Status waitForEvent(weftComm* comm, DeviceApi* api, Event event, const Deadline& deadline,
                    const std::string& what);

class DeviceScope {
 public:
  DeviceScope(weftComm* comm, const Deadline& deadline) : comm_(comm), deadline_(deadline) {}
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  Status enter();
  GpuState* gpu() const { return gpu_; }
  DeviceApi* api() const { return gpu_->api(); }
  Stream stream() const { return stream_; }

  // Marks the work queued on the stream so far with event `index` (one per pipeline stage).
  Status mark(size_t index);
  // Waits until the work marked with event `index` has finished.
  Status waitMark(size_t index, const std::string& what);
  // Waits until the work queued on stream so far has finished.
  Status finish(Stream stream, const std::string& what);

 private:
  weftComm* comm_;
  Deadline deadline_;
  GpuState* gpu_ = nullptr;
  int callersDevice_ = -1;
  Stream stream_ = nullptr;
};

}  // namespace weft::device
