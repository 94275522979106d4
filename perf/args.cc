#include "args.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "device_memory.h"
#include "usage.h"

namespace weft::perf {
namespace {

struct NamedType {
  const char* name;
  weftDataType_t type;
};

// Display names first (the order of "-d all"), then the aliases nccl-tests users type.
constexpr NamedType kTypeNames[] = {
    {"int8", weftInt8},         {"uint8", weftUint8},     {"int32", weftInt32},
    {"uint32", weftUint32},     {"int64", weftInt64},     {"uint64", weftUint64},
    {"half", weftFloat16},      {"float", weftFloat32},   {"double", weftFloat64},
    {"bfloat16", weftBfloat16}, {"char", weftInt8},       {"int", weftInt32},
    {"float16", weftFloat16},   {"float32", weftFloat32}, {"float64", weftFloat64},
};
constexpr int kNumDisplayTypes = 10;

constexpr const char* kOpNames[weftNumOps] = {"sum", "prod", "max", "min", "avg"};

bool parseInt(const char* text, long minValue, long maxValue, const char* flag, long* out) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || value < minValue || value > maxValue) {
    std::fprintf(stderr, "invalid value '%s' for %s (expected an integer in %ld..%ld)\n", text,
                 flag, minValue, maxValue);
    return false;
  }
  *out = value;
  return true;
}

template <class T>
bool parseIntInto(const char* text, long minValue, long maxValue, const char* flag, T* out) {
  long value = 0;
  if (!parseInt(text, minValue, maxValue, flag, &value)) return false;
  *out = T(value);
  return true;
}

bool parseTypes(const char* text, std::vector<weftDataType_t>* types) {
  types->clear();
  if (std::strcmp(text, "all") == 0) {
    for (int i = 0; i < kNumDisplayTypes; ++i) types->push_back(kTypeNames[i].type);
    return true;
  }
  weftDataType_t type;
  if (!parseTypeName(text, &type)) {
    std::fprintf(stderr,
                 "invalid type '%s': expected one of int8 char uint8 int32 int uint32 "
                 "int64 uint64 half float16 float float32 double float64 bfloat16 all\n",
                 text);
    return false;
  }
  types->push_back(type);
  return true;
}

bool parseOps(const char* text, std::vector<weftRedOp_t>* ops) {
  ops->clear();
  if (std::strcmp(text, "all") == 0) {
    for (int op = 0; op < weftNumOps; ++op) ops->push_back(weftRedOp_t(op));
    return true;
  }
  weftRedOp_t op;
  if (!parseOpName(text, &op)) {
    if (std::strcmp(text, "mulsum") == 0) {
      std::fprintf(stderr, "invalid op 'mulsum': weft has no PreMulSum operation\n");
    } else {
      std::fprintf(stderr, "invalid op '%s': expected one of sum prod max min avg all\n", text);
    }
    return false;
  }
  ops->push_back(op);
  return true;
}

bool parseMemory(const char* text, bool* deviceMemory) {
  if (std::strcmp(text, "host") == 0 || std::strcmp(text, "device") == 0) {
    *deviceMemory = text[0] == 'd';
    return true;
  }
  std::fprintf(stderr, "invalid value '%s' for -k/--memory-kind (expected host or device)\n", text);
  return false;
}

// -M is nccl-tests' memory report; weft's -M used to name the memory kind, so say where it went.
bool parseMemoryReport(const char* text, int* memoryReport) {
  if (std::strcmp(text, "host") == 0 || std::strcmp(text, "device") == 0) {
    std::fprintf(stderr,
                 "-M %s: -M (--memory) is nccl-tests' memory report (0 or 1); the memory kind "
                 "is -k/--memory-kind %s\n",
                 text, text);
    return false;
  }
  return parseIntInto(text, 0, 1, "-M", memoryReport);
}

// nccl-tests flags for features weft lacks: their "off" value is accepted, as it means the same
// thing here; any other value is an error that says why, never a silent difference.
bool acceptOnlyOff(const char* text, long off, const char* flag, const char* why) {
  long value = 0;
  if (!parseInt(text, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), flag,
                &value)) {
    return false;
  }
  if (value == off) return true;
  std::fprintf(stderr, "%s %s is not supported: %s\n", flag, text, why);
  return false;
}

bool parseSizeFlag(const char* text, const char* name, size_t* out) {
  if (parseSize(text, out)) return true;
  std::fprintf(stderr, "invalid size specified for '%s': '%s'\n", name, text);
  return false;
}

const option kLongOptions[] = {
    {"nthreads", required_argument, nullptr, 't'},
    {"ngpus", required_argument, nullptr, 'g'},
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},
    {"agg_iters", required_argument, nullptr, 'm'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"run_cycles", required_argument, nullptr, 'N'},
    {"parallel_init", required_argument, nullptr, 'p'},
    {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},
    {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},
    {"blocking", required_argument, nullptr, 'z'},
    {"stream_null", required_argument, nullptr, 'y'},
    {"timeout", required_argument, nullptr, 'T'},
    {"cudagraph", required_argument, nullptr, 'G'},
    {"report_cputime", required_argument, nullptr, 'C'},
    {"average", required_argument, nullptr, 'a'},
    {"report_timestamps", required_argument, nullptr, 'S'},
    {"output_file", required_argument, nullptr, 'J'},
    {"local_register", required_argument, nullptr, 'R'},
    {"cta_policy", required_argument, nullptr, 'x'},
    {"device_implementation", required_argument, nullptr, 'D'},
    {"device_cta_count", required_argument, nullptr, 'V'},
    {"memory", required_argument, nullptr, 'M'},
    {"unalign", required_argument, nullptr, 'u'},
    {"per_iter_timing", required_argument, nullptr, 'I'},
    {"per_iter_skip", required_argument, nullptr, 'K'},
    {"memory-kind", required_argument, nullptr, 'k'},
    {"stream", required_argument, nullptr, 's'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

// Applies one flag; false when its value is invalid (the message is already printed).
bool applyFlag(int flag, const char* value, Options* o) {
  constexpr long kIntMax = std::numeric_limits<int>::max();
  long ignored = 0;
  switch (flag) {
    case 't':
      return parseIntInto(value, 1, 1024, "-t", &o->nThreads);
    case 'g':
      return parseIntInto(value, 1, kIntMax, "-g", &o->nGpus);
    case 'b':
      return parseSizeFlag(value, "minbytes", &o->minBytes);
    case 'e':
      return parseSizeFlag(value, "maxbytes", &o->maxBytes);
    case 'i':
      return parseSizeFlag(value, "stepbytes", &o->stepBytes);
    case 'f':
      return parseIntInto(value, 0, kIntMax, "-f", &o->stepFactor);
    case 'n':
      return parseIntInto(value, 1, kIntMax, "-n", &o->iters);
    case 'm':
      return parseIntInto(value, 1, kIntMax, "-m", &o->aggIters);
    case 'w':
      return parseIntInto(value, 0, kIntMax, "-w", &o->warmupIters);
    case 'N':
      return parseIntInto(value, 0, kIntMax, "-N", &o->runCycles);
    case 'p':
      return parseIntInto(value, 0, 1, "-p", &o->parallelInit);
    case 'c':
      return parseIntInto(value, 0, kIntMax, "-c", &o->check);
    case 'o':
      return parseOps(value, &o->ops);
    case 'd':
      return parseTypes(value, &o->types);
    case 'r':
      if (std::strcmp(value, "all") == 0) {
        o->root = -1;
        return true;
      }
      return parseIntInto(value, -1, kIntMax, "-r", &o->root);
    case 'z':
      return parseIntInto(value, 0, 3, "-z", &o->blocking);
    case 'y':
      return parseInt(value, 0, 1, "-y", &ignored);
    case 'T':
      return parseIntInto(value, 0, kIntMax, "-T", &o->timeoutSec);
    case 'G':
      return acceptOnlyOff(value, 0, "-G (--cudagraph)",
                           "weft calls are not captured into CUDA graphs");
    case 'C':
      return parseIntInto(value, 0, 1, "-C", &o->reportCpuTime);
    case 'a':
      return parseIntInto(value, 0, 3, "-a", &o->average);
    case 'M':
      return parseMemoryReport(value, &o->memoryReport);
    case 'k':
      return parseMemory(value, &o->deviceMemory);
    case 'J':
      if (*value == '\0') {
        std::fprintf(stderr, "-J (--output_file) needs a file name\n");
        return false;
      }
      o->jsonPath = value;
      return true;
    case 'S':
      return parseIntInto(value, 0, 1, "-S", &o->reportTimestamps);
    case 'u':
      // nccl-tests pads each buffer by 8 bytes per element of misalignment; a bound keeps that
      // padding from overflowing the allocation size.
      return parseIntInto(value, 0, 1 << 20, "-u", &o->unalign);
    case 'I':
      return parseIntInto(value, 0, 1, "-I", &o->perIterTiming);
    case 'K':
      return parseIntInto(value, 0, kIntMax, "-K", &o->perIterSkip);
    case 'R':
      return parseIntInto(value, 0, 2, "-R", &o->localRegister);
    case 'x':
      std::fprintf(stderr,
                   "-x (--cta_policy) %s is not supported: weft runs no CUDA kernels, "
                   "so it has no CTA policy to set\n",
                   value);
      return false;
    case 'D':
      return acceptOnlyOff(value, 0, "-D (--device_implementation)",
                           "weft has no device-side implementations of the collectives");
    case 'V':
      // Only -D implementations read it, in nccl-tests too: with -D 0 it has no effect there
      // either.
      return parseIntInto(value, 1, 1 << 16, "-V", &o->deviceCtaCount);
    case 's':
      return parseIntInto(value, 0, 1, "-s", &o->onStream);
    default:
      return false;
  }
}

}  // namespace

bool parseSize(const char* text, size_t* bytes) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (errno != 0 || end == text || !std::isfinite(value) || value < 0) return false;
  while (*end == ' ') ++end;
  double units = 1;
  switch (*end) {
    case 'K':
    case 'k':
      units = 1024.0;
      ++end;
      break;
    case 'M':
    case 'm':
      units = 1024.0 * 1024;
      ++end;
      break;
    case 'G':
    case 'g':
      units = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default:
      break;
  }
  if (units > 1 && (std::strcmp(end, "B") == 0 || std::strcmp(end, "iB") == 0))
    end += *end == 'B' ? 1 : 2;
  const double total = value * units;
  if (*end != '\0' || total >= 18446744073709551616.0) return false;  // beyond size_t
  *bytes = size_t(total);
  return true;
}

const char* typeDisplayName(weftDataType_t type) {
  for (int i = 0; i < kNumDisplayTypes; ++i) {
    if (kTypeNames[i].type == type) return kTypeNames[i].name;
  }
  return "unknown";
}

const char* opDisplayName(weftRedOp_t op) {
  return op >= 0 && op < weftNumOps ? kOpNames[op] : "unknown";
}

bool parseTypeName(const std::string& name, weftDataType_t* type) {
  for (const NamedType& entry : kTypeNames) {
    if (name == entry.name) {
      *type = entry.type;
      return true;
    }
  }
  return false;
}

bool parseOpName(const std::string& name, weftRedOp_t* op) {
  for (int i = 0; i < weftNumOps; ++i) {
    if (name == kOpNames[i]) {
      *op = weftRedOp_t(i);
      return true;
    }
  }
  return false;
}

std::vector<size_t> sweepSizes(const Options& o) {
  std::vector<size_t> sizes;
  const bool geometric = o.stepFactor > 1;
  for (size_t size = o.minBytes; size <= o.maxBytes;) {
    sizes.push_back(size);
    size_t next = geometric ? (size == 0 ? 1 : size * o.stepFactor) : size + o.stepBytes;
    if (geometric ? (size != 0 && next / o.stepFactor != size) : next < size) break;  // overflow
    size = next;
  }
  return sizes;
}

std::vector<size_t> warmupSizes(const Options& o) {
  Options doubling = o;
  doubling.stepFactor = 2;
  return sweepSizes(doubling);
}

ParseResult parseOptions(int argc, char** argv, const char* programName, Options* options) {
  optind = 1;
  options->commandLine.assign(argv, argv + argc);
  // The environment sets the default; the flag overrides it.
  if (const char* memory = std::getenv("WEFT_PERF_MEMORY"); memory && *memory) {
    if (!parseMemory(memory, &options->deviceMemory)) {
      std::fprintf(stderr, "(from WEFT_PERF_MEMORY)\n");
      return ParseResult::kExitFailure;
    }
  }
  while (true) {
    const int flag = getopt_long(
        argc, argv,
        "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:k:s:", kLongOptions,
        nullptr);
    if (flag == -1) break;
    if (flag == 'h') {
      printUsage(programName);
      return ParseResult::kExitSuccess;
    }
    if (flag == '?' || !applyFlag(flag, optarg, options)) {
      if (flag == '?') printUsage(programName);
      return ParseResult::kExitFailure;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
    return ParseResult::kExitFailure;
  }
  if (options->nGpus != 1) {
    std::fprintf(stderr,
                 "-g %d: weft runs one rank per CPU thread and has no GPUs to spread a thread "
                 "over, so -g must be 1. Use -t <threads> and more processes for more ranks.\n",
                 options->nGpus);
    return ParseResult::kExitFailure;
  }
  // Before the check that -k device can work at all, so that this answer is the same in every
  // build.
  if (options->localRegister != 0 && options->deviceMemory) {
    std::fprintf(stderr,
                 "-R %d (--local_register) with -k device (--memory-kind, WEFT_PERF_MEMORY): "
                 "registered buffers come from weftMemAlloc, which is host memory; use -k host "
                 "or -R 0\n",
                 options->localRegister);
    return ParseResult::kExitFailure;
  }
  if (options->deviceMemory && !deviceMemoryBuilt()) {
    std::fprintf(stderr,
                 "-k device (--memory-kind, WEFT_PERF_MEMORY): these tools were built without "
                 "CUDA; "
                 "configure weft with -DWEFT_CUDA=ON on a machine with the CUDA toolkit\n");
    return ParseResult::kExitFailure;
  }
  if (options->onStream && !options->deviceMemory) {
    std::fprintf(stderr, "-s 1 (--stream): stream-ordered calls need -k device\n");
    return ParseResult::kExitFailure;
  }
  // nccl-tests warns and turns -K off in these cases; weft refuses flags it would not honour.
  if (options->perIterSkip >= options->iters) {
    std::fprintf(stderr, "per-iteration skip (-K) must be between 0 and %d\n", options->iters - 1);
    return ParseResult::kExitFailure;
  }
  if (options->perIterSkip > 0 && !options->perIterTiming) {
    std::fprintf(stderr, "per-iteration skip (-K) requires per-iteration timing (-I 1)\n");
    return ParseResult::kExitFailure;
  }
  if (options->perIterTiming && options->onStream && options->blocking == 0) {
    std::fprintf(stderr,
                 "-I 1 with -s 1 -z 0 is not supported: stream-ordered calls issued without "
                 "waiting would need CUDA events to time each iteration; use -z 2 or -s 0\n");
    return ParseResult::kExitFailure;
  }
  if (options->minBytes > options->maxBytes) {
    std::fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu\n",
                 options->minBytes, options->maxBytes);
    return ParseResult::kExitFailure;
  }
  if (options->stepFactor <= 1 && options->stepBytes == 0) {
    std::fprintf(stderr, "invalid step: -i 0 without -f > 1 would never reach maxbytes\n");
    return ParseResult::kExitFailure;
  }
  return ParseResult::kRun;
}

}  // namespace weft::perf
