// The device-to-device copy ceiling: how fast one GPU copies its own memory with
// cudaMemcpyAsync, at 256 MiB and 1 GiB (or the sizes given, in MiB). It bounds what any
// collective among ranks on that GPU can reach, since each byte of a reduction is at least read
// from one buffer and written to another.
//
// Reported: "copy GB/s" = bytes copied / time (10^9 bytes per second), which is what the checks
// compare busbw with; "rw GB/s" = twice that, the bytes read plus written, for comparison with
// memory-bandwidth figures. The last line, COPY_GBPS_256MiB=<copy GB/s>, is for scripts.
// Exits 77 with "SKIP: no CUDA device (...)" where no GPU can be used.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu_skip.h"

namespace {

void cudaOrDie(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(error));
  std::exit(1);
}

// Seconds per copy of `bytes`, the best of a few timed batches (the ceiling, not the average).
double secondsPerCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  cudaEvent_t start;
  cudaEvent_t stop;
  cudaOrDie(cudaEventCreate(&start), "cudaEventCreate");
  cudaOrDie(cudaEventCreate(&stop), "cudaEventCreate");
  const int copiesPerBatch = bytes >= (size_t(1) << 30) ? 10 : 40;
  for (int i = 0; i < 3; ++i) {  // warm-up: clocks up, pages mapped
    cudaOrDie(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "warm-up");
  }
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    cudaOrDie(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < copiesPerBatch; ++i) {
      cudaOrDie(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpyAsync");
    }
    cudaOrDie(cudaEventRecord(stop, stream), "cudaEventRecord");
    cudaOrDie(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cudaOrDie(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    best = std::min(best, ms / 1e3 / copiesPerBatch);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> mebibytes{256, 1024};
  if (argc > 1) {
    mebibytes.clear();
    for (int i = 1; i < argc; ++i) mebibytes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  const int devices = usableGpus();
  if (devices == 0) return kExitSkip;
  cudaDeviceProp properties{};
  cudaOrDie(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  std::printf("# copy_ceiling: device-to-device cudaMemcpyAsync on GPU 0 (%s)\n", properties.name);
  std::printf("# copy GB/s = bytes copied / time; rw GB/s = bytes read + written / time\n");
  std::printf("# %12s %12s %12s %12s\n", "size(B)", "time(us)", "copy GB/s", "rw GB/s");

  cudaStream_t stream;
  cudaOrDie(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  double at256 = 0;
  for (size_t mib : mebibytes) {
    const size_t bytes = mib << 20;
    void* src = nullptr;
    void* dst = nullptr;
    cudaOrDie(cudaMalloc(&src, bytes), "cudaMalloc");
    cudaOrDie(cudaMalloc(&dst, bytes), "cudaMalloc");
    cudaOrDie(cudaMemset(src, 1, bytes), "cudaMemset");
    cudaOrDie(cudaMemset(dst, 0, bytes), "cudaMemset");
    const double seconds = secondsPerCopy(dst, src, bytes, stream);
    const double copyGBps = double(bytes) / seconds / 1e9;
    std::printf("  %12zu %12.1f %12.1f %12.1f\n", bytes, seconds * 1e6, copyGBps, 2 * copyGBps);
    if (mib == 256) at256 = copyGBps;
    cudaFree(src);
    cudaFree(dst);
  }
  cudaStreamDestroy(stream);
  if (at256 > 0) std::printf("COPY_GBPS_256MiB=%.1f\n", at256);
  return 0;
}
