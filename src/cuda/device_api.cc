#include "cuda/device_api.h"

#include <atomic>

#include "cuda/gpu_state.h"

namespace weft::device {

#ifdef WEFT_HAVE_CUDA
DeviceApi* cudaRuntimeApi();  // cuda_runtime_api.cc
#endif

namespace {

std::atomic<DeviceApi*> gTestingApi{nullptr};

}  // namespace

DeviceApi* deviceApi() {
  if (DeviceApi* testing = gTestingApi.load(std::memory_order_acquire)) return testing;
#ifdef WEFT_HAVE_CUDA
  return cudaRuntimeApi();
#else
  return nullptr;
#endif
}

void setDeviceApiForTesting(DeviceApi* api) {
  DeviceApi* previous = gTestingApi.exchange(api, std::memory_order_acq_rel);
  if (previous != nullptr && previous != api) forgetReleaseFlags(previous);
}

}  // namespace weft::device
