// Dispatch for the reduction kernels: the tables of all variants are built on first use, and the
// best variant this CPU supports is chosen then, once per process. kernelFor() is a table lookup.
#include "reduce/reduce.h"

#include "reduce/kernels.h"

namespace weft::reduce {
namespace detail {
namespace {

bool cpuSupports(Isa isa) {
  // Needed when we run before libgcc's own constructor has filled in the CPU model, e.g. from
  // another shared library's static initialiser.
  __builtin_cpu_init();
  // libgcc reports AVX and AVX-512 features only when the OS also saves their registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  switch (isa) {
    case Isa::kBaseline:
      return true;
    case Isa::kAvx2:
      return avx2;
    case Isa::kAvx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
}

struct Dispatch {
  KernelTable tables[kNumIsas];
  bool supported[kNumIsas] = {};
  Isa selected = Isa::kBaseline;

  Dispatch() {
    for (int i = 0; i < kNumIsas; ++i) {
      const Isa isa = Isa(i);
      addIntKernels(isa, tables[i]);
      addFloatKernels(isa, tables[i]);
      addHalfKernels(isa, tables[i]);
      supported[i] = cpuSupports(isa);
      if (supported[i]) selected = isa;  // the variants are ordered by capability
    }
  }
};

const Dispatch& dispatch() {
  static const Dispatch instance;
  return instance;
}

bool isIsa(Isa isa) {
  return int(isa) >= 0 && int(isa) < kNumIsas;
}

}  // namespace

bool isaSupported(Isa isa) {
  return isIsa(isa) && dispatch().supported[int(isa)];
}

Isa selectedIsa() {
  return dispatch().selected;
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return "baseline";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

ReduceFn kernelForIsa(Isa isa, weftDataType_t type, weftRedOp_t op) {
  if (!isaSupported(isa) || !isValidType(type) || !isValidOp(op)) return nullptr;
  return dispatch().tables[int(isa)].reduce[type][op];
}

AvgFn avgKernelForIsa(Isa isa, weftDataType_t type) {
  if (!isaSupported(isa) || !isValidType(type)) return nullptr;
  return dispatch().tables[int(isa)].avg[type];
}

}  // namespace detail

ReduceFn kernelFor(weftDataType_t type, weftRedOp_t op) {
  return detail::kernelForIsa(detail::selectedIsa(), type, op);
}

void finishAvg(void* buf, size_t count, weftDataType_t type, int nranks) {
  // With one rank the sum already is the average; fewer has no meaning and must not divide.
  if (nranks <= 1 || count == 0) return;
  if (detail::AvgFn avg = detail::avgKernelForIsa(detail::selectedIsa(), type)) {
    avg(buf, count, nranks);
  }
}

size_t typeSize(weftDataType_t type) {
  switch (type) {
    case weftInt8:
    case weftUint8:
      return 1;
    case weftFloat16:
    case weftBfloat16:
      return 2;
    case weftInt32:
    case weftUint32:
    case weftFloat32:
      return 4;
    case weftInt64:
    case weftUint64:
    case weftFloat64:
      return 8;
    case weftNumTypes:
      break;
  }
  return 0;
}

const char* typeName(weftDataType_t type) {
  static constexpr const char* kNames[weftNumTypes] = {"int8",    "uint8",   "int32",   "uint32",
                                                       "int64",   "uint64",  "float16", "float32",
                                                       "float64", "bfloat16"};
  return isValidType(type) ? kNames[type] : "invalid";
}

const char* opName(weftRedOp_t op) {
  static constexpr const char* kNames[weftNumOps] = {"sum", "prod", "max", "min", "avg"};
  return isValidOp(op) ? kNames[op] : "invalid";
}

bool isValidType(int type) {
  return type >= 0 && type < weftNumTypes;
}

bool isValidOp(int op) {
  return op >= 0 && op < weftNumOps;
}

const char* isaName() {
  return detail::isaName(detail::selectedIsa());
}

}  // namespace weft::reduce
