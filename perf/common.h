// The shared driver of the *_perf tools (nccl-tests' shape): each tool is one small file that
// fills a CollTest with its hooks and hands it to runPerfTest(), which does the rest: flags,
// launch, buffers, the size sweep, timing, checking and the report.
#pragma once

#include <cstddef>
#include <cstdint>

#include "weft/weft.h"

namespace weft::perf {

// Element counts of one collective call at one size, as nccl-tests' getCollByteCount: `param` is
// the count argument of the call (and the "count" column); send/recv are the buffer lengths; in
// place, the send (recv) buffer starts at recv + sendInplaceOffset * rank
// (recv + recvInplaceOffset * rank).
struct CollCounts {
  size_t send = 0;
  size_t recv = 0;
  size_t param = 0;
  size_t sendInplaceOffset = 0;
  size_t recvInplaceOffset = 0;
};

// How algbw and busbw derive from the time (nccl-tests' doc/PERFORMANCE.md).
enum class BwModel {
  kAllReduce,  // algbw = S / t, busbw = algbw * 2(n-1)/n
  kPerRank,    // algbw = S * n / t (S = count * type size), busbw = algbw * (n-1)/n
  kOne,        // algbw = S / t, busbw = algbw
};

// One call: pointers are final (shift and in-place offsets applied).
struct RunArgs {
  const void* send;
  void* recv;
  size_t count;  // CollCounts::param
  weftDataType_t type;
  weftRedOp_t op;
  int root;  // -1 for collectives without one
  int rank;
  int nranks;
  weftComm_t comm;
  // nullptr: block until done. Otherwise room for kMaxRequestsPerCall handles, all NULL on entry;
  // the driver waits for every one the call fills in.
  weftRequest_t* requests;
  // -s 1: a cudaStream_t; the tool makes the weft*OnStream call on it (requests is then nullptr).
  // Only set in a build with CUDA (WEFT_HAVE_CUDA).
  void* stream;
};
inline constexpr int kMaxRequestsPerCall = 2;

// Preparing one checked call. The driver has already poisoned the receive buffer.
struct InitArgs {
  void* input;          // where this rank's counts.send input elements go
  void* expected;       // counts.recv elements to fill with the values `checked` must hold
  const void* checked;  // the region that will be compared (as it is before the call)
  CollCounts counts;
  weftDataType_t type;
  weftRedOp_t op;
  int root;
  int rank;
  int nranks;
  uint64_t seed;  // differs for every checked call
};

struct CollTest {
  const char* name;    // for messages: "AllReduce"
  bool usesOp;         // reductions: -o applies, the redop column shows it
  bool usesRoot;       // rooted collectives: -r applies
  bool checksInPlace;  // false where the in-place result is undefined (prints N/A)
  BwModel bw;
  CollCounts (*getCounts)(size_t count, size_t eltSize, int nranks);
  void (*initData)(const InitArgs& args);
  weftResult_t (*run)(const RunArgs& args);
};

// Rounds count / nranks down so that every rank's block is a multiple of 16 bytes, as nccl-tests
// does for the collectives whose "size" is the total of all ranks' blocks.
size_t perRankCount(size_t count, size_t eltSize, int nranks);

void computeBandwidth(BwModel model, size_t paramCount, size_t eltSize, double seconds, int nranks,
                      double* algBw, double* busBw);

// main() of every tool. Returns the process exit status.
int runPerfTest(int argc, char** argv, const CollTest& test);

}  // namespace weft::perf
