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
    case weftMax:
      return a > b ? a : b;
    case weftMin:
      return a < b ? a : b;
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
__global__ void reduceKernel(ReduceLaunch launch) {
  using Acc = Accumulate<T>;
  using A = typename Acc::type;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < launch.count;
       i += stride) {
    A value = Acc::load(static_cast<const T*>(launch.srcs[0])[i]);
    for (int s = 1; s < launch.nsrcs; ++s) {
      value = combine<A>(launch.op, value, Acc::load(static_cast<const T*>(launch.srcs[s])[i]));
    }
    if (launch.op == weftAvg && launch.avgDivisor > 1) value = average(value, launch.avgDivisor);
    const T result = Acc::store(value);
    for (int d = 0; d < launch.ndsts; ++d) static_cast<T*>(launch.dsts[d])[i] = result;
  }
}

template <typename T>
int launchTyped(const ReduceLaunch& launch, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const size_t wanted = (launch.count + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? (wanted == 0 ? 1 : wanted) : 4096);
  reduceKernel<T><<<blocks, kThreads, 0, stream>>>(launch);
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
