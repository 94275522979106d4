// The multi-rank correctness matrix: every collective x datatype x op x size class, in place and
// out of place, checked element by element against a reference computed locally. Inputs are
// small integers chosen per op so that every result is exact in every datatype (float16 and
// bfloat16 included) whatever order the algorithm reduces in; integer results wrap as the
// library's do. Used by the threaded tests and by the process-based checker run under weftrun.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::test {

enum class Coll {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kBarrier,
  kSendRecv
};
const char* collLabel(Coll coll);
std::vector<Coll> allColls();

// Device memory for the matrix (a GPU runtime's, or a fake's): the runner keeps host images of
// its buffers, as always, and runs each call on device twins of them.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* device) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* device, size_t bytes) = 0;
};

struct MatrixOptions {
  std::vector<Coll> colls = allColls();
  std::vector<weftDataType_t> types;  // empty: all ten
  std::vector<weftRedOp_t> ops;       // empty: all five
  std::vector<size_t> counts;         // empty: sizeClasses(nranks)
  bool nonBlocking = false;           // issue with a request, then weftWait
  DeviceMemory* device = nullptr;     // run the calls on device buffers
  // Random mode: called after each call with the number of calls made so far (soak checks).
  std::function<void(int)> afterCall;
};

// 0, 1, odd, not divisible by nranks, and a large count that spans several pipeline slices.
std::vector<size_t> sizeClasses(int nranks);

struct MatrixResult {
  int calls = 0;
  int failures = 0;
  std::vector<std::string> messages;  // the first few failures, described
};

// Runs the matrix on comm (collectively: every rank must call it with equal options).
MatrixResult runMatrix(weftComm_t comm, const MatrixOptions& options);
// Random calls, the same on every rank (same seed): for soak and fault-injection runs.
MatrixResult runRandomCalls(weftComm_t comm, const MatrixOptions& options, uint64_t seed,
                            int iterations, size_t maxCount);

}  // namespace weft::test
