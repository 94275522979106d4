// GPU buffers for the *_perf tools (-k device, -s 1): the few CUDA runtime calls the driver needs,
// behind plain functions so that common.cc stays free of CUDA headers and builds without them.
// In a build without CUDA (WEFT_HAVE_CUDA undefined) only deviceMemoryBuilt() may be called.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace weft::perf {

// Whether these tools were built with CUDA, i.e. whether -k device can work at all.
bool deviceMemoryBuilt();

// Whether a GPU is usable; otherwise *reason holds the runtime's error text (no driver, no device).
bool probeDevice(std::string* reason);

// Makes rank's GPU (rank % device count) current for the calling thread.
void selectRankDevice(int rank);
// The current GPU's name and ordinal, for the preamble.
std::string currentDeviceDescription();

struct DeviceFree {
  void operator()(char* memory) const;
};
using DeviceBuffer = std::unique_ptr<char, DeviceFree>;

// Zeroed device memory on the current GPU; exits the process when it cannot be had.
DeviceBuffer allocateDeviceBuffer(size_t bytes);
void copyToDevice(void* dst, const void* src, size_t bytes);
void copyToHost(void* dst, const void* src, size_t bytes);

// A stream that does not synchronise with the legacy default stream (a cudaStream_t).
void* createStream();
void destroyStream(void* stream);
void synchronizeStream(void* stream);

}  // namespace weft::perf
