#include "cuda/gpu_state.h"

#include <atomic>
#include <cstring>

namespace weft::device {

// Pinned pages of release counters, handed out one word at a time and never freed (see
// ReleaseFlag). One pool per runtime: the tests swap runtimes, and a word must come from the
// runtime that maps it.
struct FlagPool {
  static constexpr size_t kPageBytes = 4096;
  static constexpr size_t kWordsPerPage = kPageBytes / sizeof(uint32_t);

  DeviceApi* api = nullptr;
  uint32_t* page = nullptr;
  const volatile uint32_t* devicePage = nullptr;
  size_t used = kWordsPerPage;

  Status take(std::shared_ptr<ReleaseFlag>* out) {
    if (used == kWordsPerPage) {
      void* host = nullptr;
      WEFT_TRY(api->hostAlloc(kPageBytes, &host));
      void* device = nullptr;
      Status mapped = api->hostDevicePointer(host, &device);
      if (!mapped.isOk()) {
        api->hostFree(host);
        return mapped;
      }
      std::memset(host, 0, kPageBytes);
      page = static_cast<uint32_t*>(host);
      devicePage = static_cast<const volatile uint32_t*>(device);
      used = 0;
    }
    out->reset(new ReleaseFlag(page + used, devicePage + used));
    ++used;
    return Status::ok();
  }
};

namespace {

std::mutex gFlagPoolsMutex;
std::vector<FlagPool> gFlagPools;

}  // namespace

Status ReleaseFlag::create(DeviceApi* api, std::shared_ptr<ReleaseFlag>* out) {
  std::lock_guard<std::mutex> lock(gFlagPoolsMutex);
  for (FlagPool& pool : gFlagPools) {
    if (pool.api == api) return pool.take(out);
  }
  gFlagPools.push_back(FlagPool{api});
  return gFlagPools.back().take(out);
}

void forgetReleaseFlags(DeviceApi* api) {
  std::lock_guard<std::mutex> lock(gFlagPoolsMutex);
  std::erase_if(gFlagPools, [api](const FlagPool& pool) { return pool.api == api; });
}

void ReleaseFlag::release(uint32_t call) {
  std::atomic_ref<uint32_t> word(*word_);
  uint32_t current = word.load(std::memory_order_relaxed);
  while (!counterReached(current, call) &&
         !word.compare_exchange_weak(current, call, std::memory_order_release)) {
  }
}

uint32_t ReleaseFlag::value() const {
  return std::atomic_ref<uint32_t>(*word_).load(std::memory_order_acquire);
}

void StreamOrder::release() {
  if (released) return;
  released = true;
  if (flag) flag->release(call);
  for (Event event : inputsReady) api->eventDestroy(event);
  inputsReady.clear();
}

StreamOrder::~StreamOrder() {
  release();
}

IpcMappings::~IpcMappings() {
  for (const Entry& entry : entries_) api_->ipcClose(entry.base);
}

Status IpcMappings::map(const IpcHandle& handle, void** out) {
  constexpr size_t kMaxMappings = 64;
  ++clock_;
  for (Entry& entry : entries_) {
    if (entry.handle == handle.bytes) {
      entry.lastUse = clock_;
      *out = static_cast<char*>(entry.base) + handle.offset;
      return Status::ok();
    }
  }
  if (entries_.size() == kMaxMappings) {
    size_t oldest = 0;
    for (size_t i = 1; i < entries_.size(); ++i) {
      if (entries_[i].lastUse < entries_[oldest].lastUse) oldest = i;
    }
    api_->ipcClose(entries_[oldest].base);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));
  }
  void* base = nullptr;
  WEFT_TRY(api_->ipcOpen(handle, &base));
  entries_.push_back(Entry{handle.bytes, base, clock_});
  *out = static_cast<char*>(base) + handle.offset;
  return Status::ok();
}

GpuState::~GpuState() {
  if (staging_ != nullptr) api_->hostFree(staging_);
  for (Event event : events_) api_->eventDestroy(event);
  if (streamMade_) api_->streamDestroy(stream_);
}

Status GpuState::bindDevice(int device, const char* fn, const char* what) {
  int expected = -1;
  if (device_.compare_exchange_strong(expected, device) || expected == device) {
    return Status::ok();
  }
  return invalidUsage(std::string(fn) + ": " + what + " is on GPU " + std::to_string(device) +
                      ", but this communicator's device buffers are on GPU " +
                      std::to_string(expected) + " (one GPU per communicator)");
}

Status GpuState::workStream(Stream* out) {
  const int device = device_.load();
  if (device < 0) return internalError("device work before the communicator has a GPU");
  WEFT_TRY(api_->setDevice(device));
  if (!streamMade_) {
    WEFT_TRY(api_->streamCreate(&stream_));
    streamMade_ = true;
  }
  *out = stream_;
  return Status::ok();
}

Status GpuState::staging(size_t bytes, char** out) {
  if (bytes > stagingBytes_) {
    if (staging_ != nullptr) api_->hostFree(staging_);
    staging_ = nullptr;
    stagingBytes_ = 0;
    // Grown in powers of two so that a sweep of sizes reallocates a few times, not every call.
    size_t grown = 1 << 20;
    while (grown < bytes) grown *= 2;
    void* memory = nullptr;
    WEFT_TRY(api_->hostAlloc(grown, &memory)
                 .withContext("allocating " + std::to_string(grown) +
                              " bytes of pinned staging memory"));
    staging_ = static_cast<char*>(memory);
    stagingBytes_ = grown;
  }
  *out = staging_;
  return Status::ok();
}

Status GpuState::workEvent(size_t index, Event* out) {
  while (events_.size() <= index) {
    Event event = nullptr;
    WEFT_TRY(api_->eventCreate(&event));
    events_.push_back(event);
  }
  *out = events_[index];
  return Status::ok();
}

bool GpuState::firstTime(uint64_t key) {
  if (seen_.size() >= 4096) seen_.clear();
  return seen_.insert(key).second;
}

Status GpuState::releaseFlag(std::shared_ptr<ReleaseFlag>* out) {
  if (!flag_) WEFT_TRY(ReleaseFlag::create(api_, &flag_));
  *out = flag_;
  return Status::ok();
}

}  // namespace weft::device
