// Command-line options of the *_perf tools: nccl-tests' flags, defaults and spellings.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::perf {

struct Options {
  int nThreads = 1;                    // -t: ranks per process, one thread each
  int nGpus = 1;                       // -g: accepted for compatibility, must be 1
  size_t minBytes = 32 * 1024 * 1024;  // -b
  size_t maxBytes = 32 * 1024 * 1024;  // -e
  size_t stepBytes = 1 * 1024 * 1024;  // -i: additive step, used when stepFactor <= 1
  size_t stepFactor = 1;               // -f: multiplicative step when > 1
  int iters = 20;                      // -n: timed iterations per size
  int warmupIters = 1;                 // -w: untimed iterations per size before the sweep
  int aggIters = 1;                    // -m: operations per iteration (grouped when async)
  int runCycles = 1;                   // -N: sweeps; 0 = forever
  int check = 1;                       // -c: correctness iterations per size; 0 = off
  int blocking = 0;                    // -z: 0 async, 1 blocking + barrier, 2 blocking, 3 see docs
  int timeoutSec = 0;                  // -T: 0 = no timeout
  int average = 1;                     // -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks
  int reportCpuTime = 0;               // -C: report issue time instead of completion time
  std::vector<weftDataType_t> types{weftFloat32};  // -d
  std::vector<weftRedOp_t> ops{weftSum};           // -o
  int root = 0;                                    // -r: a rank, or -1 for every rank ("all")
  int parallelInit = 0;                            // -p: accepted; ranks always init in parallel
  int deviceCtaCount = 16;   // -V: accepted; nccl-tests reads it only for -D, which is refused
  int memoryReport = 0;      // -M 0|1: the "memory usage" line after the summary
  std::string jsonPath;      // -J: nccl-tests' JSON results file; empty = none
  int reportTimestamps = 0;  // -S 0|1: a wall-clock timestamp at the end of each row
  int unalign = 0;           // -u: buffers start this many elements past their alignment
  int perIterTiming = 0;     // -I 0|1: per-iteration times and their summary columns
  int perIterSkip = 0;       // -K: leading iterations left out of the -I summary
  // -R: 0 plain buffers; 1 send/recv from weftMemAlloc, weftCommRegister'ed; 2 from weftMemAlloc,
  // registered as WEFT_WIN_COLL_SYMMETRIC windows (weftCommWindowRegister)
  int localRegister = 0;
  std::vector<std::string> commandLine;  // argv, for the JSON file's "args"
  // weft's own flags (nccl-tests always uses GPU buffers and a stream):
  // -k, --memory-kind host|device: buffers in cudaMalloc memory (env WEFT_PERF_MEMORY)
  bool deviceMemory = false;
  bool onStream = false;  // -s 0|1: the weft*OnStream forms on a stream of the rank's own
};

// Outcome of parsing: run, exit successfully (-h), or exit with an error (already printed).
enum class ParseResult { kRun, kExitSuccess, kExitFailure };

ParseResult parseOptions(int argc, char** argv, const char* programName, Options* options);

// "32M" -> 33554432. K, M and G are powers of 1024, optionally followed by "B" or "iB", as
// nccl-tests accepts them. Returns false for anything else (negative numbers included).
bool parseSize(const char* text, size_t* bytes);

// nccl-tests' names: "float" for weftFloat32, "half" for weftFloat16, ...
const char* typeDisplayName(weftDataType_t type);
const char* opDisplayName(weftRedOp_t op);
// Accepts every alias (int8 char uint8 int32 int uint32 int64 uint64 half float16 float float32
// double float64 bfloat16); false for unknown names.
bool parseTypeName(const std::string& name, weftDataType_t* type);
bool parseOpName(const std::string& name, weftRedOp_t* op);

// The sizes one sweep visits, as nccl-tests walks them: from min to max inclusive, multiplying by
// stepFactor when it is > 1, else adding stepBytes. A sweep starting at 0 continues at 1.
std::vector<size_t> sweepSizes(const Options& options);
// The sizes the warm-up visits: min to max, doubling.
std::vector<size_t> warmupSizes(const Options& options);

}  // namespace weft::perf
