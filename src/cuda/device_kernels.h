// The GPU kernels weft launches (device_kernels.cu), as plain launch functions, so that the C++20
// code around them never includes a CUDA header of its own. Built only with the CUDA toolkit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::device::kernels {

constexpr int kMaxOperands = 8;

struct ReduceLaunch {
  void* dsts[kMaxOperands];
  int ndsts;
  const void* srcs[kMaxOperands];
  int nsrcs;
  size_t count;
  int type;        // weftDataType_t
  int op;          // weftRedOp_t
  int avgDivisor;  // weftAvg: the number of ranks, else 1
};

// Both return a cudaError_t as int (0: launched).
int launchReduce(const ReduceLaunch& launch, void* stream);
// Holds the stream until the 32-bit word at deviceFlag reaches value (modulo 2^32).
int launchWaitFlag(const volatile uint32_t* deviceFlag, uint32_t value, void* stream);

}  // namespace weft::device::kernels
