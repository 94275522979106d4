// Every collective of weft on CUDA device buffers, checked exactly. Run under weftrun (one
// process per rank, all of them on the one GPU or spread as local rank % device count):
//
//   weftrun -n 2 gpu_check [--counts 1,7,1048579] [--types float32,bfloat16,int32]
//                          [--modes blocking,stream]
//
// For each type, count, collective, in place and out of place, blocking and on a user stream it
// prints one line (PASS/FAIL ...) from rank 0 and exits 1 if any case failed on any rank, 77 with
// "SKIP: no CUDA device (...)" where no GPU can be used, 2 where weft cannot start.
//
// Inputs and expected results are computed by kernels on the GPU from (rank, index), so a
// 64 Mi-element case costs milliseconds of checking. Every value is a small integer, so sums and
// averages are exact in bfloat16 and float32 whatever order weft reduces in. The stream form is
// checked for ordering too: a delay kernel, the poison and the input fill are queued on the
// stream just before the call (nothing synchronised), and the result is read through a copy
// queued after it; a call that ran early or returned its stream early would see or leave poison.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_skip.h"
#include "weft/weft.h"

namespace {

// Elements past the largest region a call may write: poisoned and checked, to catch overruns.
constexpr size_t kGuard = 64;

// ---- Values (device side) -----------------------------------------------------------------------

// What rank `rank` contributes at `index` of its input: in [-7, 7], so that a sum over up to 8
// ranks stays far below bfloat16's exact-integer limit (256).
__host__ __device__ int baseValue(int rank, long long index) {
  return int((index * 7 + rank * 13) % 15) - 7;
}

// weftAvg's inputs are multiples of nranks, so the average is an integer whatever weft computes
// in (truncating division for int32, multiplication by 1/nranks for floats).
__device__ int inputValue(weftRedOp_t op, int nranks, int rank, long long index) {
  if (op == weftAvg) return nranks * (int((index * 7 + rank * 13) % 5) - 2);
  return baseValue(rank, index);
}

enum class Kind : int {
  kReduced,  // the reduction with `op` over all ranks' inputs at base + k
  kSingle,   // rank `source`'s input at base + k
  kBlocks,   // block j = k / block comes from rank j, its input at base + k % block
  kPoison,   // untouched
};

struct Expect {
  Kind kind;
  weftRedOp_t op;
  int nranks;
  int source;
  long long base;
  long long block;
};

__device__ int expectedValue(const Expect& e, long long k) {
  switch (e.kind) {
    case Kind::kSingle:
      return inputValue(e.op, e.nranks, e.source, e.base + k);
    case Kind::kBlocks:
      return inputValue(e.op, e.nranks, int(k / e.block), e.base + k % e.block);
    default: {
      int result = inputValue(e.op, e.nranks, 0, e.base + k);
      for (int r = 1; r < e.nranks; ++r) {
        const int v = inputValue(e.op, e.nranks, r, e.base + k);
        result = e.op == weftMax ? max(result, v) : result + v;
      }
      return e.op == weftAvg ? result / e.nranks : result;
    }
  }
}

template <class T>
struct Traits;
template <>
struct Traits<float> {
  __device__ static float from(int v) { return float(v); }
  __device__ static double value(float v) { return v; }
  __device__ static float poison() { return __int_as_float(0x7fc00bad); }  // a NaN
  __device__ static bool isPoison(float v) { return __float_as_int(v) == 0x7fc00bad; }
};
template <>
struct Traits<__nv_bfloat16> {
  __device__ static __nv_bfloat16 from(int v) { return __float2bfloat16(float(v)); }
  __device__ static double value(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 poison() { return __ushort_as_bfloat16(0x7fcb); }  // a NaN
  __device__ static bool isPoison(__nv_bfloat16 v) { return __bfloat16_as_ushort(v) == 0x7fcb; }
};
template <>
struct Traits<int32_t> {
  __device__ static int32_t from(int v) { return v; }
  __device__ static double value(int32_t v) { return v; }
  __device__ static int32_t poison() { return 0x5a5a5a5a; }
  __device__ static bool isPoison(int32_t v) { return v == 0x5a5a5a5a; }
};

struct CheckResult {
  unsigned long long mismatches;
  int claimed;  // the first thread to find a mismatch records it
  long long index;
  double got;
  double want;
};

template <class T>
__global__ void fillInput(T* dst, long long n, weftRedOp_t op, int nranks, int rank,
                          long long base) {
  for (long long k = blockIdx.x * 1ll * blockDim.x + threadIdx.x; k < n;
       k += 1ll * gridDim.x * blockDim.x) {
    dst[k] = Traits<T>::from(inputValue(op, nranks, rank, base + k));
  }
}

template <class T>
__global__ void fillPoison(T* dst, long long n) {
  for (long long k = blockIdx.x * 1ll * blockDim.x + threadIdx.x; k < n;
       k += 1ll * gridDim.x * blockDim.x) {
    dst[k] = Traits<T>::poison();
  }
}

// `offset`: where this piece starts in the buffer, for the message.
template <class T>
__global__ void checkPiece(const T* got, long long n, Expect e, long long offset,
                           CheckResult* result) {
  for (long long k = blockIdx.x * 1ll * blockDim.x + threadIdx.x; k < n;
       k += 1ll * gridDim.x * blockDim.x) {
    bool ok;
    double want = 0;
    if (e.kind == Kind::kPoison) {
      ok = Traits<T>::isPoison(got[k]);
      want = CUDART_NAN;
    } else {
      want = expectedValue(e, k);
      ok = Traits<T>::value(got[k]) == want;
    }
    if (ok) continue;
    atomicAdd(&result->mismatches, 1ull);
    if (atomicCAS(&result->claimed, 0, 1) == 0) {
      result->index = offset + k;
      result->got = Traits<T>::value(got[k]);
      result->want = want;
    }
  }
}

// Holds the stream for a while, so that anything not ordered behind it runs first.
__global__ void delay(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// ---- Host side ---------------------------------------------------------------------------------

void cudaOrDie(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(error));
  std::exit(1);
}

unsigned gridFor(long long n) {
  return unsigned(std::min<long long>((n + 255) / 256 + 1, 4096));
}

enum class Coll {
  kAllReduceSum,
  kAllReduceAvg,
  kAllReduceMax,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kRing,
  kBarrier,
};
constexpr Coll kColls[] = {Coll::kAllReduceSum,  Coll::kAllReduceAvg, Coll::kAllReduceMax,
                           Coll::kBroadcast,     Coll::kReduce,       Coll::kAllGather,
                           Coll::kReduceScatter, Coll::kAllToAll,     Coll::kGather,
                           Coll::kScatter,       Coll::kRing,         Coll::kBarrier};

const char* collName(Coll c) {
  constexpr const char* kNames[] = {"allreduce.sum", "allreduce.avg", "allreduce.max", "broadcast",
                                    "reduce",        "allgather",     "reducescatter", "alltoall",
                                    "gather",        "scatter",       "sendrecv.ring", "barrier"};
  return kNames[int(c)];
}

weftRedOp_t collOp(Coll c) {
  return c == Coll::kAllReduceAvg ? weftAvg : c == Coll::kAllReduceMax ? weftMax : weftSum;
}

struct TypeInfo {
  const char* name;
  weftDataType_t type;
  size_t size;
};
constexpr TypeInfo kTypes[] = {
    {"float32", weftFloat32, 4}, {"bfloat16", weftBfloat16, 2}, {"int32", weftInt32, 4}};

struct Config {
  std::vector<size_t> counts{1, 7, 1048579};
  std::vector<TypeInfo> types{kTypes[0], kTypes[1], kTypes[2]};
  std::vector<bool> streamModes{false, true};
};

// One piece of the receive allocation and what it must hold afterwards.
struct Piece {
  size_t start;
  size_t length;
  Expect expect;
};

// What one case sets up and checks, in elements of the two allocations (each nranks * count +
// kGuard long).
struct Plan {
  bool sendInRecv = false;  // the input lives in the receive allocation (in place)
  size_t sendOffset = 0;    // where the input starts in its allocation
  size_t sendLength = 0;    // how many input elements this rank fills
  size_t recvOffset = 0;    // where the call's recvbuff points in the receive allocation
  std::vector<Piece> pieces;
};

class Checker {
 public:
  Checker(weftComm_t comm, int rank, int nranks, size_t maxCount) : comm_(comm) {
    rank_ = rank;
    nranks_ = nranks;
    capacity_ = size_t(nranks) * maxCount + kGuard;
    cudaOrDie(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cudaOrDie(cudaMalloc(&send_, capacity_ * 4), "cudaMalloc send");
    cudaOrDie(cudaMalloc(&recv_, capacity_ * 4), "cudaMalloc recv");
    cudaOrDie(cudaMalloc(&copy_, capacity_ * 4), "cudaMalloc copy");
    cudaOrDie(cudaMalloc(&result_, sizeof(CheckResult)), "cudaMalloc result");
  }
  ~Checker() {
    cudaFree(send_);
    cudaFree(recv_);
    cudaFree(copy_);
    cudaFree(result_);
    cudaStreamDestroy(stream_);
  }

  // Runs one case on every rank; returns whether it passed on all of them.
  bool run(Coll coll, const TypeInfo& type, size_t count, bool inPlace, bool onStream) {
    long long mismatches = 0;
    if (type.type == weftFloat32)
      mismatches = runTyped<float>(coll, type, count, inPlace, onStream);
    if (type.type == weftBfloat16)
      mismatches = runTyped<__nv_bfloat16>(coll, type, count, inPlace, onStream);
    if (type.type == weftInt32)
      mismatches = runTyped<int32_t>(coll, type, count, inPlace, onStream);
    long long total = 0;
    weftOrDie(weftAllReduce(&mismatches, &total, 1, weftInt64, weftSum, comm_, nullptr),
              "weftAllReduce of the verdicts");
    if (rank_ == 0) {
      std::printf("%s %-14s %-8s count=%-9zu %-12s %-8s np=%d", total ? "FAIL" : "PASS",
                  collName(coll), type.name, count, inPlace ? "in-place" : "out-of-place",
                  onStream ? "stream" : "blocking", nranks_);
      if (total) std::printf("  (%lld wrong elements over all ranks)", total);
      std::printf("\n");
      std::fflush(stdout);
    }
    return total == 0;
  }

 private:
  void weftOrDie(weftResult_t result, const char* what) {
    if (result == weftSuccess) return;
    std::fprintf(stderr, "rank %d: %s failed: %s / %s\n", rank_, what, weftGetErrorString(result),
                 weftGetLastError(comm_));
    std::exit(1);
  }

  Plan plan(Coll coll, size_t c, bool inPlace) const {
    const size_t n = size_t(nranks_);
    const int r = rank_;
    const int root = nranks_ - 1;  // not 0, so that a root mix-up shows
    const weftRedOp_t op = collOp(coll);
    const int from = (r - 1 + nranks_) % nranks_;
    auto expect = [&](Kind kind, int source, long long base, long long block) {
      return Expect{kind, op, nranks_, source, base, block};
    };
    const Expect poison = expect(Kind::kPoison, 0, 0, 0);
    Plan p;
    p.sendInRecv = inPlace;
    p.sendLength = c;
    size_t written = c;  // the receive elements the call may write; the rest stays poison
    switch (coll) {
      case Coll::kAllReduceSum:
      case Coll::kAllReduceAvg:
      case Coll::kAllReduceMax:
        p.pieces = {{0, c, expect(Kind::kReduced, 0, 0, 0)}};
        break;
      case Coll::kBroadcast:
        p.pieces = {{0, c, expect(Kind::kSingle, root, 0, 0)}};
        break;
      case Coll::kReduce:
        if (r == root) {
          p.pieces = {{0, c, expect(Kind::kReduced, 0, 0, 0)}};
        } else {
          p.pieces = {{0, c, inPlace ? expect(Kind::kSingle, r, 0, 0) : poison}};
        }
        break;
      case Coll::kAllGather:
        p.sendOffset = inPlace ? r * c : 0;
        written = n * c;
        p.pieces = {{0, n * c, expect(Kind::kBlocks, 0, 0, long(c))}};
        break;
      case Coll::kReduceScatter:
        p.sendLength = n * c;
        p.recvOffset = inPlace ? r * c : 0;
        written = inPlace ? n * c : c;
        p.pieces = {{p.recvOffset, c, expect(Kind::kReduced, 0, long(r * c), 0)}};
        break;
      case Coll::kAllToAll:
        p.sendLength = n * c;
        written = n * c;
        p.pieces = {{0, n * c, expect(Kind::kBlocks, 0, long(r * c), long(c))}};
        break;
      case Coll::kGather:
        p.sendOffset = inPlace ? r * c : 0;
        written = n * c;
        if (r == root) {
          p.pieces = {{0, n * c, expect(Kind::kBlocks, 0, 0, long(c))}};
        } else if (inPlace) {  // only its own input, where it put it
          p.pieces = {{0, r * c, poison},
                      {r * c, c, expect(Kind::kSingle, r, 0, 0)},
                      {(r + 1) * c, (n - r - 1) * c, poison}};
        } else {
          p.pieces = {{0, n * c, poison}};
        }
        break;
      case Coll::kScatter:
        p.sendLength = n * c;
        p.recvOffset = inPlace ? r * c : 0;
        written = inPlace ? n * c : c;
        p.pieces = {{p.recvOffset, c, expect(Kind::kSingle, root, long(r * c), 0)}};
        if (inPlace) {  // the rest of the buffer is this rank's input, which must stay
          p.pieces.push_back({0, r * c, expect(Kind::kSingle, r, 0, 0)});
          p.pieces.push_back(
              {(r + 1) * c, (n - r - 1) * c, expect(Kind::kSingle, r, long((r + 1) * c), 0)});
        }
        break;
      case Coll::kRing:
        p.pieces = {{0, c, expect(Kind::kSingle, from, 0, 0)}};
        break;
      case Coll::kBarrier:
        p.sendLength = 0;
        written = 0;
        break;
    }
    p.pieces.push_back({written, capacity_ - written, poison});
    return p;
  }

  weftResult_t call(Coll coll, const TypeInfo& t, size_t c, const void* s, void* d, bool onStream) {
    const int root = nranks_ - 1;
    const weftRedOp_t op = collOp(coll);
    void* st = onStream ? stream_ : nullptr;
    const int to = (rank_ + 1) % nranks_;
    const int from = (rank_ - 1 + nranks_) % nranks_;
    switch (coll) {
      case Coll::kAllReduceSum:
      case Coll::kAllReduceAvg:
      case Coll::kAllReduceMax:
        return onStream ? weftAllReduceOnStream(s, d, c, t.type, op, comm_, st)
                        : weftAllReduce(s, d, c, t.type, op, comm_, nullptr);
      case Coll::kBroadcast:
        return onStream ? weftBroadcastOnStream(s, d, c, t.type, root, comm_, st)
                        : weftBroadcast(s, d, c, t.type, root, comm_, nullptr);
      case Coll::kReduce:
        return onStream ? weftReduceOnStream(s, d, c, t.type, op, root, comm_, st)
                        : weftReduce(s, d, c, t.type, op, root, comm_, nullptr);
      case Coll::kAllGather:
        return onStream ? weftAllGatherOnStream(s, d, c, t.type, comm_, st)
                        : weftAllGather(s, d, c, t.type, comm_, nullptr);
      case Coll::kReduceScatter:
        return onStream ? weftReduceScatterOnStream(s, d, c, t.type, op, comm_, st)
                        : weftReduceScatter(s, d, c, t.type, op, comm_, nullptr);
      case Coll::kAllToAll:
        return onStream ? weftAlltoAllOnStream(s, d, c, t.type, comm_, st)
                        : weftAlltoAll(s, d, c, t.type, comm_, nullptr);
      case Coll::kGather:
        return onStream ? weftGatherOnStream(s, d, c, t.type, root, comm_, st)
                        : weftGather(s, d, c, t.type, root, comm_, nullptr);
      case Coll::kScatter:
        return onStream ? weftScatterOnStream(s, d, c, t.type, root, comm_, st)
                        : weftScatter(s, d, c, t.type, root, comm_, nullptr);
      case Coll::kBarrier:
        return onStream ? weftBarrierOnStream(comm_, st) : weftBarrier(comm_, nullptr);
      case Coll::kRing: {
        weftResult_t result = weftGroupStart();
        if (result != weftSuccess) return result;
        result = onStream ? weftSendOnStream(s, c, t.type, to, comm_, st)
                          : weftSend(s, c, t.type, to, comm_, nullptr);
        if (result == weftSuccess) {
          result = onStream ? weftRecvOnStream(d, c, t.type, from, comm_, st)
                            : weftRecv(d, c, t.type, from, comm_, nullptr);
        }
        const weftResult_t ended = weftGroupEnd();
        return result != weftSuccess ? result : ended;
      }
    }
    return weftInternalError;
  }

  // This rank's wrong elements in one case.
  template <class T>
  long long runTyped(Coll coll, const TypeInfo& type, size_t c, bool inPlace, bool onStream) {
    const Plan p = plan(coll, c, inPlace);
    T* sendAlloc = static_cast<T*>(send_);
    T* recvAlloc = static_cast<T*>(recv_);
    T* input = (p.sendInRecv ? recvAlloc : sendAlloc) + p.sendOffset;
    T* output = recvAlloc + p.recvOffset;
    // In place, recvbuff is sendbuff (AllGather and Gather: sendbuff lies inside recvbuff,
    // ReduceScatter and Scatter: recvbuff lies inside sendbuff).
    const void* sendbuff = input;
    void* recvbuff = output;

    if (onStream) delay<<<1, 1, 0, stream_>>>(2'000'000);  // about a millisecond
    fillPoison<T><<<gridFor(long(capacity_)), 256, 0, stream_>>>(recvAlloc, long(capacity_));
    if (p.sendLength > 0) {
      fillInput<T><<<gridFor(long(p.sendLength)), 256, 0, stream_>>>(
          input, long(p.sendLength), collOp(coll), nranks_, rank_, 0);
    }
    cudaOrDie(cudaGetLastError(), "the fill kernels");
    if (!onStream) cudaOrDie(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (inputs)");

    weftOrDie(call(coll, type, c, sendbuff, recvbuff, onStream), collName(coll));

    const T* checked = recvAlloc;
    if (onStream) {  // read through work queued behind the call
      cudaOrDie(
          cudaMemcpyAsync(copy_, recv_, capacity_ * sizeof(T), cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync (result)");
      checked = static_cast<const T*>(copy_);
    }
    cudaOrDie(cudaMemsetAsync(result_, 0, sizeof(CheckResult), stream_), "cudaMemsetAsync");
    for (const Piece& piece : p.pieces) {
      if (piece.length == 0) continue;
      checkPiece<T><<<gridFor(long(piece.length)), 256, 0, stream_>>>(
          checked + piece.start, long(piece.length), piece.expect, long(piece.start), result_);
    }
    cudaOrDie(cudaGetLastError(), "the check kernels");
    CheckResult result{};
    cudaOrDie(cudaMemcpyAsync(&result, result_, sizeof(result), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (verdict)");
    cudaOrDie(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (checks)");
    if (result.mismatches) {
      std::fprintf(stderr,
                   "rank %d: %s %s count=%zu %s %s: %llu wrong, e.g. element %lld is %g, want %g\n",
                   rank_, collName(coll), type.name, c, inPlace ? "in-place" : "out-of-place",
                   onStream ? "stream" : "blocking", result.mismatches, result.index, result.got,
                   result.want);
    }
    return (long long)result.mismatches;
  }

  weftComm_t comm_;
  int rank_ = 0;
  int nranks_ = 1;
  size_t capacity_ = 0;  // elements of each allocation
  cudaStream_t stream_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  void* copy_ = nullptr;
  CheckResult* result_ = nullptr;
};

std::vector<std::string> splitList(const char* text) {
  std::vector<std::string> items;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) items.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return items;
}

bool parseArgs(int argc, char** argv, Config* config) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return false;
    }
    const std::vector<std::string> items = splitList(argv[++i]);
    if (flag == "--counts") {
      config->counts.clear();
      for (const std::string& item : items) config->counts.push_back(std::stoull(item));
    } else if (flag == "--types") {
      config->types.clear();
      for (const std::string& item : items) {
        bool known = false;
        for (const TypeInfo& t : kTypes) {
          if (item == t.name) config->types.push_back(t), known = true;
        }
        if (!known) {
          std::fprintf(stderr, "unknown type %s (float32, bfloat16, int32)\n", item.c_str());
          return false;
        }
      }
    } else if (flag == "--modes") {
      config->streamModes.clear();
      for (const std::string& item : items) {
        if (item != "blocking" && item != "stream") {
          std::fprintf(stderr, "unknown mode %s (blocking, stream)\n", item.c_str());
          return false;
        }
        config->streamModes.push_back(item == "stream");
      }
    } else {
      std::fprintf(stderr,
                   "usage: gpu_check [--counts 1,7,1048579] [--types float32,bfloat16,int32] "
                   "[--modes blocking,stream]\n");
      return false;
    }
  }
  return !config->counts.empty() && !config->types.empty() && !config->streamModes.empty();
}

int localRank() {
  const char* local = std::getenv("WEFT_LOCAL_RANK");
  return local ? std::atoi(local) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  if (!parseArgs(argc, argv, &config)) return 2;
  // Before the rendezvous, so that every rank of a job without a GPU leaves the same way.
  const int devices = usableGpus();
  if (devices == 0) return kExitSkip;
  cudaOrDie(cudaSetDevice(localRank() % devices), "cudaSetDevice");
  cudaOrDie(cudaFree(nullptr), "creating the CUDA context");  // weft sees a process using CUDA

  weftComm_t comm = nullptr;
  if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "init failed: %s\n", weftGetLastError(nullptr));
    return 2;
  }
  int rank = 0;
  int nranks = 1;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &nranks);
  size_t maxCount = 0;
  for (size_t count : config.counts) maxCount = std::max(maxCount, count);

  int cases = 0;
  int failed = 0;
  {
    Checker checker(comm, rank, nranks, maxCount);
    for (const TypeInfo& type : config.types) {
      for (size_t count : config.counts) {
        for (Coll coll : kColls) {
          for (bool inPlace : {false, true}) {
            // A ring send into the buffer being sent from is undefined; a barrier has no buffers.
            if (inPlace && (coll == Coll::kRing || coll == Coll::kBarrier)) continue;
            for (bool onStream : config.streamModes) {
              ++cases;
              failed += !checker.run(coll, type, count, inPlace, onStream);
            }
          }
        }
      }
    }
  }
  if (rank == 0) {
    std::printf("gpu_check: %d cases, %d failed, %d ranks on %d GPU(s)\n", cases, failed, nranks,
                devices);
  }
  weftCommDestroy(comm);
  return failed ? 1 : 0;
}
