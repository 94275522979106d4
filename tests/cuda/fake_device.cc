// FakeDevice: see fake_device.h for what it models. Everything is guarded by one mutex; the
// streams' workers run their items without it, so items may block (waits) or call back in.
#include "fake_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "reduce/reduce.h"

namespace weft::test {

using device::Event;
using device::IpcHandle;
using device::MemoryKind;
using device::PointerInfo;
using device::Stream;

namespace {

constexpr std::array<uint8_t, 8> kIpcMagic = {'W', 'F', 'A', 'K', 'E', 'I', 'P', 'C'};
constexpr auto kFlagPollInterval = std::chrono::microseconds(50);

std::atomic<uint64_t> nextInstanceId{1};

// Per thread, as cudaSetDevice; keyed by FakeDevice so that one test's device does not leak
// into the next test's FakeDevice on the same thread.
thread_local std::unordered_map<uint64_t, int> currentDevices;

std::string addressText(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

size_t pageRounded(size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

bool overlaps(const char* a, const char* b, size_t bytes) {
  return bytes > 0 && a < b + bytes && b < a + bytes;
}

const char* callName(FakeDevice::Call call) {
  using Call = FakeDevice::Call;
  switch (call) {
    case Call::kClassify:
      return "classify";
    case Call::kDeviceCount:
      return "deviceCount";
    case Call::kSetDevice:
      return "setDevice";
    case Call::kCurrentDevice:
      return "currentDevice";
    case Call::kDeviceUuid:
      return "deviceUuid";
    case Call::kStreamCreate:
      return "streamCreate";
    case Call::kStreamSynchronize:
      return "streamSynchronize";
    case Call::kEventCreate:
      return "eventCreate";
    case Call::kEventRecord:
      return "eventRecord";
    case Call::kEventQuery:
      return "eventQuery";
    case Call::kStreamWaitEvent:
      return "streamWaitEvent";
    case Call::kMemcpy:
      return "memcpyAsync";
    case Call::kReduce:
      return "reduceAsync";
    case Call::kHostAlloc:
      return "hostAlloc";
    case Call::kHostDevicePointer:
      return "hostDevicePointer";
    case Call::kStreamWaitFlag:
      return "streamWaitFlag";
    case Call::kIpcGetHandle:
      return "ipcGetHandle";
    case Call::kIpcOpen:
      return "ipcOpen";
  }
  return "?";
}

Status lostDevice(const char* call) {
  return Status(weftSystemError, std::string(call) + ": the GPU was lost (FakeDevice::killDevice)");
}

// cuStreamWaitValue32's GEQ compares modulo 2^32, so that a counter may wrap.
bool reached(uint32_t word, uint32_t value) {
  return int32_t(word - value) >= 0;
}

}  // namespace

// The memory behind an allocation, read/write, where the streams touch it: a memfd for device
// memory (so that more views of it can be mapped), anonymous memory for pinned memory.
struct FakeDevice::Backing {
  int fd = -1;
  char* data = nullptr;
  size_t mappedBytes = 0;
  ~Backing() {
    if (data != nullptr) munmap(data, mappedBytes);
    if (fd >= 0) close(fd);
  }
};

// A PROT_NONE view: the addresses host code must not dereference.
struct FakeDevice::Mapping {
  void* address = nullptr;
  size_t bytes = 0;
  ~Mapping() { munmap(address, bytes); }
};

enum class RegionKind { kDeviceMemory, kIpcMapping, kPinnedHost, kPinnedDeviceAddress };

struct FakeDevice::Region {
  RegionKind kind;
  size_t bytes;     // as requested, so that classify() ends where the allocation does
  int device = -1;  // kDeviceMemory, kIpcMapping
  uint64_t allocationId = 0;
  uintptr_t partner = 0;  // pinned memory: the other address of the same memory
  // Shared with queued operations, which keep the memory mapped until they have run.
  std::shared_ptr<Backing> backing;
  std::unique_ptr<Mapping> view;  // null for kPinnedHost, whose address is backing->data

  // The address users know the memory by (the streams access it at backing->data instead).
  const char* start() const {
    return view ? static_cast<const char*>(view->address) : backing->data;
  }
};

struct FakeDevice::Allocation {
  int device;
  size_t bytes;
  std::shared_ptr<Backing> backing;
};

struct FakeDevice::StreamState {
  std::deque<std::function<void()>> queue;
  uint64_t queued = 0;     // items ever queued
  uint64_t completed = 0;  // items run
  bool paused = false;
  bool retiring = false;  // destroyed: drain, then end the worker
  std::condition_variable wake;
  std::thread worker;
};

struct FakeDevice::EventState {
  std::shared_ptr<StreamState> stream;  // null until recorded
  uint64_t target = 0;                  // done once stream->completed reaches it
};

// Where the streams access an address, and what keeps that memory mapped meanwhile.
struct FakeDevice::Resolved {
  char* address = nullptr;
  std::shared_ptr<Backing> keepAlive;
};

FakeDevice::FakeDevice(int deviceCount)
    : deviceCount_(deviceCount), instanceId_(nextInstanceId.fetch_add(1)) {
  defaultStream_ = std::make_shared<StreamState>();
  defaultStream_->worker = std::thread([this] { runStream(defaultStream_.get()); });
}

FakeDevice::~FakeDevice() {
  std::vector<std::shared_ptr<StreamState>> all;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    all = retiredStreams_;
    all.push_back(defaultStream_);
    for (auto& [handle, stream] : streams_) all.push_back(stream);
    for (auto& stream : all) stream->wake.notify_all();
    progress_.notify_all();
  }
  for (auto& stream : all) stream->worker.join();
  // Queued waits hold the streams they wait on; clearing breaks any cycle among them.
  for (auto& stream : all) stream->queue.clear();
}

// ---- bookkeeping ----

Status FakeDevice::enter(Call call) {
  (call == Call::kClassify ? classifyCalls_ : calls_).fetch_add(1);
  return failure(call);
}

Status FakeDevice::failure(Call call) {
  if (killed_) return lostDevice(callName(call));
  std::lock_guard lock(mutex_);
  auto it = injectedFailures_.find(call);
  if (it == injectedFailures_.end()) return Status::ok();
  Status error = it->second.second;
  if (--it->second.first <= 0) injectedFailures_.erase(it);
  return error;
}

void FakeDevice::misuse(std::string what) {
  misuses_.push_back(std::move(what));
}

std::shared_ptr<FakeDevice::StreamState> FakeDevice::findStream(Stream stream) {
  if (stream == nullptr) return defaultStream_;
  auto it = streams_.find(stream);
  return it == streams_.end() ? nullptr : it->second;
}

Status FakeDevice::streamFor(Stream stream, const char* call, std::shared_ptr<StreamState>* out) {
  *out = findStream(stream);
  if (*out == nullptr) {
    return invalidArgument(std::string(call) + ": stream " + addressText(stream) +
                           " is not a live stream of this device");
  }
  return Status::ok();
}

void FakeDevice::enqueue(StreamState* stream, std::function<void()> work) {
  stream->queue.push_back(std::move(work));
  stream->queued++;
  stream->wake.notify_one();
}

void FakeDevice::runStream(StreamState* stream) {
  std::unique_lock lock(mutex_);
  for (;;) {
    stream->wake.wait(lock, [&] {
      return stopping_ || (!stream->paused && !stream->queue.empty()) ||
             (stream->retiring && stream->queue.empty());
    });
    if (stopping_ || stream->queue.empty()) return;
    std::function<void()> work = std::move(stream->queue.front());
    stream->queue.pop_front();
    lock.unlock();
    work();
    work = nullptr;  // drops its keep-alives (munmap) outside the lock
    lock.lock();
    stream->completed++;
    progress_.notify_all();
  }
}

const FakeDevice::Region* FakeDevice::findRegion(const void* ptr) const {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto it = regions_.upper_bound(address);
  if (it == regions_.begin()) return nullptr;
  --it;
  return address - it->first < it->second.bytes ? &it->second : nullptr;
}

Status FakeDevice::resolve(const void* ptr, size_t bytes, const std::string& what,
                           Resolved* out) const {
  out->address = static_cast<char*>(const_cast<void*>(ptr));
  if (bytes == 0) return Status::ok();
  if (ptr == nullptr) return invalidArgument(what + " is null");
  const Region* region = findRegion(ptr);
  if (region == nullptr) return Status::ok();  // plain host memory
  const size_t offset = size_t(static_cast<const char*>(ptr) - region->start());
  if (bytes > region->bytes - offset) {
    return invalidArgument(what + ": " + std::to_string(bytes) + " bytes at " + addressText(ptr) +
                           " run past the end of its allocation (" +
                           std::to_string(region->bytes - offset) + " bytes left)");
  }
  out->address = region->backing->data + offset;
  out->keepAlive = region->backing;
  return Status::ok();
}

Status FakeDevice::mapView(const std::shared_ptr<Backing>& backing, const char* call,
                           std::unique_ptr<Mapping>* out) {
  const int flags = backing->fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* address = mmap(nullptr, backing->mappedBytes, PROT_NONE, flags, backing->fd, 0);
  if (address == MAP_FAILED) return systemError(std::string(call) + ": mmap", errno);
  *out = std::make_unique<Mapping>();
  (*out)->address = address;
  (*out)->bytes = backing->mappedBytes;
  return Status::ok();
}

// ---- pointers and devices ----

Status FakeDevice::classify(const void* ptr, PointerInfo* out) {
  WEFT_TRY(enter(Call::kClassify));
  if (out == nullptr) return invalidArgument("classify: out is null");
  std::lock_guard lock(mutex_);
  const Region* region = findRegion(ptr);
  if (region != nullptr &&
      (region->kind == RegionKind::kDeviceMemory || region->kind == RegionKind::kIpcMapping)) {
    *out = PointerInfo{MemoryKind::kDevice, region->device};
  } else {
    *out = PointerInfo{MemoryKind::kHost, -1};
  }
  return Status::ok();
}

Status FakeDevice::deviceCount(int* count) {
  WEFT_TRY(enter(Call::kDeviceCount));
  if (count == nullptr) return invalidArgument("deviceCount: count is null");
  *count = deviceCount_;
  return Status::ok();
}

Status FakeDevice::setDevice(int device) {
  WEFT_TRY(enter(Call::kSetDevice));
  if (device < 0 || device >= deviceCount_) {
    return invalidArgument("setDevice: device " + std::to_string(device) +
                           " is out of range; there are " + std::to_string(deviceCount_) +
                           " device(s)");
  }
  currentDevices[instanceId_] = device;
  return Status::ok();
}

Status FakeDevice::currentDevice(int* device) {
  WEFT_TRY(enter(Call::kCurrentDevice));
  if (device == nullptr) return invalidArgument("currentDevice: device is null");
  auto it = currentDevices.find(instanceId_);
  *device = it == currentDevices.end() ? 0 : it->second;
  return Status::ok();
}

Status FakeDevice::deviceUuid(int device, std::array<uint8_t, 16>* out) {
  WEFT_TRY(enter(Call::kDeviceUuid));
  if (out == nullptr) return invalidArgument("deviceUuid: out is null");
  if (device < 0 || device >= deviceCount_) {
    return invalidArgument("deviceUuid: device " + std::to_string(device) + " is out of range");
  }
  const uint32_t ordinal = uint32_t(device);
  std::memcpy(out->data(), "FAKE", 4);
  std::memcpy(out->data() + 4, &ordinal, sizeof ordinal);
  std::memcpy(out->data() + 8, &instanceId_, sizeof instanceId_);
  return Status::ok();
}

// ---- streams and events ----

Status FakeDevice::streamCreate(Stream* out) {
  WEFT_TRY(enter(Call::kStreamCreate));
  if (out == nullptr) return invalidArgument("streamCreate: out is null");
  auto stream = std::make_shared<StreamState>();
  std::lock_guard lock(mutex_);
  stream->worker = std::thread([this, state = stream.get()] { runStream(state); });
  *out = stream.get();
  streams_[*out] = std::move(stream);
  return Status::ok();
}

void FakeDevice::streamDestroy(Stream stream) {
  calls_.fetch_add(1);
  std::lock_guard lock(mutex_);
  auto it = stream == nullptr ? streams_.end() : streams_.find(stream);
  if (it == streams_.end()) {
    misuse("streamDestroy: " + addressText(stream) + " is not a stream streamCreate made");
    return;
  }
  it->second->retiring = true;
  it->second->wake.notify_all();
  retiredStreams_.push_back(std::move(it->second));
  streams_.erase(it);
}

Status FakeDevice::streamSynchronize(Stream stream) {
  WEFT_TRY(enter(Call::kStreamSynchronize));
  std::unique_lock lock(mutex_);
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "streamSynchronize", &state));
  const uint64_t target = state->queued;
  progress_.wait(lock, [&] { return stopping_ || killed_ || state->completed >= target; });
  if (killed_) return lostDevice("streamSynchronize");
  return Status::ok();
}

Status FakeDevice::eventCreate(Event* out) {
  WEFT_TRY(enter(Call::kEventCreate));
  if (out == nullptr) return invalidArgument("eventCreate: out is null");
  auto event = std::make_unique<EventState>();
  std::lock_guard lock(mutex_);
  *out = event.get();
  events_[*out] = std::move(event);
  return Status::ok();
}

void FakeDevice::eventDestroy(Event event) {
  calls_.fetch_add(1);
  std::lock_guard lock(mutex_);
  if (events_.erase(event) == 0) {
    misuse("eventDestroy: " + addressText(event) + " is not an event eventCreate made");
  }
}

Status FakeDevice::eventRecord(Event event, Stream stream) {
  WEFT_TRY(enter(Call::kEventRecord));
  std::lock_guard lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) {
    return invalidArgument("eventRecord: event " + addressText(event) + " is not a live event");
  }
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "eventRecord", &state));
  // A marker rather than the current position, so that a paused stream holds its events too.
  enqueue(state.get(), [] {});
  it->second->stream = state;
  it->second->target = state->queued;
  return Status::ok();
}

Status FakeDevice::eventQuery(Event event, bool* done) {
  WEFT_TRY(enter(Call::kEventQuery));
  if (done == nullptr) return invalidArgument("eventQuery: done is null");
  std::lock_guard lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) {
    return invalidArgument("eventQuery: event " + addressText(event) + " is not a live event");
  }
  const EventState& state = *it->second;
  *done = state.stream == nullptr || state.stream->completed >= state.target;
  return Status::ok();
}

Status FakeDevice::streamWaitEvent(Stream stream, Event event) {
  WEFT_TRY(enter(Call::kStreamWaitEvent));
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "streamWaitEvent", &state));
  auto it = events_.find(event);
  if (it == events_.end()) {
    return invalidArgument("streamWaitEvent: event " + addressText(event) + " is not a live event");
  }
  // The record as of now: recording the event again later does not change this wait (as CUDA).
  std::shared_ptr<StreamState> recordedOn = it->second->stream;
  const uint64_t target = it->second->target;
  enqueue(state.get(), [this, recordedOn, target] {
    if (recordedOn == nullptr) return;
    std::unique_lock lock(mutex_);
    progress_.wait(lock, [&] { return stopping_ || killed_ || recordedOn->completed >= target; });
  });
  return Status::ok();
}

// ---- copies and reductions ----

Status FakeDevice::memcpyAsync(void* dst, const void* src, size_t bytes, Stream stream) {
  WEFT_TRY(enter(Call::kMemcpy));
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "memcpyAsync", &state));
  Resolved to, from;
  WEFT_TRY(resolve(dst, bytes, "memcpyAsync: dst", &to));
  WEFT_TRY(resolve(src, bytes, "memcpyAsync: src", &from));
  if (to.address != from.address && overlaps(to.address, from.address, bytes)) {
    return invalidArgument("memcpyAsync: dst " + addressText(dst) + " and src " + addressText(src) +
                           " overlap");
  }
  enqueue(state.get(), [to, from, bytes] {
    if (bytes > 0 && to.address != from.address) std::memcpy(to.address, from.address, bytes);
  });
  return Status::ok();
}

Status FakeDevice::checkReduction(const Reduction& r, std::vector<Resolved>* dsts,
                                  std::vector<Resolved>* srcs) const {
  if (r.ndsts < 1) {
    return invalidArgument("reduceAsync: ndsts is " + std::to_string(r.ndsts) +
                           "; it must be at least 1");
  }
  if (r.dsts == nullptr) return invalidArgument("reduceAsync: dsts is null");
  if (r.nsrcs < 1 || r.nsrcs > device::kMaxReduceSources) {
    return invalidArgument("reduceAsync: nsrcs is " + std::to_string(r.nsrcs) +
                           "; it must be in 1.." + std::to_string(device::kMaxReduceSources));
  }
  if (r.srcs == nullptr) return invalidArgument("reduceAsync: srcs is null");
  if (!isValidType(r.type)) {
    return invalidArgument("reduceAsync: type " + std::to_string(int(r.type)) +
                           " is not a weft data type");
  }
  if (!isValidOp(r.op)) {
    return invalidArgument("reduceAsync: op " + std::to_string(int(r.op)) +
                           " is not a weft reduction");
  }
  if (r.op == weftAvg && r.avgDivisor < 1) {
    return invalidArgument("reduceAsync: avgDivisor is " + std::to_string(r.avgDivisor) +
                           "; avg needs the number of ranks");
  }
  if (r.op != weftAvg && r.avgDivisor != 1) {
    return invalidArgument("reduceAsync: avgDivisor is " + std::to_string(r.avgDivisor) +
                           " for op " + opName(r.op) + "; only avg divides (pass 1)");
  }
  const size_t elementBytes = typeSize(r.type);
  if (r.count > std::numeric_limits<size_t>::max() / elementBytes) {
    return invalidArgument("reduceAsync: count " + std::to_string(r.count) + " is too large");
  }
  const size_t bytes = r.count * elementBytes;
  dsts->resize(size_t(r.ndsts));
  srcs->resize(size_t(r.nsrcs));
  for (int j = 0; j < r.ndsts; j++) {
    WEFT_TRY(
        resolve(r.dsts[j], bytes, "reduceAsync: dsts[" + std::to_string(j) + "]", &(*dsts)[j]));
  }
  for (int k = 0; k < r.nsrcs; k++) {
    WEFT_TRY(
        resolve(r.srcs[k], bytes, "reduceAsync: srcs[" + std::to_string(k) + "]", &(*srcs)[k]));
  }
  // A GPU kernel survives a destination that is exactly a source, not one shifted against it.
  for (int j = 0; j < r.ndsts; j++) {
    const char* dst = (*dsts)[j].address;
    auto partly = [&](const char* other) { return dst != other && overlaps(dst, other, bytes); };
    for (int k = 0; k < r.nsrcs; k++) {
      if (partly((*srcs)[k].address)) {
        return invalidArgument("reduceAsync: dsts[" + std::to_string(j) +
                               "] partly overlaps srcs[" + std::to_string(k) + "]");
      }
    }
    for (int i = 0; i < j; i++) {
      if (partly((*dsts)[i].address)) {
        return invalidArgument("reduceAsync: dsts[" + std::to_string(j) +
                               "] partly overlaps dsts[" + std::to_string(i) + "]");
      }
    }
  }
  return Status::ok();
}

Status FakeDevice::reduceAsync(const Reduction& reduction, Stream stream) {
  WEFT_TRY(enter(Call::kReduce));
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "reduceAsync", &state));
  std::vector<Resolved> dsts, srcs;
  WEFT_TRY(checkReduction(reduction, &dsts, &srcs));
  const size_t count = reduction.count;
  const weftDataType_t type = reduction.type;
  const weftRedOp_t op = reduction.op;
  const int divisor = reduction.avgDivisor;
  enqueue(state.get(), [dsts, srcs, count, type, op, divisor] {
    const size_t bytes = count * typeSize(type);
    if (bytes == 0) return;
    // Accumulating apart makes any exact aliasing of destinations and sources safe.
    std::vector<char> sum(srcs[0].address, srcs[0].address + bytes);
    const reduce::ReduceFn combine = reduce::kernelFor(type, op);
    for (size_t k = 1; k < srcs.size(); k++) {
      combine(sum.data(), sum.data(), srcs[k].address, count);
    }
    if (op == weftAvg) reduce::finishAvg(sum.data(), count, type, divisor);
    for (const Resolved& dst : dsts) std::memcpy(dst.address, sum.data(), bytes);
  });
  return Status::ok();
}

// ---- pinned memory ----

Status FakeDevice::hostAlloc(size_t bytes, void** out) {
  WEFT_TRY(enter(Call::kHostAlloc));
  if (out == nullptr) return invalidArgument("hostAlloc: out is null");
  *out = nullptr;
  if (bytes == 0) return Status::ok();
  auto backing = std::make_shared<Backing>();
  backing->mappedBytes = pageRounded(bytes);
  void* data = mmap(nullptr, backing->mappedBytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) return systemError("hostAlloc: mmap", errno);
  backing->data = static_cast<char*>(data);
  std::unique_ptr<Mapping> deviceAddress;
  WEFT_TRY(mapView(backing, "hostAlloc", &deviceAddress));
  const auto hostStart = reinterpret_cast<uintptr_t>(data);
  const auto deviceStart = reinterpret_cast<uintptr_t>(deviceAddress->address);
  std::lock_guard lock(mutex_);
  regions_.emplace(hostStart,
                   Region{RegionKind::kPinnedHost, bytes, -1, 0, deviceStart, backing, nullptr});
  regions_.emplace(deviceStart, Region{RegionKind::kPinnedDeviceAddress, bytes, -1, 0, hostStart,
                                       backing, std::move(deviceAddress)});
  *out = data;
  return Status::ok();
}

void FakeDevice::hostFree(void* ptr) {
  calls_.fetch_add(1);
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == regions_.end() || it->second.kind != RegionKind::kPinnedHost) {
    misuse("hostFree: " + addressText(ptr) + " is not memory hostAlloc returned");
    return;
  }
  regions_.erase(it->second.partner);
  regions_.erase(it);
}

Status FakeDevice::hostDevicePointer(void* host, void** device) {
  WEFT_TRY(enter(Call::kHostDevicePointer));
  if (device == nullptr) return invalidArgument("hostDevicePointer: device is null");
  std::lock_guard lock(mutex_);
  const Region* region = findRegion(host);
  if (region != nullptr && region->kind == RegionKind::kPinnedDeviceAddress) {
    return invalidArgument("hostDevicePointer: host " + addressText(host) +
                           " is already the device address of pinned memory");
  }
  if (region == nullptr || region->kind != RegionKind::kPinnedHost) {
    return invalidArgument("hostDevicePointer: host " + addressText(host) +
                           " is not pinned memory from hostAlloc");
  }
  const size_t offset = size_t(static_cast<char*>(host) - region->start());
  *device = reinterpret_cast<char*>(region->partner) + offset;
  return Status::ok();
}

Status FakeDevice::streamWaitFlag(Stream stream, const volatile uint32_t* flag, uint32_t value) {
  WEFT_TRY(enter(Call::kStreamWaitFlag));
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "streamWaitFlag", &state));
  const void* address = const_cast<const uint32_t*>(flag);
  const Region* region = findRegion(address);
  if (region != nullptr && region->kind == RegionKind::kPinnedHost) {
    return invalidArgument("streamWaitFlag: flag " + addressText(address) +
                           " is the host address of pinned memory; pass its device address "
                           "(hostDevicePointer)");
  }
  if (region == nullptr || region->kind != RegionKind::kPinnedDeviceAddress) {
    return invalidArgument("streamWaitFlag: flag " + addressText(address) +
                           " is not the device address of pinned memory");
  }
  if (reinterpret_cast<uintptr_t>(address) % alignof(uint32_t) != 0) {
    return invalidArgument("streamWaitFlag: flag " + addressText(address) +
                           " is not 4-byte aligned");
  }
  Resolved word;
  WEFT_TRY(resolve(address, sizeof(uint32_t), "streamWaitFlag: flag", &word));
  enqueue(state.get(), [this, word, value] {
    // Plain stores from other threads, no notification: poll, as the GPU does.
    auto* counter = reinterpret_cast<uint32_t*>(word.address);
    while (!reached(__atomic_load_n(counter, __ATOMIC_ACQUIRE), value) && !stopping_ && !killed_) {
      std::this_thread::sleep_for(kFlagPollInterval);
    }
  });
  return Status::ok();
}

// ---- IPC ----

Status FakeDevice::ipcGetHandle(const void* ptr, IpcHandle* out) {
  WEFT_TRY(enter(Call::kIpcGetHandle));
  if (out == nullptr) return invalidArgument("ipcGetHandle: out is null");
  std::lock_guard lock(mutex_);
  const Region* region = findRegion(ptr);
  if (region != nullptr && region->kind == RegionKind::kIpcMapping) {
    return invalidArgument("ipcGetHandle: ptr " + addressText(ptr) +
                           " lies in a mapping ipcOpen made; only the owner can export it");
  }
  if (region == nullptr || region->kind != RegionKind::kDeviceMemory) {
    return invalidArgument("ipcGetHandle: ptr " + addressText(ptr) + " is not device memory");
  }
  *out = IpcHandle{};
  std::memcpy(out->bytes.data(), kIpcMagic.data(), kIpcMagic.size());
  std::memcpy(out->bytes.data() + 8, &instanceId_, sizeof instanceId_);
  std::memcpy(out->bytes.data() + 16, &region->allocationId, sizeof region->allocationId);
  out->offset = size_t(static_cast<const char*>(ptr) - region->start());
  return Status::ok();
}

Status FakeDevice::ipcOpen(const IpcHandle& handle, void** base) {
  WEFT_TRY(enter(Call::kIpcOpen));
  if (base == nullptr) return invalidArgument("ipcOpen: base is null");
  uint64_t instance = 0, allocationId = 0;
  std::memcpy(&instance, handle.bytes.data() + 8, sizeof instance);
  std::memcpy(&allocationId, handle.bytes.data() + 16, sizeof allocationId);
  if (std::memcmp(handle.bytes.data(), kIpcMagic.data(), kIpcMagic.size()) != 0) {
    return invalidArgument("ipcOpen: handle is not an IPC handle of a fake device");
  }
  if (instance != instanceId_) {
    return invalidArgument("ipcOpen: handle comes from another FakeDevice");
  }
  Allocation allocation{};
  {
    std::lock_guard lock(mutex_);
    auto it = allocations_.find(allocationId);
    if (it == allocations_.end()) {
      return invalidArgument("ipcOpen: handle names allocation " + std::to_string(allocationId) +
                             ", which is not live");
    }
    allocation = it->second;
  }
  std::unique_ptr<Mapping> view;
  WEFT_TRY(mapView(allocation.backing, "ipcOpen", &view));
  void* address = view->address;
  std::lock_guard lock(mutex_);
  regions_.emplace(reinterpret_cast<uintptr_t>(address),
                   Region{RegionKind::kIpcMapping, allocation.bytes, allocation.device,
                          allocationId, 0, allocation.backing, std::move(view)});
  *base = address;
  return Status::ok();
}

void FakeDevice::ipcClose(void* base) {
  calls_.fetch_add(1);
  std::lock_guard lock(mutex_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(base));
  if (it == regions_.end() || it->second.kind != RegionKind::kIpcMapping) {
    misuse("ipcClose: " + addressText(base) + " is not a base ipcOpen returned");
    return;
  }
  regions_.erase(it);
}

// ---- fake only ----

Status FakeDevice::deviceAlloc(int device, size_t bytes, void** out) {
  if (killed_) return lostDevice("deviceAlloc");
  if (out == nullptr) return invalidArgument("deviceAlloc: out is null");
  *out = nullptr;
  if (device < 0 || device >= deviceCount_) {
    return invalidArgument("deviceAlloc: device " + std::to_string(device) + " is out of range");
  }
  if (bytes == 0) return Status::ok();
  auto backing = std::make_shared<Backing>();
  backing->mappedBytes = pageRounded(bytes);
  backing->fd = memfd_create("weft-fake-device", MFD_CLOEXEC);
  if (backing->fd < 0) return systemError("deviceAlloc: memfd_create", errno);
  if (ftruncate(backing->fd, off_t(backing->mappedBytes)) != 0) {
    return systemError("deviceAlloc: ftruncate", errno);
  }
  void* data =
      mmap(nullptr, backing->mappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, backing->fd, 0);
  if (data == MAP_FAILED) return systemError("deviceAlloc: mmap", errno);
  backing->data = static_cast<char*>(data);
  std::unique_ptr<Mapping> view;
  WEFT_TRY(mapView(backing, "deviceAlloc", &view));
  void* address = view->address;
  std::lock_guard lock(mutex_);
  const uint64_t id = nextAllocationId_++;
  allocations_.emplace(id, Allocation{device, bytes, backing});
  regions_.emplace(
      reinterpret_cast<uintptr_t>(address),
      Region{RegionKind::kDeviceMemory, bytes, device, id, 0, backing, std::move(view)});
  *out = address;
  return Status::ok();
}

void FakeDevice::deviceFree(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == regions_.end() || it->second.kind != RegionKind::kDeviceMemory) {
    misuse("deviceFree: " + addressText(ptr) + " is not memory deviceAlloc returned");
    return;
  }
  allocations_.erase(it->second.allocationId);
  regions_.erase(it);
}

Status FakeDevice::launch(Stream stream, std::function<void()> kernel) {
  if (killed_) return lostDevice("launch");
  if (!kernel) return invalidArgument("launch: kernel is empty");
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state;
  WEFT_TRY(streamFor(stream, "launch", &state));
  enqueue(state.get(), std::move(kernel));
  return Status::ok();
}

void* FakeDevice::deviceView(const void* ptr) {
  std::lock_guard lock(mutex_);
  const Region* region = findRegion(ptr);
  if (region == nullptr) return nullptr;
  return region->backing->data + (static_cast<const char*>(ptr) - region->start());
}

void FakeDevice::pauseStream(Stream stream) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state = findStream(stream);
  if (state == nullptr) {
    misuse("pauseStream: " + addressText(stream) + " is not a live stream");
    return;
  }
  state->paused = true;
}

void FakeDevice::resumeStream(Stream stream) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<StreamState> state = findStream(stream);
  if (state == nullptr) {
    misuse("resumeStream: " + addressText(stream) + " is not a live stream");
    return;
  }
  state->paused = false;
  state->wake.notify_all();
}

void FakeDevice::failNext(Call call, Status error, int times) {
  std::lock_guard lock(mutex_);
  if (times <= 0 || error.isOk()) {
    injectedFailures_.erase(call);
    return;
  }
  injectedFailures_[call] = {times, std::move(error)};
}

void FakeDevice::killDevice() {
  // Dropped work is destroyed after unlocking: a launch() function's captures may call back in.
  std::vector<std::deque<std::function<void()>>> dropped;
  {
    std::lock_guard lock(mutex_);
    killed_ = true;
    auto drop = [&](StreamState& stream) {
      dropped.push_back(std::move(stream.queue));
      stream.queue.clear();
      stream.wake.notify_all();
    };
    drop(*defaultStream_);
    for (auto& [handle, stream] : streams_) drop(*stream);
    for (auto& stream : retiredStreams_) drop(*stream);
    progress_.notify_all();
  }
}

FakeDevice::Live FakeDevice::live() const {
  std::lock_guard lock(mutex_);
  Live live;
  for (const auto& [start, region] : regions_) {
    if (region.kind == RegionKind::kDeviceMemory) live.deviceAllocations++;
    if (region.kind == RegionKind::kPinnedHost) live.hostAllocations++;
    if (region.kind == RegionKind::kIpcMapping) live.ipcMappings++;
  }
  live.streams = streams_.size();
  live.events = events_.size();
  return live;
}

std::vector<std::string> FakeDevice::misuses() const {
  std::lock_guard lock(mutex_);
  return misuses_;
}

}  // namespace weft::test
