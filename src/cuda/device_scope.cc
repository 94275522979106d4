#include "cuda/device_scope.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "cuda/buffer_kind.h"

namespace weft::device {

// GPU work gives no wake-up a host thread can sleep on without a runtime thread of its own, so
// the poll backs off to sleeps of at most 200 us.
Status waitForEvent(weftComm* comm, DeviceApi* api, Event event, const Deadline& deadline,
                    const std::string& what) {
  auto pause = std::chrono::microseconds(2);
  for (;;) {
    bool done = false;
    WEFT_TRY(api->eventQuery(event, &done).withContext(what));
    if (done) return Status::ok();
    if (comm->failed.load()) return commFailure(comm);
    if (deadline.expired()) {
      return timeoutError(what + ": not done within " +
                          std::to_string(comm->config.timeoutMs / 1000) + " s (WEFT_TIMEOUT)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

DeviceScope::~DeviceScope() {
  if (callersDevice_ >= 0) (void)gpu_->api()->setDevice(callersDevice_);
}

Status DeviceScope::enter() {
  gpu_ = gpuOf(comm_);
  if (gpu_ == nullptr) return internalError("device buffers on a communicator without GPU state");
  WEFT_TRY(gpu_->api()->currentDevice(&callersDevice_));
  return gpu_->workStream(&stream_);
}

Status DeviceScope::mark(size_t index) {
  Event event = nullptr;
  WEFT_TRY(gpu_->workEvent(index, &event));
  return gpu_->api()->eventRecord(event, stream_);
}

Status DeviceScope::waitMark(size_t index, const std::string& what) {
  Event event = nullptr;
  WEFT_TRY(gpu_->workEvent(index, &event));
  return waitForEvent(comm_, gpu_->api(), event, deadline_, what);
}

Status DeviceScope::finish(Stream stream, const std::string& what) {
  Event event = nullptr;
  WEFT_TRY(gpu_->workEvent(0, &event));
  WEFT_TRY(gpu_->api()->eventRecord(event, stream));
  return waitForEvent(comm_, gpu_->api(), event, deadline_, what);
}

}  // namespace weft::device
