// A communicator's GPU side. It exists from the first call with device buffers or a stream, so a
// communicator that never sees either never touches a GPU runtime: the device it is bound to,
// its own stream for copies and kernels, pinned staging memory, the release flag that
// stream-ordered calls make their streams wait on, and its peers' buffers mapped over IPC.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "core/device_layer.h"
#include "cuda/device_api.h"
#include "tune/device_paths.h"

namespace weft::device {

// A pinned, device-mapped 32-bit counter: stream-ordered call number k makes its stream wait
// until the counter reaches k (compared modulo 2^32, so the count may wrap), and the
// communicator stores k once the call has finished, whatever its outcome. A stream may still be
// queued behind a wait on the counter after its communicator is gone, so counters are carved
// from pinned pages that are never freed (4 bytes per communicator ever made).
class ReleaseFlag {
 public:
  static Status create(DeviceApi* api, std::shared_ptr<ReleaseFlag>* out);
  ReleaseFlag(const ReleaseFlag&) = delete;
  ReleaseFlag& operator=(const ReleaseFlag&) = delete;

  // The address streams wait on (hostDevicePointer of the word).
  const volatile uint32_t* deviceWord() const { return deviceWord_; }
  // Moves the counter to `call` unless it is already past it.
  void release(uint32_t call);
  uint32_t value() const;

 private:
  ReleaseFlag(uint32_t* word, const volatile uint32_t* deviceWord)
      : word_(word), deviceWord_(deviceWord) {}
  friend struct FlagPool;
  uint32_t* word_;
  const volatile uint32_t* deviceWord_;
};

// Tests only: drops the pages of release counters carved from api's memory (the runtime is going
// away, and another may later get its address).
void forgetReleaseFlags(DeviceApi* api);

// Counter a has reached b, modulo 2^32 (valid while fewer than 2^31 calls are outstanding).
inline bool counterReached(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) >= 0;
}

// What a stream-ordered operation carries: an event recorded on each caller stream when the
// call was made (the inputs are ready once it completes) and the release it owes those
// streams, which happens when this is destroyed: after the operation ran, failed or was
// cancelled, so a caller's stream is never left waiting on a call that will not run.
struct StreamOrder {
  StreamOrder() = default;
  ~StreamOrder();
  // Releases the streams now (idempotent); the destructor calls it too.
  void release();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  DeviceApi* api = nullptr;
  std::vector<Event> inputsReady;
  std::shared_ptr<ReleaseFlag> flag;
  uint32_t call = 0;
  bool released = false;
};

// Opened mappings of peers' device allocations, by handle; the same allocation is used call
// after call (caching allocators keep them), so each is opened once and kept, up to a cap.
class IpcMappings {
 public:
  explicit IpcMappings(DeviceApi* api) : api_(api) {}
  ~IpcMappings();
  IpcMappings(const IpcMappings&) = delete;
  IpcMappings& operator=(const IpcMappings&) = delete;

  // The peer's pointer in this process.
  Status map(const IpcHandle& handle, void** out);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::array<uint8_t, 64> handle;
    void* base;
    uint64_t lastUse;
  };
  DeviceApi* api_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

// The communicator's DeviceLayer (core/device_layer.h): core hands it every operation that
// touches a GPU, and it runs them as device_op.h describes.
class GpuState final : public DeviceLayer {
 public:
  explicit GpuState(DeviceApi* api) : api_(api), ipc_(api) {}
  ~GpuState() override;
  Status run(weftComm* comm, const Op& op, const HostRunner& runHost) override;
  GpuState(const GpuState&) = delete;
  GpuState& operator=(const GpuState&) = delete;

  DeviceApi* api() const { return api_; }
  // The first device call binds the communicator to its GPU; later ones must use the same.
  // fn and what name the call and the buffer for the error ("weftAllReduce", "sendbuff").
  Status bindDevice(int device, const char* fn, const char* what);
  int device() const { return device_.load(); }

  // Used by the executing thread only (one operation at a time).
  // Makes the bound device current on this thread, then returns the communicator's stream.
  Status workStream(Stream* out);
  // Pinned host memory of at least `bytes`; contents are not preserved.
  Status staging(size_t bytes, char** out);
  // Event `index` for marking the work stream's progress (made on first use, kept).
  Status workEvent(size_t index, Event* out);
  IpcMappings& ipc() { return ipc_; }
  // True the first time `key` is seen (up to a few thousand keys): logging each choice once.
  bool firstTime(uint64_t key);
  // The tuner's ranking of the paths per call shape (device_op.cc), computed once per shape.
  std::unordered_map<uint64_t, std::vector<tune::DeviceCandidate>>& pathCache() { return paths_; }

  // Stream-ordered calls: numbered under orderMutex(), in the order they are queued.
  std::mutex& orderMutex() { return orderMutex_; }
  Status releaseFlag(std::shared_ptr<ReleaseFlag>* out);  // under orderMutex()
  uint32_t nextCall() { return ++calls_; }                // under orderMutex()

 private:
  DeviceApi* api_;
  std::atomic<int> device_{-1};
  Stream stream_ = nullptr;
  bool streamMade_ = false;
  std::vector<Event> events_;
  char* staging_ = nullptr;
  size_t stagingBytes_ = 0;
  IpcMappings ipc_;
  std::unordered_set<uint64_t> seen_;
  std::unordered_map<uint64_t, std::vector<tune::DeviceCandidate>> paths_;
  std::mutex orderMutex_;
  std::shared_ptr<ReleaseFlag> flag_;
  uint32_t calls_ = 0;
};

}  // namespace weft::device
