#include "cuda/device_op.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "cuda/allreduce_device_direct.h"
#include "cuda/gpu_state.h"

namespace weft::device {
namespace {

// Where each device range of an operation lies in the staging memory. Ranges of one call that
// overlap (in-place calls) share one staged range, so the algorithms see the same aliasing.
class StagingPlan {
 public:
  StagingPlan(const Op& op, int nranks, int rank) {
    for (const CollArgs& call : op.calls()) {
      CollArgs staged = call;
      if (call.deviceBuffers) stage(call, nranks, rank, &staged);
      hostCalls_.push_back(staged);
    }
  }

  size_t bytes() const { return bytes_; }
  bool empty() const { return ranges_.empty(); }

  // The host form of op's calls, once the staging memory is at `base`.
  Op hostOp(const Op& op, char* base) const {
    Op host;
    std::vector<CollArgs> calls = hostCalls_;
    for (CollArgs& call : calls) {
      if (!call.deviceBuffers) continue;
      call.send = relocate(call.send, base);
      call.recv = const_cast<void*>(relocate(call.recv, base));
      call.deviceBuffers = false;
    }
    if (op.group.empty()) {
      host.single = calls.front();
    } else {
      host.group = std::move(calls);
    }
    return host;
  }

  struct Copy {
    const char* device;
    size_t bytes;
  };
  const std::vector<Copy>& copiesIn() const { return copiesIn_; }
  const std::vector<Copy>& copiesOut() const { return copiesOut_; }
  // The staged address of a device address inside a staged range.
  char* staged(const void* device, char* base) const {
    return const_cast<char*>(static_cast<const char*>(relocate(device, base)));
  }

 private:
  struct Range {
    const char* device;
    size_t bytes;
    size_t offset;  // in the staging memory
  };

  void stage(const CollArgs& call, int nranks, int rank, CollArgs* staged) {
    const CallExtents extents = callExtents(call, nranks, rank);
    const char* send = static_cast<const char*>(call.send);
    const char* recv = static_cast<const char*>(call.recv);
    const bool sends = extents.sendBytes > 0;
    const bool receives = extents.recvBytes > 0;
    if (sends && receives && send < recv + extents.recvBytes && recv < send + extents.sendBytes) {
      const char* low = std::min(send, recv);
      const char* high = std::max(send + extents.sendBytes, recv + extents.recvBytes);
      addRange(low, static_cast<size_t>(high - low));
      copiesIn_.push_back({low, static_cast<size_t>(high - low)});
      copiesOut_.push_back({recv, extents.recvBytes});
      return;
    }
    if (sends) {
      addRange(send, extents.sendBytes);
      copiesIn_.push_back({send, extents.sendBytes});
    }
    if (receives) {
      addRange(recv, extents.recvBytes);
      copiesOut_.push_back({recv, extents.recvBytes});
    }
    // A buffer the call does not use on this rank is never read; one that names the other
    // buffer keeps doing so, so that an algorithm's in-place test still holds.
    if (!sends) staged->send = send == recv ? call.recv : nullptr;
    if (!receives) staged->recv = recv == send ? const_cast<void*>(call.send) : nullptr;
  }

  void addRange(const char* device, size_t bytes) {
    constexpr size_t kAlign = 256;
    ranges_.push_back({device, bytes, bytes_});
    bytes_ += (bytes + kAlign - 1) / kAlign * kAlign;
  }

  const void* relocate(const void* device, char* base) const {
    if (device == nullptr) return nullptr;
    const char* address = static_cast<const char*>(device);
    for (const Range& range : ranges_) {
      if (address >= range.device && address < range.device + range.bytes) {
        return base + range.offset + (address - range.device);
      }
    }
    return device;  // a pointer staged as another call's buffer is not relocated twice
  }

  std::vector<CollArgs> hostCalls_;
  std::vector<Range> ranges_;
  std::vector<Copy> copiesIn_;
  std::vector<Copy> copiesOut_;
  size_t bytes_ = 0;
};

const char* opName(const Op& op) {
  return op.group.empty() ? collName(op.single.coll) : "group";
}

// Polls until the event's work is done: GPU work gives no wake-up a host thread can sleep on
// without a runtime thread of its own, so the poll backs off to a sleep of at most 200 us.
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

Status copyAll(DeviceApi* api, const StagingPlan& plan,
               const std::vector<StagingPlan::Copy>& copies, char* base, bool toHost,
               Stream stream) {
  for (const StagingPlan::Copy& copy : copies) {
    char* staged = plan.staged(copy.device, base);
    void* dst = toHost ? static_cast<void*>(staged) : const_cast<char*>(copy.device);
    const void* src = toHost ? static_cast<const void*>(copy.device) : staged;
    WEFT_TRY(api->memcpyAsync(dst, src, copy.bytes, stream));
  }
  return Status::ok();
}

// The GPU side of one operation: the communicator's stream and event made current, and the
// calling thread's GPU restored afterwards (the operation may run on a caller's thread that is
// helping the executor).
class DeviceScope {
 public:
  DeviceScope(weftComm* comm, const Deadline& deadline) : comm_(comm), deadline_(deadline) {}
  ~DeviceScope() {
    if (callersDevice_ >= 0) (void)gpu_->api()->setDevice(callersDevice_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  Status enter() {
    gpu_ = comm_->gpu.get();
    if (gpu_ == nullptr) return internalError("device buffers on a communicator without GPU state");
    WEFT_TRY(gpu_->api()->currentDevice(&callersDevice_));
    WEFT_TRY(gpu_->workStream(&stream_));
    return gpu_->workEvent(&event_);
  }
  GpuState* gpu() const { return gpu_; }
  Stream stream() const { return stream_; }

  // Waits until the work queued on stream so far has finished.
  Status finish(Stream stream, const std::string& what) {
    WEFT_TRY(gpu_->api()->eventRecord(event_, stream));
    return waitForEvent(comm_, gpu_->api(), event_, deadline_, what);
  }

 private:
  weftComm* comm_;
  Deadline deadline_;
  GpuState* gpu_ = nullptr;
  int callersDevice_ = -1;
  Stream stream_ = nullptr;
  Event event_ = nullptr;
};

Status runStaged(DeviceScope& scope, const Op& op, const StagingPlan& plan,
                 const HostRunner& runHost) {
  DeviceApi* api = scope.gpu()->api();
  char* base = nullptr;
  WEFT_TRY(scope.gpu()->staging(plan.bytes(), &base));
  const std::string name = opName(op);
  WEFT_TRY(copyAll(api, plan, plan.copiesIn(), base, true, scope.stream()));
  WEFT_TRY(scope.finish(scope.stream(), name + ": copying the inputs from the GPU"));
  WEFT_TRY(runHost(plan.hostOp(op, base)));
  WEFT_TRY(copyAll(api, plan, plan.copiesOut(), base, false, scope.stream()));
  return scope.finish(scope.stream(), name + ": copying the results to the GPU");
}

Status runOnDevice(weftComm* comm, const Op& op, const StagingPlan& plan, const Deadline& deadline,
                   const HostRunner& runHost) {
  DeviceScope scope(comm, deadline);
  WEFT_TRY(scope.enter());
  if (directAllReduceApplies(comm, op)) {
    bool ran = false;
    StreamWaiter waiter = [&scope](Stream stream, const std::string& what) {
      return scope.finish(stream, what);
    };
    WEFT_TRY(runDirectAllReduce(comm, op.single, waiter, runHost, &ran));
    if (ran) return Status::ok();
  }
  return runStaged(scope, op, plan, runHost);
}

}  // namespace

bool needsDevice(const Op& op) {
  if (op.streamOrder) return true;
  for (const CollArgs& call : op.calls()) {
    if (call.deviceBuffers) return true;
  }
  return false;
}

Status runDeviceOp(weftComm* comm, const Op& op, const HostRunner& runHost) {
  const Deadline deadline = Deadline::after(comm->config.timeoutMs);
  StreamOrder* order = op.streamOrder.get();
  if (order != nullptr) {
    for (Event ready : order->inputsReady) {
      WEFT_TRY(waitForEvent(comm, order->api, ready, deadline,
                            std::string(opName(op)) + ": waiting for the caller's stream"));
    }
  }
  const StagingPlan plan(op, comm->nranks, comm->rank);
  Status result = plan.empty() ? runHost(op) : runOnDevice(comm, op, plan, deadline, runHost);
  // The results are in place (or the call failed and they never will be): the streams go on.
  if (order != nullptr) order->release();
  return result;
}

}  // namespace weft::device
