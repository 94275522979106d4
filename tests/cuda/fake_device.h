// FakeDevice: weft's GPU runtime interface (device::DeviceApi) implemented in host memory, so
// that everything weft does with device buffers (classifying pointers, staging through pinned
// memory, stream ordering, IPC between ranks) is tested on machines without a GPU.
//
// What it models, and how faithfully:
//  - Device memory (deviceAlloc) is a memfd mapped twice: the address handed out is mapped
//    PROT_NONE, so host code that dereferences a "device pointer" by mistake dies with SIGSEGV
//    on the spot; the fake's streams copy through a second, read/write mapping. ipcOpen maps the
//    memfd a third time, at yet another PROT_NONE address, as real IPC gives another address.
//  - Pinned memory (hostAlloc) is page-aligned read/write memory. Its "device address"
//    (hostDevicePointer) is a distinct PROT_NONE range that the streams translate back, so code
//    that mixes up the two addresses either crashes or gets an error instead of silently working.
//    classify() calls both kHost, as CUDA calls pinned memory host memory.
//  - Each stream is a FIFO run by its own worker thread; stream 0 (nullptr) exists from the
//    start. eventRecord queues a marker, so an event recorded on a paused stream stays pending
//    until the stream is resumed. Streams are all "non-blocking": stream 0 does not synchronise
//    with the others, and there is one stream 0 for all devices.
//  - Within one process only: IPC handles open in the process (and FakeDevice) that made them,
//    which real CUDA refuses; ranks-as-threads need exactly that.
//
// Memory a queued operation uses stays mapped until that operation ran, even if it is freed
// first (CUDA's frees synchronise instead; this way a test cannot deadlock on a paused stream).
// The destructor discards queued work that has not started, wakes operations blocked on events
// or flags, lets a running launch() function finish, and frees everything.
//
// Calls that the interface declares void (deviceFree, hostFree, streamDestroy, eventDestroy,
// ipcClose) cannot report misuse such as a double free; they record it in misuses() instead,
// which tests can assert to be empty.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "cuda/device_api.h"

namespace weft::test {

class FakeDevice : public device::DeviceApi {
 public:
  // The DeviceApi calls that return a Status, for failNext().
  enum class Call {
    kClassify,
    kDeviceCount,
    kSetDevice,
    kCurrentDevice,
    kDeviceUuid,
    kStreamCreate,
    kStreamSynchronize,
    kEventCreate,
    kEventRecord,
    kEventQuery,
    kStreamWaitEvent,
    kMemcpy,
    kReduce,
    kHostAlloc,
    kHostDevicePointer,
    kStreamWaitFlag,
    kIpcGetHandle,
    kIpcOpen,
  };

  // What is allocated or open right now, to check that code under test cleans up.
  struct Live {
    size_t deviceAllocations = 0;
    size_t hostAllocations = 0;
    size_t ipcMappings = 0;
    size_t streams = 0;  // created and not destroyed; stream 0 is not counted
    size_t events = 0;
  };

  explicit FakeDevice(int deviceCount = 1);
  ~FakeDevice() override;
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;

  // device::DeviceApi.
  const char* name() const override { return "fake"; }
  Status classify(const void* ptr, device::PointerInfo* out) override;
  Status deviceCount(int* count) override;
  Status setDevice(int device) override;
  Status currentDevice(int* device) override;  // 0 before any setDevice on this thread
  // Distinct per device and per FakeDevice: ranks sharing one fake see the same GPUs, ranks
  // on different fakes (which cannot open each other's IPC handles) never do.
  Status deviceUuid(int device, std::array<uint8_t, 16>* out) override;
  Status streamCreate(device::Stream* out) override;
  void streamDestroy(device::Stream stream) override;
  Status streamSynchronize(device::Stream stream) override;
  Status eventCreate(device::Event* out) override;
  void eventDestroy(device::Event event) override;
  Status eventRecord(device::Event event, device::Stream stream) override;
  Status eventQuery(device::Event event, bool* done) override;
  Status streamWaitEvent(device::Stream stream, device::Event event) override;
  Status memcpyAsync(void* dst, const void* src, size_t bytes, device::Stream stream) override;
  Status reduceAsync(const Reduction& reduction, device::Stream stream) override;
  Status hostAlloc(size_t bytes, void** out) override;
  void hostFree(void* ptr) override;
  Status hostDevicePointer(void* host, void** device) override;
  // `flag` must be the device address of pinned memory, as hostDevicePointer() returned it (a
  // host address is an invalid argument, as it would be to cuStreamWaitValue32). The stream
  // polls the word every 50 us with an acquire load (writers should store with release order)
  // and compares modulo 2^32, as cuStreamWaitValue32's GEQ does.
  Status streamWaitFlag(device::Stream stream, const volatile uint32_t* flag,
                        uint32_t value) override;
  Status ipcGetHandle(const void* ptr, device::IpcHandle* out) override;
  Status ipcOpen(const device::IpcHandle& handle, void** base) override;
  void ipcClose(void* base) override;

  // Fake only. None of these counts in calls() or classifyCalls().

  // Device memory of `device`; bytes == 0 gives nullptr, as cudaMalloc does.
  Status deviceAlloc(int device, size_t bytes, void** out);
  void deviceFree(void* ptr);

  // Queues host work (a test's "kernel") on stream, run by its worker in order with the rest.
  // It may touch device memory only through deviceView().
  Status launch(device::Stream stream, std::function<void()> kernel);
  // The read/write alias of device memory (or of pinned memory's device address) at ptr, for
  // tests that fill or check device buffers directly; nullptr for any other address.
  void* deviceView(const void* ptr);

  // A paused stream starts nothing new (what runs already finishes) until resumed.
  void pauseStream(device::Stream stream);
  void resumeStream(device::Stream stream);

  // The next `times` calls of `call` return `error` without doing anything (they still count
  // in calls()); times <= 0 or an ok `error` cancels what is pending for `call`.
  void failNext(Call call, Status error, int times = 1);
  // From now on every call fails as with a lost GPU (weftSystemError); queued work is dropped,
  // so it never completes, and operations blocked in streams give up.
  void killDevice();

  // DeviceApi calls made so far: classify() alone, and all the others but name() (the void
  // ones included), so that a test can show a host-only communicator never used the runtime.
  size_t classifyCalls() const { return classifyCalls_.load(); }
  size_t calls() const { return calls_.load(); }
  Live live() const;
  std::vector<std::string> misuses() const;

 private:
  struct Backing;
  struct Mapping;
  struct Region;
  struct Allocation;
  struct StreamState;
  struct EventState;
  struct Resolved;

  Status enter(Call call);  // counts the call; any failure it is due
  Status failure(Call call);
  void misuse(std::string what);  // under mutex_

  // Under mutex_: nullptr is stream 0.
  std::shared_ptr<StreamState> findStream(device::Stream stream);
  Status streamFor(device::Stream stream, const char* call, std::shared_ptr<StreamState>* out);
  void enqueue(StreamState* stream, std::function<void()> work);
  void runStream(StreamState* stream);

  // Under mutex_: the fake's memory holding ptr (nullptr: plain host memory), and where the
  // streams access [ptr, ptr + bytes).
  const Region* findRegion(const void* ptr) const;
  Status resolve(const void* ptr, size_t bytes, const std::string& what, Resolved* out) const;
  Status checkReduction(const Reduction& reduction, std::vector<Resolved>* dsts,
                        std::vector<Resolved>* srcs) const;  // under mutex_
  Status mapView(const std::shared_ptr<Backing>& backing, const char* call,
                 std::unique_ptr<Mapping>* out);

  const int deviceCount_;
  const uint64_t instanceId_;
  std::atomic<size_t> classifyCalls_{0};
  std::atomic<size_t> calls_{0};
  std::atomic<bool> killed_{false};
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;
  // Any stream finished an item or the device stopped: what synchronisations wait for.
  std::condition_variable progress_;
  std::map<uintptr_t, Region> regions_;  // by start address
  std::unordered_map<uint64_t, Allocation> allocations_;
  uint64_t nextAllocationId_ = 1;
  std::shared_ptr<StreamState> defaultStream_;
  std::unordered_map<device::Stream, std::shared_ptr<StreamState>> streams_;
  // Destroyed streams, kept until the destructor: their workers drain what was queued, and
  // events recorded on them still read their progress.
  std::vector<std::shared_ptr<StreamState>> retiredStreams_;
  std::unordered_map<device::Event, std::unique_ptr<EventState>> events_;
  std::map<Call, std::pair<int, Status>> injectedFailures_;
  std::vector<std::string> misuses_;
};

}  // namespace weft::test
