// Reductions over device memory for every weft datatype and op, and the kernel that holds a
// caller's stream until a stream-ordered call is released.
//
// A reduction combines up to kMaxOperands sources element by element and writes the result to
// up to kMaxOperands destinations (the direct algorithms reduce a share from every rank's buffer
// and write it to every rank's output in one pass). 16-bit floats are combined in float and
// rounded once at the end; averages divide as the host kernels do (reduce/reduce.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/device_kernels.h"
#include "weft/weft.h"

namespace weft::device::kernels {
namespace {

template <typename T>
struct Accumulate {
  using type = T;
  __device__ static T load(const T& value) { return value; }
  __device__ static T store(T value) { return value; }
};
template <>
struct Accumulate<__half> {
  using type = float;
  __device__ static float load(const __half& value) { return __half2float(value); }
  __device__ static __half store(float value) { return __float2half_rn(value); }
};
template <>
struct Accumulate<__nv_bfloat16> {
  using type = float;
  __device__ static float load(const __nv_bfloat16& value) { return __bfloat162float(value); }
  __device__ static __nv_bfloat16 store(float value) { return __float2bfloat16_rn(value); }
};

template <typename A>
__device__ A combine(int op, A a, A b) {
  switch (op) {
    case weftProd:
      return a * b;
    // A NaN operand gives NaN, as on the host (a != a only for a NaN; never for integers).
    case weftMax:
      return (a > b || a != a) ? a : b;
    case weftMin:
      return (a < b || a != a) ? a : b;
    default:
      return a + b;  // sum and avg
  }
}

template <typename A>
__device__ A average(A sum, int divisor) {
  return sum / static_cast<A>(divisor);  // integers: truncation toward zero, as C
}
__device__ float average(float sum, int divisor) {
  return sum * (1.0f / static_cast<float>(divisor));
}
__device__ double average(double sum, int divisor) {
  return sum * (1.0 / static_cast<double>(divisor));
}

template <typename T>
__device__ typename Accumulate<T>::type finish(const ReduceLaunch& launch,
                                               typename Accumulate<T>::type value) {
  if (launch.op == weftAvg && launch.avgDivisor > 1) return average(value, launch.avgDivisor);
  return value;
}

// 16 bytes per operand and thread where every operand is 16-byte aligned (cudaMalloc'd buffers
// and the direct algorithms' 64-byte share boundaries are): memory bandwidth is the bound, and
// wide accesses reach it with fewer instructions. The tail, and unaligned operands, go element
// by element.
template <typename T>
__global__ void reduceKernel(ReduceLaunch launch, bool wide) {
  using Acc = Accumulate<T>;
  using A = typename Acc::type;
  constexpr int kLanes = 16 / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t groups = wide ? launch.count / kLanes : 0;
  for (size_t g = first; g < groups; g += stride) {
    A lanes[kLanes];
    uint4 raw = static_cast<const uint4*>(launch.srcs[0])[g];
    for (int l = 0; l < kLanes; ++l) lanes[l] = Acc::load(reinterpret_cast<const T*>(&raw)[l]);
    for (int s = 1; s < launch.nsrcs; ++s) {
      raw = static_cast<const uint4*>(launch.srcs[s])[g];
      for (int l = 0; l < kLanes; ++l) {
        lanes[l] = combine<A>(launch.op, lanes[l], Acc::load(reinterpret_cast<const T*>(&raw)[l]));
      }
    }
    uint4 out;
    for (int l = 0; l < kLanes; ++l) {
      reinterpret_cast<T*>(&out)[l] = Acc::store(finish<T>(launch, lanes[l]));
    }
    for (int d = 0; d < launch.ndsts; ++d) static_cast<uint4*>(launch.dsts[d])[g] = out;
  }
  for (size_t i = groups * kLanes + first; i < launch.count; i += stride) {
    A value = Acc::load(static_cast<const T*>(launch.srcs[0])[i]);
    for (int s = 1; s < launch.nsrcs; ++s) {
      value = combine<A>(launch.op, value, Acc::load(static_cast<const T*>(launch.srcs[s])[i]));
    }
    const T result = Acc::store(finish<T>(launch, value));
    for (int d = 0; d < launch.ndsts; ++d) static_cast<T*>(launch.dsts[d])[i] = result;
  }
}

bool allAligned(const ReduceLaunch& launch) {
  auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  for (int s = 0; s < launch.nsrcs; ++s) {
    if (!aligned(launch.srcs[s])) return false;
  }
  for (int d = 0; d < launch.ndsts; ++d) {
    if (!aligned(launch.dsts[d])) return false;
  }
  return true;
}

template <typename T>
int launchTyped(const ReduceLaunch& launch, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const bool wide = allAligned(launch);
  const size_t items = wide ? launch.count / (16 / sizeof(T)) + 16 : launch.count;
  const size_t wanted = (items + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? (wanted == 0 ? 1 : wanted) : 4096);
  reduceKernel<T><<<blocks, kThreads, 0, stream>>>(launch, wide);
  return static_cast<int>(cudaGetLastError());
}

__global__ void waitFlagKernel(const volatile uint32_t* flag, uint32_t value) {
  while (static_cast<int32_t>(*flag - value) < 0) __nanosleep(1000);
}

}  // namespace

int launchReduce(const ReduceLaunch& launch, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (launch.type) {
    case weftInt8:
      return launchTyped<int8_t>(launch, s);
    case weftUint8:
      return launchTyped<uint8_t>(launch, s);
    case weftInt32:
      return launchTyped<int32_t>(launch, s);
    case weftUint32:
      return launchTyped<uint32_t>(launch, s);
    case weftInt64:
      return launchTyped<int64_t>(launch, s);
    case weftUint64:
      return launchTyped<uint64_t>(launch, s);
    case weftFloat16:
      return launchTyped<__half>(launch, s);
    case weftFloat32:
      return launchTyped<float>(launch, s);
    case weftFloat64:
      return launchTyped<double>(launch, s);
    case weftBfloat16:
      return launchTyped<__nv_bfloat16>(launch, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

int launchWaitFlag(const volatile uint32_t* deviceFlag, uint32_t value, void* stream) {
  waitFlagKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(deviceFlag, value);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace weft::device::kernels
