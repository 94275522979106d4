// How every GPU program leaves where no GPU can be used: the line the script and ctest read, and
// ctest's skip code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>

constexpr int kExitSkip = 77;

// The number of usable GPUs; 0 after printing "SKIP: no CUDA device (why)".
inline int usableGpus() {
  int devices = 0;  // left unwritten when there is no driver
  if (const cudaError_t error = cudaGetDeviceCount(&devices); error != cudaSuccess) {
    std::printf("SKIP: no CUDA device (%s)\n", cudaGetErrorString(error));
    return 0;
  }
  if (devices == 0) std::printf("SKIP: no CUDA device (none found)\n");
  return devices;
}
