// DeviceApi over the CUDA runtime (linked statically, so libweft needs no CUDA library to load,
// and the runtime loads the driver only on its first call). classify() makes no runtime call in
// a process that has not loaded the driver itself: a host-only program never starts CUDA.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/device_api.h"
#include "cuda/device_kernels.h"

namespace weft::device {
namespace {

Status cudaFailure(const char* what, cudaError_t error) {
  cudaGetLastError();  // the runtime keeps the last error sticky for the next caller otherwise
  return Status(weftSystemError, std::string(what) + " failed: " + cudaGetErrorName(error) + " (" +
                                     cudaGetErrorString(error) + ")");
}

#define WEFT_CUDA_TRY(what, call)                                                    \
  do {                                                                               \
    cudaError_t weft_cuda_error_ = (call);                                           \
    if (weft_cuda_error_ != cudaSuccess) return cudaFailure(what, weft_cuda_error_); \
  } while (0)

// Whether the process has loaded the CUDA driver. The object list is scanned again only after
// something new was loaded (dl_iterate_phdr's count of loads), and, while the driver is absent,
// at most once a millisecond: that call into the loader (which takes its lock) is the largest
// part of classifying a small call's buffers. Reusing "absent" for a millisecond cannot miss
// device memory, because none exists until the driver, once loaded, has created a context (tens
// of milliseconds at the least) and allocated from it.
class DriverPresence {
 public:
  bool loaded() {
    if (loaded_.load(std::memory_order_acquire)) return true;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    const int64_t nowMs = int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
    if (nowMs - scannedAtMs_.load(std::memory_order_relaxed) < kRescanMs) return false;
    scannedAtMs_.store(nowMs, std::memory_order_relaxed);
    unsigned long long adds = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
          *static_cast<unsigned long long*>(out) = info->dlpi_adds;
          return 1;
        },
        &adds);
    if (adds == checkedAt_.load(std::memory_order_relaxed)) return false;
    checkedAt_.store(adds, std::memory_order_relaxed);
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (driver == nullptr) return false;
    dlclose(driver);
    loaded_.store(true, std::memory_order_release);
    return true;
  }

 private:
  static constexpr int64_t kRescanMs = 1;
  std::atomic<bool> loaded_{false};
  std::atomic<unsigned long long> checkedAt_{~0ull};
  std::atomic<int64_t> scannedAtMs_{INT64_MIN / 2};
};

class CudaRuntimeApi final : public DeviceApi {
 public:
  const char* name() const override { return "cuda"; }

  bool mayHoldDeviceMemory() override { return driver_.loaded(); }

  Status classify(const void* ptr, PointerInfo* out) override {
    *out = PointerInfo{};
    if (ptr == nullptr || !driver_.loaded()) return Status::ok();
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
      cudaGetLastError();  // no usable device: the memory is host memory
      return Status::ok();
    }
    if (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged) {
      out->kind = MemoryKind::kDevice;
      out->device = attributes.device;
    }
    return Status::ok();
  }

  Status deviceCount(int* count) override {
    *count = 0;  // left unwritten when there is no driver
    WEFT_CUDA_TRY("cudaGetDeviceCount", cudaGetDeviceCount(count));
    return Status::ok();
  }
  Status setDevice(int device) override {
    WEFT_CUDA_TRY("cudaSetDevice", cudaSetDevice(device));
    return Status::ok();
  }
  Status currentDevice(int* device) override {
    WEFT_CUDA_TRY("cudaGetDevice", cudaGetDevice(device));
    return Status::ok();
  }

  Status deviceUuid(int device, std::array<uint8_t, 16>* out) override {
    std::lock_guard<std::mutex> lock(uuidMutex_);
    for (const auto& [known, uuid] : uuids_) {
      if (known == device) {
        *out = uuid;
        return Status::ok();
      }
    }
    cudaDeviceProp properties{};
    WEFT_CUDA_TRY("cudaGetDeviceProperties", cudaGetDeviceProperties(&properties, device));
    static_assert(sizeof(properties.uuid) == 16);
    std::memcpy(out->data(), &properties.uuid, 16);
    uuids_.emplace_back(device, *out);
    return Status::ok();
  }

  Status streamCreate(Stream* out) override {
    cudaStream_t stream = nullptr;
    WEFT_CUDA_TRY("cudaStreamCreateWithFlags",
                  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    *out = stream;
    return Status::ok();
  }
  void streamDestroy(Stream stream) override { cudaStreamDestroy(asStream(stream)); }
  Status streamSynchronize(Stream stream) override {
    WEFT_CUDA_TRY("cudaStreamSynchronize", cudaStreamSynchronize(asStream(stream)));
    return Status::ok();
  }
  Status eventCreate(Event* out) override {
    cudaEvent_t event = nullptr;
    WEFT_CUDA_TRY("cudaEventCreateWithFlags",
                  cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    *out = event;
    return Status::ok();
  }
  void eventDestroy(Event event) override { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
  Status eventRecord(Event event, Stream stream) override {
    WEFT_CUDA_TRY("cudaEventRecord",
                  cudaEventRecord(static_cast<cudaEvent_t>(event), asStream(stream)));
    return Status::ok();
  }
  Status eventQuery(Event event, bool* done) override {
    const cudaError_t state = cudaEventQuery(static_cast<cudaEvent_t>(event));
    *done = state == cudaSuccess;
    if (state == cudaSuccess || state == cudaErrorNotReady) {
      if (state == cudaErrorNotReady) cudaGetLastError();
      return Status::ok();
    }
    return cudaFailure("cudaEventQuery", state);
  }
  Status streamWaitEvent(Stream stream, Event event) override {
    WEFT_CUDA_TRY("cudaStreamWaitEvent",
                  cudaStreamWaitEvent(asStream(stream), static_cast<cudaEvent_t>(event), 0));
    return Status::ok();
  }

  Status memcpyAsync(void* dst, const void* src, size_t bytes, Stream stream) override {
    WEFT_CUDA_TRY("cudaMemcpyAsync",
                  cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, asStream(stream)));
    return Status::ok();
  }
  Status reduceAsync(const Reduction& reduction, Stream stream) override {
    if (reduction.nsrcs < 1 || reduction.nsrcs > kMaxReduceSources || reduction.ndsts < 1 ||
        reduction.ndsts > kMaxReduceSources) {
      return invalidArgument("reduceAsync: 1..8 sources and destinations");
    }
    kernels::ReduceLaunch launch{};
    for (int i = 0; i < reduction.nsrcs; ++i) launch.srcs[i] = reduction.srcs[i];
    for (int i = 0; i < reduction.ndsts; ++i) launch.dsts[i] = reduction.dsts[i];
    launch.nsrcs = reduction.nsrcs;
    launch.ndsts = reduction.ndsts;
    launch.count = reduction.count;
    launch.type = reduction.type;
    launch.op = reduction.op;
    launch.avgDivisor = reduction.avgDivisor;
    const int launched = kernels::launchReduce(launch, stream);
    if (launched != 0)
      return cudaFailure("the reduction kernel", static_cast<cudaError_t>(launched));
    return Status::ok();
  }

  Status hostAlloc(size_t bytes, void** out) override {
    WEFT_CUDA_TRY("cudaHostAlloc",
                  cudaHostAlloc(out, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    return Status::ok();
  }
  void hostFree(void* ptr) override { cudaFreeHost(ptr); }
  Status hostDevicePointer(void* host, void** device) override {
    WEFT_CUDA_TRY("cudaHostGetDevicePointer", cudaHostGetDevicePointer(device, host, 0));
    return Status::ok();
  }
  Status streamWaitFlag(Stream stream, const volatile uint32_t* flag, uint32_t value) override {
    const int launched = kernels::launchWaitFlag(flag, value, stream);
    if (launched != 0)
      return cudaFailure("the stream-wait kernel", static_cast<cudaError_t>(launched));
    return Status::ok();
  }

  Status ipcGetHandle(const void* ptr, IpcHandle* out) override {
    void* base = nullptr;
    WEFT_TRY(allocationBase(ptr, &base));
    cudaIpcMemHandle_t handle;
    WEFT_CUDA_TRY("cudaIpcGetMemHandle", cudaIpcGetMemHandle(&handle, base));
    static_assert(sizeof(handle) == sizeof(out->bytes));
    std::memcpy(out->bytes.data(), &handle, sizeof(handle));
    out->offset = static_cast<size_t>(static_cast<const char*>(ptr) - static_cast<char*>(base));
    return Status::ok();
  }
  Status ipcOpen(const IpcHandle& handle, void** base) override {
    cudaIpcMemHandle_t raw;
    std::memcpy(&raw, handle.bytes.data(), sizeof(raw));
    WEFT_CUDA_TRY("cudaIpcOpenMemHandle",
                  cudaIpcOpenMemHandle(base, raw, cudaIpcMemLazyEnablePeerAccess));
    return Status::ok();
  }
  void ipcClose(void* base) override { cudaIpcCloseMemHandle(base); }

 private:
  static cudaStream_t asStream(Stream stream) { return static_cast<cudaStream_t>(stream); }

  // The start of the allocation holding ptr: the runtime has no call for it, the driver does.
  Status allocationBase(const void* ptr, void** base) {
    using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
    static GetRange getRange = [] {
      void* entry = nullptr;
      cudaDriverEntryPointQueryResult found{};
      if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &entry, 12000, cudaEnableDefault,
                                           &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        entry = nullptr;
      }
      return reinterpret_cast<GetRange>(entry);
    }();
    if (getRange == nullptr) return Status(weftSystemError, "cuMemGetAddressRange is unavailable");
    CUdeviceptr start = 0;
    size_t size = 0;
    if (getRange(&start, &size, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) {
      return invalidArgument("the pointer is not inside a device allocation");
    }
    *base = reinterpret_cast<void*>(start);
    return Status::ok();
  }

  DriverPresence driver_;
  std::mutex uuidMutex_;
  std::vector<std::pair<int, std::array<uint8_t, 16>>> uuids_;  // cudaGetDeviceProperties is slow
};

}  // namespace

DeviceApi* cudaRuntimeApi() {
  static CudaRuntimeApi api;
  return &api;
}

}  // namespace weft::device
