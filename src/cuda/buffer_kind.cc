#include "cuda/buffer_kind.h"

#include <string>

namespace weft::device {
namespace {

struct Classified {
  PointerInfo info;
  bool used = false;
};

Status classifyOne(DeviceApi* api, int mode, const char* fn, const char* name, const void* ptr,
                   Classified* out) {
  out->used = true;
  if (mode == WEFT_BUFFERS_DEVICE) {
    // Declared device memory the runtime may not know (another allocator's, say): its GPU is
    // what the runtime says if it knows, else the caller's current one.
    Status status = api->classify(ptr, &out->info);
    if (!status.isOk() || out->info.kind != MemoryKind::kDevice) {
      out->info.kind = MemoryKind::kDevice;
      Status current = api->currentDevice(&out->info.device);
      if (!current.isOk()) return current.withContext(std::string(fn) + ": " + name);
    }
    return Status::ok();
  }
  // Runs on every call: the message is built only on failure.
  Status classified = api->classify(ptr, &out->info);
  if (!classified.isOk()) return classified.withContext(std::string(fn) + ": classifying " + name);
  return Status::ok();
}

std::string describe(const PointerInfo& info) {
  return info.kind == MemoryKind::kDevice
             ? "device memory (GPU " + std::to_string(info.device) + ")"
             : "host memory";
}

}  // namespace

Status gpuStateFor(weftComm* comm, const char* fn, GpuState** out) {
  std::lock_guard<std::mutex> lock(comm->gpuMutex);
  if (!comm->gpu) {
    DeviceApi* api = deviceApi();
    if (api == nullptr) {
      return invalidUsage(std::string(fn) +
                          ": this weft was built without CUDA (WEFT_CUDA=OFF or no toolkit found)");
    }
    comm->gpu = std::make_unique<GpuState>(api);
  }
  *out = gpuOf(comm);
  return Status::ok();
}

Status classifyBuffers(const char* fn, weftComm* comm, CollArgs* args) {
  const int mode = comm->config.buffers;
  if (mode == WEFT_BUFFERS_HOST) return Status::ok();
  DeviceApi* api = deviceApi();
  if (api == nullptr) {
    if (mode == WEFT_BUFFERS_DEVICE) {
      return invalidUsage(std::string(fn) +
                          ": WEFT_BUFFERS=device, but this weft was built without CUDA");
    }
    return Status::ok();
  }
  if (mode != WEFT_BUFFERS_DEVICE && !api->mayHoldDeviceMemory()) return Status::ok();
  const CallExtents extents = callExtents(*args, comm->nranks, comm->rank);
  Classified send;
  Classified recv;
  if (extents.sendBytes > 0) WEFT_TRY(classifyOne(api, mode, fn, "sendbuff", args->send, &send));
  if (extents.recvBytes > 0) WEFT_TRY(classifyOne(api, mode, fn, "recvbuff", args->recv, &recv));
  if (send.used && recv.used &&
      (send.info.kind != recv.info.kind || send.info.device != recv.info.device)) {
    return invalidArgument(std::string(fn) + ": sendbuff is " + describe(send.info) +
                           " but recvbuff is " + describe(recv.info) +
                           "; both buffers of a call must be in the same memory");
  }
  const Classified& any = send.used ? send : recv;
  if (!any.used || any.info.kind != MemoryKind::kDevice) return Status::ok();
  GpuState* gpu = nullptr;
  WEFT_TRY(gpuStateFor(comm, fn, &gpu));
  WEFT_TRY(gpu->bindDevice(any.info.device, fn, send.used ? "sendbuff" : "recvbuff"));
  args->deviceBuffers = true;
  args->device = any.info.device;
  return Status::ok();
}

}  // namespace weft::device
