#include "device_memory.h"

#include <cstdio>
#include <cstdlib>

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft::perf {

#ifdef WEFT_HAVE_CUDA

namespace {

// A CUDA failure after the probe succeeded is a broken run, like a weft failure: end it.
void check(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return;
  std::printf("Test CUDA failure %s: '%s'\n", call, cudaGetErrorString(error));
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace

bool deviceMemoryBuilt() {
  return true;
}

bool probeDevice(std::string* reason) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *reason = cudaGetErrorString(error);
    return false;
  }
  if (count == 0) {
    *reason = "no device found";
    return false;
  }
  return true;
}

void selectRankDevice(int rank) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  check(cudaSetDevice(rank % count), "cudaSetDevice");
}

std::string currentDeviceDescription() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return "GPU " + std::to_string(device) + " (" + properties.name + ")";
}

void DeviceFree::operator()(char* memory) const {
  cudaFree(memory);
}

DeviceBuffer allocateDeviceBuffer(size_t bytes) {
  void* memory = nullptr;
  check(cudaMalloc(&memory, bytes ? bytes : 1), "cudaMalloc");
  check(cudaMemset(memory, 0, bytes), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return DeviceBuffer(static_cast<char*>(memory));
}

void copyToDevice(void* dst, const void* src, size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  // From pageable memory cudaMemcpy may return before the data lands; the call that reads it
  // next runs on another stream, which would not wait for it.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

void copyToHost(void* dst, const void* src, size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void* createStream() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return stream;
}

void destroyStream(void* stream) {
  cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

void synchronizeStream(void* stream) {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

#else  // !WEFT_HAVE_CUDA

namespace {

[[noreturn]] void unavailable() {
  std::fprintf(stderr, "internal error: a CUDA call in a build of the perf tools without CUDA\n");
  std::abort();
}

}  // namespace

bool deviceMemoryBuilt() {
  return false;
}
bool probeDevice(std::string* reason) {
  *reason = "built without CUDA";
  return false;
}
void selectRankDevice(int) {
  unavailable();
}
std::string currentDeviceDescription() {
  unavailable();
}
void DeviceFree::operator()(char* memory) const {
  if (memory != nullptr) unavailable();
}
DeviceBuffer allocateDeviceBuffer(size_t) {
  unavailable();
}
void copyToDevice(void*, const void*, size_t) {
  unavailable();
}
void copyToHost(void*, const void*, size_t) {
  unavailable();
}
void* createStream() {
  unavailable();
}
void destroyStream(void*) {
  unavailable();
}
void synchronizeStream(void*) {
  unavailable();
}

#endif  // WEFT_HAVE_CUDA

}  // namespace weft::perf
