// The NCCL baseline of the GPU checks: an ncclAllReduce sweep (float, sum) printed in
// all_reduce_perf's columns, one process per rank under weftrun. weft is used only to start:
// rank 0's ncclUniqueId reaches the others through a weft broadcast, and the ranks line up on
// weft barriers (host memory) before each timed batch.
//
//   weftrun -n N nccl_baseline [-b 8] [-e 1G] [-n 20] [-w 5]
//
// One rank per GPU always works. More ranks than GPUs needs NCCL 2.30 or newer with
// NCCL_MULTI_RANK_GPU_ENABLE=1; otherwise every rank prints a SKIP line saying why and exits 77,
// as it does without a usable GPU.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu_skip.h"
#include "weft/weft.h"

namespace {

constexpr int kMultiRankGpuVersion = 23000;  // NCCL 2.30.0, in ncclGetVersion's encoding

void cudaOrDie(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(error));
  std::exit(1);
}

void ncclOrDie(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return;
  std::fprintf(stderr, "NCCL error in %s: %s\n", what, ncclGetErrorString(result));
  std::exit(1);
}

void weftOrDie(weftResult_t result, const char* what) {
  if (result == weftSuccess) return;
  std::fprintf(stderr, "weft error in %s: %s / %s\n", what, weftGetErrorString(result),
               weftGetLastError(nullptr));
  std::exit(1);
}

bool parseBytes(const char* text, size_t* bytes) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  double unit = 1;
  if (*end == 'K' || *end == 'k') unit = 1024.0, ++end;
  if (*end == 'M' || *end == 'm') unit = 1024.0 * 1024, ++end;
  if (*end == 'G' || *end == 'g') unit = 1024.0 * 1024 * 1024, ++end;
  if (end == text || *end != '\0' || value < 0) return false;
  *bytes = size_t(value * unit);
  return true;
}

struct Options {
  size_t minBytes = 8;
  size_t maxBytes = size_t(1) << 30;
  int iters = 20;
  int warmup = 5;
};

bool parseOptions(int argc, char** argv, Options* o) {
  if (argc % 2 == 0) return false;  // every flag takes a value
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "-b" && parseBytes(value, &o->minBytes)) continue;
    if (flag == "-e" && parseBytes(value, &o->maxBytes)) continue;
    if (flag == "-n" && (o->iters = std::atoi(value)) > 0) continue;
    if (flag == "-w" && (o->warmup = std::atoi(value)) >= 0) continue;
    return false;
  }
  return o->minBytes >= 4 && o->minBytes <= o->maxBytes;
}

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// Every rank decides alike from the same facts, so a job either runs or skips as a whole.
bool mayRun(int nranks, int devices, int version, std::string* why) {
  if (nranks <= devices) return true;
  if (version < kMultiRankGpuVersion) {
    *why = "NCCL " + std::to_string(version) + " is older than 2.30 (" +
           std::to_string(kMultiRankGpuVersion) + "), which is needed for " +
           std::to_string(nranks) + " ranks on " + std::to_string(devices) + " GPU(s)";
    return false;
  }
  if (envInt("NCCL_MULTI_RANK_GPU_ENABLE", 0) != 1) {
    *why = std::to_string(nranks) + " ranks on " + std::to_string(devices) +
           " GPU(s) need NCCL_MULTI_RANK_GPU_ENABLE=1";
    return false;
  }
  return true;
}

// Seconds per call over `iters` calls, the slowest rank's.
double timeCalls(const void* send, void* recv, size_t count, int iters, ncclComm_t nccl,
                 cudaStream_t stream, weftComm_t weft) {
  weftOrDie(weftBarrier(weft, nullptr), "weftBarrier");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    ncclOrDie(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, nccl, stream), "ncclAllReduce");
  }
  cudaOrDie(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
  weftOrDie(weftAllReduce(&seconds, &seconds, 1, weftFloat64, weftMax, weft, nullptr),
            "weftAllReduce");
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  if (!parseOptions(argc, argv, &opts)) {
    std::fprintf(stderr,
                 "usage: nccl_baseline [-b minbytes] [-e maxbytes] [-n iters] [-w warmup]\n");
    return 2;
  }
  const int devices = usableGpus();
  if (devices == 0) return kExitSkip;
  int version = 0;
  ncclOrDie(ncclGetVersion(&version), "ncclGetVersion");
  const int nranks = envInt("WEFT_NRANKS", 1);
  if (std::string why; !mayRun(nranks, devices, version, &why)) {
    std::printf("SKIP: NCCL baseline with %d ranks: %s\n", nranks, why.c_str());
    return kExitSkip;
  }
  cudaOrDie(cudaSetDevice(envInt("WEFT_LOCAL_RANK", 0) % devices), "cudaSetDevice");

  weftComm_t weft = nullptr;
  weftOrDie(weftCommInitFromEnv(&weft, nullptr), "weftCommInitFromEnv");
  int rank = 0;
  weftCommUserRank(weft, &rank);
  static_assert(sizeof(ncclUniqueId) <= WEFT_UNIQUE_ID_BYTES);
  ncclUniqueId id{};
  if (rank == 0) ncclOrDie(ncclGetUniqueId(&id), "ncclGetUniqueId");
  weftOrDie(weftBroadcast(&id, &id, sizeof(id), weftUint8, 0, weft, nullptr), "weftBroadcast");
  ncclComm_t nccl = nullptr;
  ncclOrDie(ncclCommInitRank(&nccl, nranks, id, rank), "ncclCommInitRank");

  cudaStream_t stream;
  cudaOrDie(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  void* send = nullptr;
  void* recv = nullptr;
  cudaOrDie(cudaMalloc(&send, opts.maxBytes), "cudaMalloc");
  cudaOrDie(cudaMalloc(&recv, opts.maxBytes), "cudaMalloc");
  cudaOrDie(cudaMemset(send, 0, opts.maxBytes), "cudaMemset");
  cudaOrDie(cudaMemset(recv, 0, opts.maxBytes), "cudaMemset");

  if (rank == 0) {
    std::printf("# nccl_baseline: NCCL %d, %d ranks on %d GPU(s), ncclAllReduce float sum\n",
                version, nranks, devices);
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong");
  }
  const double busFactor = 2.0 * (nranks - 1) / nranks;
  for (size_t bytes = opts.minBytes; bytes <= opts.maxBytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float);
    timeCalls(send, recv, count, std::max(opts.warmup, 1), nccl, stream, weft);
    if (rank == 0) std::printf("%12zu  %12zu  %8s  %6s  %6d", count * 4, count, "float", "sum", -1);
    for (bool inPlace : {false, true}) {
      const double seconds =
          timeCalls(inPlace ? recv : send, recv, count, opts.iters, nccl, stream, weft);
      const double algBw = double(count * 4) / seconds / 1e9;
      if (rank == 0) {
        std::printf("  %7.2f  %6.2f  %6.2f    N/A", seconds * 1e6, algBw, algBw * busFactor);
      }
    }
    if (rank == 0) {
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(stream);
  ncclCommDestroy(nccl);
  weftCommDestroy(weft);
  return 0;
}
